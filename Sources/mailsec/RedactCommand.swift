import ArgumentParser
import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Policy
import Store

struct RedactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redact",
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
        let mail = try readMessage(message, options: size.parseOptions), redactor = try markers.redactor()
        try writeOutput(to: nil) { piece in try Postcard.writeCensored(mail, redactor: redactor, opaque: opaqueParts, piece) }
    }
}
