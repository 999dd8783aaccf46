import ArgumentParser
import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Policy
import Store

struct EncryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
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
