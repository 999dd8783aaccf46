import ArgumentParser
import Foundation
import MIME
import OpenPGP
import Pipeline

struct Encrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal a message as a letter: signed and encrypted (PGP/MIME) to every recipient.",
        discussion: """
            Recipients are the addresses in To, Cc and Bcc; all are looked up in one key listing, \
            together with the signer. The letter is encrypted to every recipient and to the signer, \
            and signed by the signer. If any recipient has no usable key the message is refused \
            (exit 69) with the reason for each, and nothing is written. A message that is already \
            encrypted (multipart/encrypted, application/pkcs7-mime) is written out unchanged. \
            With Bcc recipients, key ids are left out of the letter so that no one learns of them.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("Address of the signing key (default: the From address).", valueName: "address"))
    var signer: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the letter here (default: standard output).", valueName: "file"))
    var output: String?

    @Argument(help: ArgumentHelp("The message file; - reads standard input.", valueName: "message"))
    var message: String

    func run() throws {
        let mail = try MIMEMessage.parse(readInput(message))
        if let body = mail.body, body.contentType.is("multipart", "encrypted") || body.contentType.is("application", "pkcs7-mime") {
            try writeOutput(mail.serialize(), to: output)
            return
        }
        let bcc = mail.addresses(.bcc).map(\.address)
        let recipients = (mail.addresses(.to) + mail.addresses(.cc)).map(\.address) + bcc
        guard !recipients.isEmpty else { throw CommandFailure("message has no recipients", status: .dataError) }
        guard let signerAddress = signer ?? mail.addresses(.from).first?.address else {
            throw CommandFailure("message has no From address; name the signer with --signer", status: .dataError)
        }

        let gnupg = global.gnupg
        let lookups = try gnupg.lookup(recipients + [signerAddress])
        let refused = lookups.filter { $0.chosen == nil }
        guard refused.isEmpty else {
            let reasons = refused.map { lookup in
                let why = lookup.problems.isEmpty ? "no key" : lookup.problems.map(\.description).joined(separator: ", ")
                return "\(lookup.address) (\(why))"
            }
            throw CommandFailure("no usable key for " + reasons.joined(separator: "; "), status: .refused)
        }
        guard let signingKey = try gnupg.signingKeys(for: signerAddress).first else {
            throw CommandFailure("no secret key to sign as \(signerAddress)", status: .refused)
        }
        let keys = lookups.compactMap(\.chosen)
        let letter = try Letter.seal(mail, to: keys, signer: signingKey, using: gnupg, hideRecipients: !bcc.isEmpty)
        try writeOutput(letter.serialize(), to: output)
    }
}

struct Decrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a letter: decrypt it and verify the signature inside.",
        discussion: """
            Writes the decrypted MIME body to standard output (or --output) and one line per \
            signature to standard error: 'signature: STATUS FINGERPRINT'.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the decrypted body here.", valueName: "file"))
    var output: String?

    @Argument(help: ArgumentHelp("The letter file; - reads standard input.", valueName: "letter"))
    var letter: String

    func run() throws {
        let mail = try MIMEMessage.parse(readInput(letter))
        let opened = try Letter.open(mail, using: global.gnupg)
        for signature in opened.signatures {
            FileHandle.standardError.write(Data("signature: \(signature.status) \(signature.fingerprint)\n".utf8))
        }
        if opened.signatures.isEmpty {
            FileHandle.standardError.write(Data("signature: none\n".utf8))
        }
        try writeOutput(opened.body.serialize(newline: .lf), to: output)
    }
}
