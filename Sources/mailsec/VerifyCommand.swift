import ArgumentParser
import Contacts
import Foundation
import Incoming
import MIME
import OpenPGP

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
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
