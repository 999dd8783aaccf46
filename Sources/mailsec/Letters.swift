import ArgumentParser
import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Policy
import Store

/// Options that decide letters and postcards.
struct PolicyOptions: ParsableArguments {
    @Flag(help: "Everybody gets a postcard, even recipients with keys.")
    var enforcePostcard = false

    @Flag(help: "Everybody must get a letter; a recipient without a usable key refuses the whole mail (69).")
    var requireLetter = false

    @Option(name: .customLong("require-letter-for"),
            help: ArgumentHelp("Recipients in this domain (or *.domain: its subdomains) must get a letter (repeatable).",
                               valueName: "domain"))
    var requireLetterDomains: [String] = []

    @Flag(help: "Postcards invite their recipients to encrypted mail (text, the sender's key, Autocrypt).")
    var invite = false

    @Option(name: .customLong("extension"), help: ArgumentHelp(
        "What postcards do with marked spans: censored or partially-encrypted.", valueName: "kind"))
    var postcardExtension: PostcardExtension = .censored

    @Option(help: opaquePartsHelp)
    var opaqueParts: OpaqueParts = .withhold

    @Option(help: minValidityHelp)
    var minValidity: Validity?

    @Option(help: ArgumentHelp("Sign letters with this key: an address or a fingerprint (default: the From address).",
                               valueName: "key"))
    var signAs: String?

    @Option(help: ArgumentHelp("The envelope sender, a plain address (default: the From address).", valueName: "address"))
    var from: String?

    func validate() throws {
        if enforcePostcard && requireLetter {
            throw ValidationError("--enforce-postcard cannot be combined with --require-letter")
        }
        for domain in requireLetterDomains {
            let name = domain.hasPrefix("*.") ? domain.dropFirst(2) : Substring(domain)
            guard isDomain(name) else {
                throw ValidationError("--require-letter-for '\(domain)' is not a domain (example.org, or *.example.org)")
            }
        }
        if let from { try checkAddress(from, option: "--from") }
        if let signAs, signAs.isEmpty || signAs.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw ValidationError("--sign-as needs an address or a fingerprint")
        }
    }

    func pipeline(_ global: GlobalOptions, markers: MarkerOptions, reading: ReadingOptions? = nil) throws -> MailPipeline {
        var mail = MailOptions(enforcePostcard: enforcePostcard, requireLetter: requireLetter,
                               domainRules: requireLetterDomains.map { DomainRule($0, .requireLetter) }, invite: invite,
                               postcardExtension: postcardExtension)
        mail.opaqueParts = opaqueParts
        return MailPipeline(gnupg: global.gnupg, options: PipelineOptions(
            mail: mail, redactor: try markers.redactor(), signAs: signAs,
            requirements: KeyRequirements(minimumValidity: minValidity),
            publisher: try reading?.publisher(), readingLifetime: reading?.lifetimeDays.map { $0 * 86400 }))
    }
}

/// Markers and placeholder.
struct MarkerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The marker that opens a private span.", valueName: "text"))
    var openMarker = Redactor.standard.open

    @Option(help: ArgumentHelp("The marker that closes a private span.", valueName: "text"))
    var closeMarker = Redactor.standard.close

    @Option(help: ArgumentHelp("What a censored span becomes.", valueName: "text"))
    var placeholder = Redactor.standard.placeholder

    /// The markers are checked before any input is read.
    func validate() throws {
        do { _ = try redactor() } catch let error as PolicyError { throw ValidationError(error.description) }
    }

    func redactor() throws -> Redactor {
        try Redactor(open: openMarker, close: closeMarker, placeholder: placeholder)
    }
}

extension PostcardExtension: ExpressibleByArgument {}
extension OpaqueParts: ExpressibleByArgument {}

/// The help of `--opaque-parts`, the same for every command that writes postcards.
let opaquePartsHelp = ArgumentHelp(
    "In postcards of a mail with marked spans, what happens to parts mailsec does not read (images, PDFs, office files, "
        + "inline uuencode): withhold (replaced by a note naming the file), pass (sent unread; a marker in their bytes "
        + "refuses the mail) or refuse (the mail is refused).", valueName: "setting")

/// Reads and parses the message argument (`-` or a file). A regular file
/// is parsed as it is read, never held whole twice over; anything else
/// (standard input, a pipe given by name) is read into memory first.
func readMessage(_ path: String, options: ParseOptions = .standard) throws -> MIMEMessage {
    guard isRegularFile(path) else { return try MIMEMessage.parse(readInput(path, limit: options.maxSize), options: options) }
    return try MIMEMessage.parse(contentsOf: path, options: options)
}

/// True for a readable regular file (not `-`, a pipe or a folder).
func isRegularFile(_ path: String) -> Bool {
    var info = stat()
    return path != "-" && stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, R_OK) == 0
}

/// The help of the message argument, the same for every command that reads one.
let messageArgumentHelp = ArgumentHelp("The message file; - (the default) reads standard input.", valueName: "message")

struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show who gets a letter and who a postcard, and why, before anything is sent.",
        discussion: """
            Looks up every recipient's key in one key listing and prints the decisions, both \
            security states and the copies that encrypt would write.

            \(ExitStatus.section([
                (.success, "the plan was printed"),
                (.usage, "usage error"),
                (.dataError, "not a message, no recipients, unbalanced markers"),
                (.noInput, "the message cannot be read"),
                (.refused, "the plan is refused: a letter is required but a key is missing, or a recipient's key changed (not yet accepted)"),
                (.temporary, "GnuPG or its agent unusable, or anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "Policy") var policy: PolicyOptions
    @OptionGroup(title: "Markers") var markers: MarkerOptions
    @OptionGroup(title: "GnuPG") var global: GlobalOptions

    @OptionGroup(title: "Output") var output: JSONOutput<PlanJSON>

    @OptionGroup(title: "Input") var size: MessageSizeOption

    @Option(help: ArgumentHelp("Key continuity: the filter's folder of remembered keys (see 'keys forget'); "
                               + "recipients whose remembered key is gone or lapsed are shown with that reason.",
                               valueName: "folder"))
    var continuity: String?

    @Argument(help: messageArgumentHelp)
    var message = "-"

    func run() throws {
        var pipeline = try policy.pipeline(global, markers: markers)
        if let continuity {
            pipeline = pipeline.with(continuity: KeyContinuity(directory: continuity))
        } else if FileManager.default.fileExists(atPath: LocalStore.defaultFolder() + "/mailsec.sqlite") {
            // What send would do: the command line's remembered and learned keys (key changes shown).
            pipeline = pipeline.with(continuity: try openContacts().continuity)
        }
        let prepared = try pipeline.prepare(readMessage(message, options: size.parseOptions), envelopeSender: policy.from)
        let report = PlanReport(prepared.plan)
        if output.json {
            try writeOutput(encodeJSON(report), to: nil)
        } else {
            print(PlanTable(report: report, colour: isatty(STDOUT_FILENO) != 0
                                && ProcessInfo.processInfo.environment["NO_COLOR"] == nil).text)
        }
        try MailPipeline.checkNotRefused(prepared.plan)
    }
}

/// The plan as a table for people.
struct PlanTable {
    let report: PlanReport
    let colour: Bool

    func paint(_ text: String, _ code: String) -> String { colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }

    var text: String {
        var lines: [String] = []
        let state = report.refused ? paint("refused", "1;31")
            : report.mailState + (report.postcardExtension.map { " (\($0))" } ?? "")
        lines.append("mail: \(state)   recipients: \(report.recipientState)"
                     + (report.hasMarkedSpans ? "   marked spans: yes" : ""))
        let width = report.recipients.map { $0.address.count + $0.role.count + 3 }.max() ?? 0
        for recipient in report.recipients {
            let label: String
            switch recipient.decision {
            case "letter": label = paint("LETTER  ", "1;32")
            case "postcard": label = paint("POSTCARD", "1;33")
            case "refused": label = paint("REFUSED ", "1;31")
            default: label = paint("UNCHANGED", "1;36")
            }
            let who = "\(recipient.address) (\(recipient.role))"
            lines.append("  \(label)  \(who.padding(toLength: width, withPad: " ", startingAt: 0))  \(recipient.detail)")
            if let change = recipient.keyChange, recipient.decision == "letter" {
                lines.append("            " + paint("key changed", "1;33") + ": " + change.description)
            }
        }
        for (label, parts) in [("withheld (not read, replaced by a note)", report.withheldParts),
                               ("passed unread", report.passedParts), ("refused (not read)", report.refusedParts),
                               ("dropped by the HTML allow-list", report.droppedByAllowList)] where !parts.isEmpty {
            lines.append("postcard parts \(label):")
            lines += parts.map { "  \($0)" }
        }
        if report.refused && report.recipients.contains(where: { $0.reason == "key-changed" }) {
            lines.append(paint("refused: a recipient's key changed; check it with the person, then 'mailsec keys accept ADDRESS FINGERPRINT'", "1;31"))
        } else if report.refused {
            lines.append(paint("refused: a letter is required but not every such recipient has a usable key; nothing would be sent", "1;31"))
        } else {
            lines.append("copies:")
            for (index, copy) in report.copies.enumerated() {
                lines.append("  \(index + 1). \(copy.kind) to \(copy.recipients.joined(separator: ", "))")
            }
        }
        return lines.joined(separator: "\n")
    }
}

struct Encrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write one message per recipient group: letters where keys allow, postcards elsewhere.",
        discussion: """
            Recipients are To, Cc and Bcc. One letter (signed, encrypted to the recipients and the \
            sender, real headers inside, Subject '...' outside) goes to all To/Cc letter recipients, \
            one to each Bcc letter recipient, one postcard to all others (censored when the mail \
            has marked spans). Mail that is encrypted already is written unchanged. Key continuity: \
            the key each letter recipient got is remembered in the store ($XDG_DATA_HOME/mailsec); \
            a recipient whose remembered key is gone from the keyring refuses the mail (75, naming \
            the recipient) until the key is back or 'mailsec keys forget ADDRESS' clears the record. Writes DIR/N-KIND.eml \
            per copy and DIR/manifest.json ({envelopeSender, copies: [{file, kind, recipients, \
            fingerprints}], readingPage: {url, expires} or null}); DIR must not exist or be empty. \
            Nothing is written on failure.

            \(ExitStatus.section([
                (.success, "every copy was written"),
                (.usage, "usage error"),
                (.dataError, "not a message, no recipients, unbalanced markers, a marker redaction cannot reach"),
                (.noInput, "the message (or the token file) cannot be read"),
                (.refused, "refused: a letter is required but a key is missing, a signed mail would need redaction"),
                (.cannotCreate, "the --out folder or the --password-to file cannot be made"),
                (.temporary, "no signing key (the mail waits until it is there); a recipient's remembered key is gone (key continuity); GnuPG or its agent unusable, the reading server unreachable, anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "Policy") var policy: PolicyOptions
    @OptionGroup(title: "Markers") var markers: MarkerOptions
    @OptionGroup(title: "Partially encrypted postcards") var reading: ReadingOptions
    @OptionGroup(title: "GnuPG") var global: GlobalOptions

    @OptionGroup(title: "Output") var output: OutFolder

    @OptionGroup(title: "Input") var size: MessageSizeOption

    @Argument(help: messageArgumentHelp)
    var message = "-"

    func validate() throws {
        if policy.postcardExtension == .partiallyEncrypted && reading.publishURL == nil {
            throw ValidationError("--extension partially-encrypted needs --publish-url (a running 'mailsec serve')")
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: output.out, isDirectory: &isDirectory) {
            let empty = isDirectory.boolValue
                && ((try? FileManager.default.contentsOfDirectory(atPath: output.out))?.isEmpty ?? false)
            if !empty { throw ValidationError("--out \(output.out) exists and is not an empty folder") }
        }
    }

    func run() throws {
        let continuity = try openContacts().continuity
        let pipeline = try policy.pipeline(global, markers: markers, reading: reading).with(continuity: continuity)
        // The bytes as they came are needed only for a mail that is encrypted
        // already (it goes out unchanged). A file is then read again and checked
        // again (it may have been replaced meanwhile: plaintext must not pass as
        // encrypted); standard input or a pipe, which cannot be read twice, is
        // read into memory once and parsed from there. A large file is never
        // held twice.
        let options = size.parseOptions
        var parsed: MIMEMessage, original: [UInt8]?
        if isRegularFile(message) {
            parsed = try readMessage(message, options: options)
            if MailPipeline.isEncrypted(parsed) {
                let input = try readInput(message, limit: options.maxSize)
                parsed = try MIMEMessage.parse(input, options: options)
                original = MailPipeline.isEncrypted(parsed) ? input : nil
            }
        } else {
            let input = try readInput(message, limit: options.maxSize)
            parsed = try MIMEMessage.parse(input, options: options)
            original = input
        }
        let prepared = try pipeline.prepare(parsed, original: original, envelopeSender: policy.from)
        let passwordFile = prepared.publishesSpans ? try reading.openPasswordFile() : nil
        let written: WrittenMail
        do {  // all crypto (and publishing) done before any file exists
            written = try pipeline.send(prepared, to: FolderDestination(folder: output.out, sender: prepared.envelopeSender,
                                                                              continuity: continuity))
        } catch {
            reading.discardPasswordFile(passwordFile)
            throw error
        }
        if let password = written.password, let publication = written.publication {
            reading.hand(password, publication, file: passwordFile)
        } else {
            reading.discardPasswordFile(passwordFile)
        }
    }
}

/// A folder as a destination of ``MailPipeline/send(_:to:)`` (`encrypt
/// --out`): DIR/N-KIND.eml per copy in the plan's order and DIR/manifest.json,
/// all at once or none. The password is no copy: `encrypt` hands it to
/// `--password-to` itself.
struct FolderDestination: CopyDestination {
    let folder: String
    let sender: String
    let continuity: any KeyContinuityStore

    var mailsNotice: Bool { false }

    func finish(_ outgoing: OutgoingMail) throws -> WrittenMail {
        let written = outgoing.written
        var files: [(String, Pieces)] = []
        var manifest = Manifest(envelopeSender: sender, copies: [],
                                readingPage: written.publication.map { .init(url: $0.url, expires: $0.expires) })
        for (index, copy) in outgoing.copies.enumerated() {
            let name = "\(index + 1)-\(copy.kind.rawValue).eml"
            files.append((name, copy.forEachPiece))
            manifest.copies.append(.init(file: name, kind: copy.kind.rawValue, recipients: copy.recipients,
                                         fingerprints: copy.fingerprints))
        }
        let manifestBytes = try encodeJSON(manifest)
        // Key continuity: each letter recipient's key is remembered before the letters exist as files.
        for (address, fingerprint) in written.copies.flatMap(\.letterKeys) { try continuity.record(address, fingerprint: fingerprint) }
        files.append(("manifest.json", { try manifestBytes.withUnsafeBytes($0) }))
        try writeFolder(folder, files)
        return written
    }
}

/// Where `encrypt` writes.
struct OutFolder: ParsableArguments {
    @Option(name: .customLong("out"), help: ArgumentHelp("Folder for the copies and manifest.json.", valueName: "dir"))
    var out: String
}

/// `manifest.json` of `mailsec encrypt` (docs/json.md, "manifest.json").
struct Manifest: Encodable {
    struct Copy: Encodable {
        let file: String
        /// `letter`, `postcard` or `unchanged`.
        let kind: String
        /// Envelope recipients.
        let recipients: [String]
        /// Keys the copy is encrypted to (recipients, then the sender); empty for postcards.
        let fingerprints: [String]
    }

    /// The reading page of a partially encrypted postcard (never its password).
    struct ReadingPage: Encodable {
        let url: String
        let expires: String
    }

    let envelopeSender: String
    var copies: [Copy]
    /// Present when a partially encrypted postcard was written.
    let readingPage: ReadingPage?

    enum CodingKeys: String, CodingKey { case envelopeSender, copies, readingPage }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(envelopeSender, forKey: .envelopeSender)
        try container.encode(copies, forKey: .copies)
        try container.encode(readingPage, forKey: .readingPage)  // explicit null, as the contracts in docs/json.md
    }
}

struct Redact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the censored postcard version of a message; no keys needed.",
        discussion: """
            A mail with marked spans is rebuilt: every header field and text part decoded, cleaned of \
            controls and written again with every marked span as the placeholder; HTML through an \
            allow-list; parts mailsec does not read withheld (see --opaque-parts). Bcc is removed. \
            A mail without marked spans is printed as it is, Bcc removed.

            \(ExitStatus.section([
                (.success, "the postcard was written"),
                (.usage, "usage error"),
                (.dataError, "not a message, unbalanced markers, a marker redaction cannot reach, an opaque part refused"),
                (.noInput, "the message cannot be read"),
                (.cannotCreate, "standard output cannot be written"),
                (.refused, "a signed mail would need redaction"),
            ]))
            """
    )

    @OptionGroup(title: "Markers") var markers: MarkerOptions
    @OptionGroup(title: "Input") var size: MessageSizeOption

    @Option(help: opaquePartsHelp)
    var opaqueParts: OpaqueParts = .withhold

    @Argument(help: messageArgumentHelp)
    var message = "-"

    func run() throws {
        let postcard = try Postcard.censored(readMessage(message, options: size.parseOptions), redactor: markers.redactor(),
                                             opaque: opaqueParts)
        try writeOutput(to: nil) { piece in try postcard.write(piece) }
    }
}
