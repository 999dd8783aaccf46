import ArgumentParser
import Contacts
import Foundation
import Incoming
import MIME
import OpenPGP

struct DecryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
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
