import ArgumentParser
import Foundation
import Contacts
import Incoming
import MIME
import OpenPGP

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a signed mail: the signature, what it covers, and whether the signer is the From address.",
        discussion: """
            Reads PGP/MIME (multipart/signed) and inline (cleartext) signatures. The mail counts \
            as verified only when the signature is good, covers the whole message (not one part \
            beside unsigned content, not an attached mail) and the signer's key has a user ID \
            with exactly the From address (a single From; a display name that shows an address, \
            also in look-alike characters, fails). A From display name that is not a name on \
            the signer's key, and a Sender beside the From, are warnings ('warning: …' on \
            standard error); --strict makes any warning exit 1. S/MIME is not read ('S/MIME \
            is not supported').

            \(ExitStatus.section([
                (.success, "verified"),
                (.failure, "not verified (S/MIME included), or a warning under --strict; the reason on standard error"),
                (.usage, "usage error"),
                (.dataError, "not a message"),
                (.noInput, "the mail cannot be read"),
                (.temporary, "GnuPG or its agent unusable, or anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "GnuPG") var global: GlobalOptions

    @OptionGroup(title: "Output") var output: JSONOutput<VerifyJSON>

    @Flag(help: "Exit 1 on any warning too (a display name not on the signer's key, a Sender beside the From).")
    var strict = false

    @OptionGroup(title: "Input") var size: MessageSizeOption

    @Argument(help: messageArgumentHelp)
    var message = "-"

    func run() throws {
        let options = size.parseOptions
        let report = try MailVerifier(gnupg: global.gnupg).verify(try readInput(message, limit: options.maxSize), options: options)
        if output.json {
            try writeOutput(encodeJSON(report), to: nil)
        } else {
            let who = report.signer.map { "\($0.fingerprint)" + ($0.userID.map { " \($0)" } ?? "") } ?? "-"
            print("signature: \(report.status ?? "none") \(who)")
            print("coverage: \(report.coverage)" + (report.signedPart.map { " (part \($0))" } ?? ""))
            print("from: \(report.from ?? "-") " + (report.fromMatches ? "(matches the signer)" : "(does not match the signer)"))
            if let sender = report.sender { print("sender: \(sender)") }
        }
        // Not verified, the one reason line says it all; verified, the warnings qualify it.
        if report.verified { warn(report.warnings) }
        if !report.verified {
            throw CommandFailure("not verified: \(report.reason ?? "the signature is not acceptable")", status: .failure)
        }
        if strict && !report.warnings.isEmpty {
            throw CommandFailure("not verified (--strict): \(report.warnings.joined(separator: "; "))", status: .failure)
        }
    }
}

/// Prints each warning as one line on standard error.
func warn(_ warnings: [String]) {
    for warning in warnings {
        let line = "warning: " + warning.map { $0 == "\n" || $0 == "\r" ? " " : String($0) }.joined() + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

struct Decrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open an encrypted mail safely: decrypt, verify, restore protected headers.",
        discussion: """
            Decrypts PGP/MIME and inline PGP, verifying any signature in the same step, and \
            writes the decrypted message to standard output or --output. When the decrypted \
            part carries protected header fields (RFC 9788 hp="cipher", or protected-headers="v1"), \
            the message's header section is those fields alone: outer fields they lack are left \
            out and named ('warning: left out unprotected outer fields: …'). It refuses, with \
            exit status 69 and nothing written, ciphertext whose integrity is not confirmed \
            ('no integrity protection', 'integrity check failed', 'AEAD tag failed'; whatever \
            the GnuPG home's gpg.conf says) and an encrypted part that is not the whole message: \
            one part among others, inside an attached mail, or ciphertext with other text \
            around it (the EFAIL shapes); S/MIME too ('S/MIME is not supported'). PGP/MIME that \
            Microsoft Exchange turned into multipart/mixed is read as what it was. One line on \
            standard error tells the signature: 'signature: STATUS FINGERPRINT'; --strict \
            refuses (exit 1, nothing written) a mail with any warning. --json prints the report \
            on standard output (the message then goes to --output only).

            \(ExitStatus.section([
                (.success, "decrypted and written"),
                (.failure, "GnuPG refused for good (no secret key for it, say), or a warning under --strict"),
                (.usage, "usage error"),
                (.dataError, "not an encrypted mail"),
                (.noInput, "the mail cannot be read"),
                (.refused, "refused: integrity not confirmed, S/MIME, or an encrypted part that is not the whole message"),
                (.cannotCreate, "the output cannot be written"),
                (.temporary, "GnuPG or its agent unusable, or anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "GnuPG") var global: GlobalOptions

    @OptionGroup(title: "Output") var destination: DecryptOutput
    var output: String? { destination.output }
    var json: Bool { destination.json }

    @OptionGroup(title: "Input") var size: MessageSizeOption

    @Flag(help: "Exit 1, writing nothing, on any warning (signature warnings, unprotected outer fields left out).")
    var strict = false

    @Argument(help: messageArgumentHelp)
    var letter = "-"

    func run() throws {
        let options = size.parseOptions
        let decryptor = MailDecryptor(gnupg: global.gnupg, options: options)
        let result: (message: MIMEMessage, report: DecryptionReport)
        do { result = try decryptor.decrypt(try readInput(letter, limit: options.maxSize)) } catch let refusal as DecryptionRefusal {
            if json {
                try writeOutput(encodeJSON(DecryptionReport.refusal(refusal.description)), to: nil)
            }
            throw CommandFailure(refusal.description, status: refusal.notEncrypted ? .dataError : .refused)
        } catch let error as IntegrityError {
            if json {
                try writeOutput(encodeJSON(DecryptionReport.refusal(error.description)), to: nil)
            }
            throw CommandFailure(error.description, status: .refused)
        }
        let signature = result.report.signature
        let line = signature.map { report -> String in
            "signature: \(report.status ?? "none") \(report.signer?.fingerprint ?? "-")"
                + (report.verified ? "" : "; not verified: \(report.reason ?? "")")
        } ?? "signature: none"
        FileHandle.standardError.write(Data((line + "\n").utf8))
        var warnings = signature?.warnings ?? []
        if !result.report.droppedOuterFields.isEmpty {
            warnings.append("left out unprotected outer fields: " + result.report.droppedOuterFields.joined(separator: ", "))
        }
        warn(warnings)
        if strict && !warnings.isEmpty {
            if json { try writeOutput(encodeJSON(result.report), to: nil) }
            throw CommandFailure("not written (--strict): the mail has warnings", status: .failure)
        }
        if json {
            try writeOutput(encodeJSON(result.report), to: nil)
            if let output { try writeOutput(result.message.serialize(), to: output) }
        } else {
            try writeOutput(result.message.serialize(), to: output)
        }
    }
}

/// Where `decrypt` writes.
struct DecryptOutput: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp("Write the decrypted message here (0600).", valueName: "file"))
    var output: String?

    @Flag(help: ArgumentHelp("Print the report as JSON on standard output (the message then goes to --output only): "
                             + "{decrypted, kind, protectedHeaders, signature: (as verify --json), refused}."))
    var json = false
}

struct AutocryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "autocrypt",
        abstract: "Autocrypt: import the keys a mail offers.",
        subcommands: [AutocryptImport.self]
    )
}

struct AutocryptImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import the key of a mail's Autocrypt header (and Autocrypt-Gossip keys inside an encrypted mail).",
        discussion: """
            The Autocrypt header counts only when its addr is the mail's one From address; \
            Autocrypt-Gossip headers only inside the encryption and only for a recipient of the \
            mail. The key must parse and carry a user ID with that address; only such user IDs \
            are imported. One line per header: 'imported ADDR FINGERPRINT' or 'not imported \
            ADDR: REASON'.

            \(ExitStatus.section([
                (.success, "at least one key was imported"),
                (.failure, "no key imported (the mail has no usable Autocrypt header)"),
                (.usage, "usage error"),
                (.dataError, "not a message"),
                (.noInput, "the mail cannot be read"),
                (.temporary, "GnuPG or its agent unusable, or anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "GnuPG") var global: GlobalOptions

    @OptionGroup(title: "Output") var output: JSONOutput<AutocryptJSON>

    @Flag(help: "Do not decrypt an encrypted mail for its gossip headers.")
    var noDecrypt = false

    @Argument(help: messageArgumentHelp)
    var message = "-"

    func run() throws {
        let raw = try readInput(message, limit: ParseOptions.standard.maxSize)
        let results = try AutocryptImporter(gnupg: global.gnupg).importKeys(from: raw, decrypting: !noDecrypt)
        // Kept apart from the person's own keys, as 'contacts learn' keeps them.
        let dated = (try? MIMEMessage.parse(raw))?.header("Date").flatMap(ContactBook.parseDate) ?? Date()
        try openContacts().continuity.noteLearned(results, at: dated)
        if output.json {
            try writeOutput(encodeJSON(results), to: nil)
        } else {
            for result in results {
                if let fingerprint = result.imported {
                    print("imported \(result.header) \(result.addr ?? "") \(fingerprint)")
                } else {
                    print("not imported \(result.header) \(result.addr ?? "-"): \(result.reason ?? "")")
                }
            }
        }
        if !results.contains(where: { $0.imported != nil }) {
            throw CommandFailure(results.isEmpty ? "the mail has no Autocrypt header" : "no key imported", status: .failure)
        }
    }
}
