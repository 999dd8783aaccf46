import ArgumentParser
import Foundation
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
            is not supported'). Exit status 0 when verified; 1 with the reason otherwise. \
            --json prints the report (README, "mailsec verify --json").
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the report as JSON on standard output.")
    var json = false

    @Flag(help: "Exit 1 on any warning too (a display name not on the signer's key, a Sender beside the From).")
    var strict = false

    @Argument(help: ArgumentHelp("The mail; - (the default) reads standard input.", valueName: "message"))
    var message = "-"

    func run() throws {
        let report = try MailVerifier(gnupg: global.gnupg).verify(try readInput(message))
        if json {
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
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the decrypted message here.", valueName: "file"))
    var output: String?

    @Flag(help: "Print the report as JSON on standard output.")
    var json = false

    @Flag(help: "Exit 1, writing nothing, on any warning (signature warnings, unprotected outer fields left out).")
    var strict = false

    @Argument(help: ArgumentHelp("The mail; - (the default) reads standard input.", valueName: "message"))
    var letter = "-"

    func run() throws {
        let decryptor = MailDecryptor(gnupg: global.gnupg)
        let result: (message: MIMEMessage, report: DecryptionReport)
        do { result = try decryptor.decrypt(try readInput(letter)) } catch let refusal as DecryptionRefusal {
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
            ADDR: REASON'. Exit status 0 when at least one key was imported, 1 otherwise.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the results as JSON.")
    var json = false

    @Flag(help: "Do not decrypt an encrypted mail for its gossip headers.")
    var noDecrypt = false

    @Argument(help: ArgumentHelp("The mail; - (the default) reads standard input.", valueName: "message"))
    var message = "-"

    func run() throws {
        let results = try AutocryptImporter(gnupg: global.gnupg).importKeys(from: try readInput(message), decrypting: !noDecrypt)
        if json {
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
