import ArgumentParser
import Contacts
import Foundation
import Incoming
import OpenPGP
import Store

/// `mailsec contacts`: the addresses one writes to, with their key status.
struct ContactsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "List contacts (or suggest addresses for a prefix) with their key status; learn from received mail.",
        discussion: """
            The contacts live in the store ($XDG_DATA_HOME/mailsec): every address a mail was \
            sent to (send, sendmail, compose), every user ID of the keyring with a usable \
            encryption key, and the From, To and Cc of mail given to 'contacts learn'. \
            'mailsec contacts [PREFIX]' is 'mailsec contacts list [PREFIX]'.
            """,
        subcommands: [ContactsList.self, ContactsLearn.self],
        defaultSubcommand: ContactsList.self
    )
}

enum ContactsJSON: JSONContract {
    static let summary = "one object per address, best first: {address, name, key: usable|missing|unusable|unknown, "
        + "fingerprint, reason, sent, seen, lastUsed, frecency, offeredFor (an address of the same person, or null)}."
}

struct ContactsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List contacts, best first, or those that a prefix suggests.",
        discussion: """
            First the keyring is listed once (one gpg process for all contacts) and every \
            contact's key status is set from it. With PREFIX (matched case-, accent- and \
            width-insensitively against the start of the address or of a word of the name), \
            the addresses are suggested as a compose screen would: people ranked by frecency \
            (every mail sent counts 1, every learned mail 1/4, each halving every 30 days), \
            and of one person (addresses on one key, or written to with the same name) the \
            address with a usable key first, offered even when only another address matched. \
            One line per address: 'letter|postcard ADDRESS NAME (fingerprint or why not)'.

            \(ExitStatus.section([
                (.success, "the list was printed (also when it is empty)"),
                (.usage, "usage error"),
                (.temporary, "the store or GnuPG unusable, or anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "GnuPG") var global: GlobalOptions
    @OptionGroup(title: "Output") var output: JSONOutput<ContactsJSON>

    @Flag(help: "Only those who can get a letter (a usable key).")
    var letters = false

    @Flag(help: "Do not list the keyring first: show the key status as last stored.")
    var noRefresh = false

    @Option(help: ArgumentHelp("At most this many addresses.", valueName: "n"))
    var limit: Int?

    @Option(help: ArgumentHelp("Leave these addresses out, as already in the mail (repeatable).", valueName: "address"))
    var excluding: [String] = []

    @Argument(help: ArgumentHelp("The beginning of an address or of a name.", valueName: "prefix"),
              completion: AddressCompletion.kind)
    var prefix: String?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let book = try openContacts()
        if !noRefresh { try book.refreshKeys(gnupg: global.gnupg) }
        let now = Date()
        var entries: [(Contact, String?)]
        if let prefix {
            var offered = try book.suggest(prefix: prefix, excluding: excluding, limit: .max, now: now)
            if letters { offered = offered.filter(\.contact.key.canGetLetter) }
            entries = offered.map { suggestion in
                let partner = suggestion.matched ? nil
                    : offered.first { $0.person == suggestion.person && $0.matched }?.contact.address
                return (suggestion.contact, partner)
            }
        } else {
            let excluded = Set(excluding.map { $0.lowercased() })
            entries = try book.contacts(now: now).filter { !excluded.contains($0.address) && (!letters || $0.key.canGetLetter) }
                .map { ($0, nil) }
        }
        if let limit { entries = Array(entries.prefix(limit)) }
        if output.json {
            try writeOutput(encodeJSON(entries.map { ContactReport($0.0, offeredFor: $0.1, now: now) }), to: nil)
        } else {
            for (contact, partner) in entries { print(Self.line(contact, offeredFor: partner)) }
        }
    }

    static func line(_ contact: Contact, offeredFor partner: String?) -> String {
        let name = contact.name.map { " " + DisplayNames.printable($0) } ?? ""
        let key: String = switch contact.key {
        case .usable(let fingerprint): "letter   \(contact.address)\(name) (\(fingerprint))"
        case .missing: "postcard \(contact.address)\(name) (no key)"
        case .unusable(let reason): "postcard \(contact.address)\(name) (\(reason))"
        case .unknown: "postcard \(contact.address)\(name) (key not looked up)"
        }
        return key + (partner.map { " [same person as \($0)]" } ?? "")
    }
}

/// One contact in `contacts --json`.
struct ContactReport: Encodable {
    let address: String
    let name: String?
    let key: String
    let fingerprint: String?
    let reason: String?
    let sent: Int
    let seen: Int
    let lastUsed: String?
    let frecency: Double
    let offeredFor: String?

    init(_ contact: Contact, offeredFor: String?, now: Date) {
        address = contact.address
        name = contact.name
        key = contact.key.code
        if case .usable(let fingerprint) = contact.key { self.fingerprint = fingerprint } else { fingerprint = nil }
        switch contact.key {
        case .missing: reason = "no key"
        case .unusable(let why): reason = why
        default: reason = nil
        }
        sent = contact.sentCount
        seen = contact.seenCount
        lastUsed = contact.lastUsed.map { ISO8601DateFormatter().string(from: $0) }
        frecency = (contact.frecency(at: now) * 1000).rounded() / 1000
        self.offeredFor = offeredFor
    }

    enum CodingKeys: String, CodingKey { case address, name, key, fingerprint, reason, sent, seen, lastUsed, frecency, offeredFor }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(address, forKey: .address)
        try container.encode(name, forKey: .name)
        try container.encode(key, forKey: .key)
        try container.encode(fingerprint, forKey: .fingerprint)
        try container.encode(reason, forKey: .reason)
        try container.encode(sent, forKey: .sent)
        try container.encode(seen, forKey: .seen)
        try container.encode(lastUsed, forKey: .lastUsed)
        try container.encode(frecency, forKey: .frecency)
        try container.encode(offeredFor, forKey: .offeredFor)
    }
}

struct ContactsLearn: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "learn",
        abstract: "Learn contacts from received mail: a mail file or a Maildir.",
        discussion: """
            Notes every From, To and Cc address (by the mail's Date, never later than now) with \
            its name; a name that shows another address or holds control or invisible \
            characters is not kept. Autocrypt headers are imported by exactly the rules of \
            'autocrypt import' (--no-autocrypt: not at all; --decrypt also opens encrypted mail \
            for its gossip). Mail that cannot be read, addresses that are not plain and names \
            not kept are skipped and counted. One line: 'learned N mails: N addresses, N keys \
            imported; skipped N mails, N addresses, N names'. The key status is then refreshed \
            (one key listing).

            \(ExitStatus.section([
                (.success, "learned (also when some mails or addresses were skipped)"),
                (.usage, "usage error"),
                (.noInput, "the file or folder cannot be read, or a folder is not a Maildir"),
                (.temporary, "the store or GnuPG unusable, or anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "GnuPG") var global: GlobalOptions

    @Flag(help: "Do not import keys from Autocrypt headers.")
    var noAutocrypt = false

    @Flag(help: "Open encrypted mail for its Autocrypt-Gossip headers (with the keyring's secret keys).")
    var decrypt = false

    @Flag(help: ArgumentHelp("Print the counts as JSON: {mails, addresses, skippedMails, skippedAddresses, "
                             + "tooManyAddresses, droppedNames, keysImported, keysRefused}."))
    var json = false

    @Argument(help: ArgumentHelp("A mail file or a Maildir folder.", valueName: "path"), completion: .file())
    var path: String

    func run() throws {
        let book = try openContacts()
        let report: LearnReport
        do {
            report = try book.learn(path: path, autocrypt: noAutocrypt ? nil : AutocryptImporter(gnupg: global.gnupg),
                                    decrypting: decrypt)
        } catch let error as LearnInputError {
            throw CommandFailure(error.description, status: .noInput)
        }
        try book.refreshKeys(gnupg: global.gnupg)
        if json {
            try writeOutput(encodeJSON(report), to: nil)
        } else {
            print("learned \(report.mails) mail\(report.mails == 1 ? "" : "s"): \(report.addresses) addresses, "
                  + "\(report.keysImported) keys imported; skipped \(report.skippedMails) mails, "
                  + "\(report.skippedAddresses + report.tooManyAddresses) addresses, \(report.droppedNames) names")
        }
    }
}

/// The contacts in the user's store; a store that cannot be opened is temporary (75).
func openContacts() throws -> ContactBook {
    do { return ContactBook(store: try LocalStore()) } catch {
        throw CommandFailure(error.description, status: .temporary)
    }
}
