import ArgumentParser
import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline

/// `--to`, `--cc`, `--bcc`: each value one address or a comma-separated list.
struct RecipientOptions: ParsableArguments {
    @Option(help: ArgumentHelp("A To recipient (repeatable; or several, separated by commas).", valueName: "addr"),
            completion: AddressCompletion.kind)
    var to: [String] = []

    @Option(help: ArgumentHelp("A Cc recipient (repeatable).", valueName: "addr"),
            completion: AddressCompletion.kind)
    var cc: [String] = []

    @Option(help: ArgumentHelp("A Bcc recipient (repeatable).", valueName: "addr"),
            completion: AddressCompletion.kind)
    var bcc: [String] = []

    func validate() throws {
        for (option, values) in [("--to", to), ("--cc", cc), ("--bcc", bcc)] {
            for value in values { _ = try Self.addresses(value, option: option) }
        }
    }

    /// The mailboxes a value names; the value itself is not echoed in the error.
    static func addresses(_ value: String, option: String) throws -> [MailAddress] {
        do { return try ComposeTemplate.addresses(value, line: 0) } catch {
            throw ValidationError("\(option) is not a mail address (local@domain, or Name <local@domain>)")
        }
    }

    func list(_ values: [String], _ option: String) throws -> [MailAddress] {
        try values.flatMap { try Self.addresses($0, option: option) }
    }
}
