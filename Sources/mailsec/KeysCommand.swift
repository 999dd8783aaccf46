import ArgumentParser
import Filter
import Foundation
import OpenPGP
import Pipeline
import Settings
import Store

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Look up, import and publish OpenPGP keys.",
        discussion: "'mailsec keys COMMAND --help' describes each command and its exit status.",
        subcommands: [Lookup.self, Import.self, Forget.self, Accept.self, Publish.self]
    )
}

extension KeysCommand {
    struct Lookup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the key each address would be encrypted to, or why it has none.",
            discussion: """
                All addresses are looked up in one key listing. An address matches a user ID only \
                exactly (case aside). Of several usable keys the newest you imported is chosen; a key \
                learned from mail (contacts learn, autocrypt import) only where you imported none. The exit status \
                is 0 when the look-up ran, whether or not every address has a usable key.

                \(ExitStatus.section([
                    (.success, "the look-up ran"),
                    (.usage, "usage error, or not a plain address"),
                    (.temporary, "GnuPG or its agent unusable, or anything unexpected: try again"),
                ]))
                """
        )

        @OptionGroup(title: "GnuPG") var global: GlobalOptions

        @OptionGroup(title: "Output") var output: JSONOutput<LookupJSON>

        @Option(help: minValidityHelp)
        var minValidity: Validity?

        @Argument(help: ArgumentHelp("Mail addresses to look up.", valueName: "address"))
        var addresses: [String]

        func validate() throws {
            if addresses.isEmpty { throw ValidationError("Give at least one address.") }
        }

        func run() throws {
            let results = try global.gnupg.lookup(addresses, requirements: KeyRequirements(minimumValidity: minValidity))
            // The key a letter would go to: keys learned from mail kept apart, as send keeps them.
            let learned = FileManager.default.fileExists(atPath: LocalStore.defaultFolder() + "/mailsec.sqlite")
                ? try openContacts().continuity.learned(addresses) : [:]
            let reports = results.map { LookupReport($0, learned: learned[$0.address.lowercased()] ?? []) }
            if output.json {
                try writeOutput(encodeJSON(reports), to: nil)
            } else {
                for report in reports { print(report.line) }
            }
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import keys (armored or binary) from files; - reads standard input.",
            discussion: """
                Every file is read before any is imported. One line per file: 'FILE: N considered, \
                N imported, N unchanged, N secret'.

                \(ExitStatus.section([
                    (.success, "every file's keys were imported (or were there already)"),
                    (.usage, "usage error"),
                    (.dataError, "a file holds no key, or none of its keys could be imported (named in the line)"),
                    (.noInput, "a file cannot be read"),
                    (.temporary, "GnuPG or its agent unusable, or anything unexpected: try again"),
                ]))
                """)

        @OptionGroup(title: "GnuPG") var global: GlobalOptions

        @Argument(help: ArgumentHelp("Key files.", valueName: "file"))
        var files: [String]

        func validate() throws {
            if files.isEmpty { throw ValidationError("Give at least one key file.") }
        }

        func run() throws {
            let inputs = try files.map { ($0, try readInput($0, what: "keys")) }  // all readable before any import
            for (file, bytes) in inputs {
                let name = file == "-" ? "standard input" : file
                let summary: ImportSummary
                do { summary = try global.gnupg.importKeys(bytes) } catch let error as GPGMEError where !error.isTemporary {
                    switch error.code {
                    case .noData: throw CommandFailure("\(name) holds no key", status: .dataError)
                    case .invalidValue: throw CommandFailure("\(name): none of its keys could be imported", status: .dataError)
                    default: throw error
                    }
                }
                print("\(name): \(summary.considered) considered, \(summary.imported) imported, "
                      + "\(summary.unchanged) unchanged, \(summary.secretRead) secret")
                // Imported on purpose: a key learned from mail before is the person's own from now on.
                if FileManager.default.fileExists(atPath: LocalStore.defaultFolder() + "/mailsec.sqlite") {
                    try openContacts().continuity.forgetLearned(fingerprints: summary.fingerprints)
                }
            }
        }
    }
}

/// What `keys lookup` reports for one address.
struct LookupReport: Encodable {
    struct KeyReport: Encodable {
        let fingerprint: String
        let algorithms: [String]
        let created: Date?
        let expires: Date?
        let userIDs: [String]
        let verdict: String
        let reason: String?

        init(_ candidate: KeyCandidate) {
            let key = candidate.key
            fingerprint = key.fingerprint
            algorithms = key.subkeys.map(\.algorithm)
            created = key.created
            expires = key.expires
            userIDs = key.userIDs.map(\.uid)
            switch candidate.verdict {
            case .usable: verdict = "usable"; reason = nil
            case .unusable(let problem): verdict = problem.code; reason = problem.description
            }
        }
    }

    let address: String
    let chosen: String?
    let candidates: [KeyReport]

    enum CodingKeys: String, CodingKey { case address, chosen, candidates }

    /// Written by hand so that "no key chosen" is an explicit `null`.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(address, forKey: .address)
        try container.encode(chosen, forKey: .chosen)
        try container.encode(candidates, forKey: .candidates)
    }

    init(_ lookup: KeyLookup, learned: [LearnedKey]) {
        address = lookup.address
        chosen = KeyBook.choice(in: lookup, learned: learned)?.key.fingerprint
        candidates = lookup.candidates.map(KeyReport.init)
    }

    var line: String {
        if let chosen, let key = candidates.first(where: { $0.fingerprint == chosen }) {
            let created = key.created.map { ", created " + $0.formatted(.iso8601.year().month().day()) } ?? ""
            return "\(address): \(chosen) (\(key.algorithms.joined(separator: "/"))\(created))"
        }
        if candidates.isEmpty { return "\(address): no key" }
        let reasons = candidates.map { "\($0.fingerprint) \($0.reason ?? $0.verdict)" }
        return "\(address): no usable key (\(reasons.joined(separator: "; ")))"
    }
}

extension KeysCommand {
    /// Key continuity: clears a remembered key on purpose.
    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget the key an address last got a letter with (key continuity; with --sending only the CLI's).",
            discussion: """
                mailsec remembers the key each recipient last got a letter with: the CLI (encrypt, \
                send, sendmail, compose) in the store ($XDG_DATA_HOME/mailsec), the filter in a \
                folder beside its journal. Mail to a recipient whose remembered key is gone is \
                refused (CLI) or deferred (filter). Run this when the key was removed on purpose: \
                both records are cleared (the filter's when its configuration exists; with an explicit \
                --config only the filter's), and the \
                next mail goes by the keyring alone (a postcard if there is no key). One line per \
                address: 'ADDRESS: forgotten' or 'ADDRESS: no record'.

                \(ExitStatus.section([
                    (.success, "done, also when there was no record"),
                    (.usage, "usage error"),
                    (.temporary, "a record cannot be removed, the store or the configuration unusable: try again"),
                ]))
                """
        )

        @OptionGroup(title: "Records") var records: ContinuityRecordOptions

        @Argument(help: ArgumentHelp("Mail addresses to forget.", valueName: "address"), completion: AddressCompletion.kind)
        var addresses: [String]

        func validate() throws {
            if addresses.isEmpty { throw ValidationError("Give at least one address.") }
        }

        func run() throws {
            let stores = try records.stores()
            for address in addresses {
                var forgotten = false
                for record in stores where try record.forget(address) { forgotten = true }
                print("\(address): " + (forgotten ? "forgotten" : "no record"))
            }
        }
    }
}

/// Which key continuity records a `keys` command changes.
struct ContinuityRecordOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The filter's TOML configuration (default: \(FilterCommand.defaultConfig), when it exists).",
                               valueName: "file"))
    var config: String?

    @Flag(help: "Only the CLI's record (encrypt, send, sendmail, compose; in $XDG_DATA_HOME/mailsec), not the filter's.")
    var sending = false

    /// An explicit --config names the filter's record alone (its user may
    /// have no store of its own); otherwise the command line's record, and the
    /// filter's too when its configuration exists (with --sending, the command line's alone).
    func stores() throws -> [any KeyContinuityStore] {
        var records: [any KeyContinuityStore] = config != nil && !sending ? [] : [try openContacts().continuity]
        if !sending, let path = config ?? (FileManager.default.fileExists(atPath: FilterCommand.defaultConfig)
                                           ? FilterCommand.defaultConfig : nil) {
            records.append(try FilterConfig.load(path: path).continuityStore)
        }
        return records
    }
}

extension KeysCommand {
    /// Key changes: takes a recipient's new key on purpose.
    struct Accept: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept a recipient's new key (key changes; with --sending only the CLI's record).",
            discussion: """
                When the key a recipient would get differs from the one they last got a letter with, \
                plan shows both and encrypt, send, sendmail, reply and forward --send and compose \
                refuse the mail (69) until the change is accepted. Check the new key with the person \
                (its fingerprint, over a channel you trust), then run this: the key is recorded as the \
                one the recipient last got (key continuity; the same records as 'keys forget'). The key \
                must be in the keyring, usable, with a user ID for the address. One line: \
                'ADDRESS: FINGERPRINT accepted'.

                \(ExitStatus.section([
                    (.success, "the key is accepted"),
                    (.usage, "usage error, not a plain address or not a full fingerprint"),
                    (.refused, "the key is not a usable key of the address in the keyring"),
                    (.temporary, "a record cannot be written, GnuPG, the store or the configuration unusable: try again"),
                ]))
                """
        )

        @OptionGroup(title: "GnuPG") var global: GlobalOptions

        @OptionGroup(title: "Records") var records: ContinuityRecordOptions

        @Argument(help: ArgumentHelp("The recipient's mail address.", valueName: "address"), completion: AddressCompletion.kind)
        var address: String

        @Argument(help: ArgumentHelp("The new key's full fingerprint.", valueName: "fingerprint"))
        var fingerprint: String

        func validate() throws {
            guard GnuPG.isLookupAddress(address) else { throw ValidationError("not a plain mail address: \(address)") }
            guard GnuPG.isFingerprint(fingerprint) else { throw ValidationError("not a full fingerprint: \(fingerprint)") }
        }

        func run() throws {
            let wanted = fingerprint.uppercased()
            let found = try global.gnupg.lookup([address]).first
            guard found?.candidates.contains(where: { $0.key.fingerprint == wanted && $0.verdict.isUsable }) == true else {
                throw CommandFailure("\(address): \(wanted) is not a usable key of this address in the keyring", status: .refused)
            }
            for record in try records.stores() {
                try record.record(address, fingerprint: wanted)
            }
            print("\(address.lowercased()): \(wanted) accepted")
        }
    }
}
