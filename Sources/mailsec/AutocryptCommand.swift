import ArgumentParser
import Contacts
import Foundation
import Incoming
import MIME
import OpenPGP

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
