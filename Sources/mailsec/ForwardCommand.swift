import ArgumentParser
import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline

struct ForwardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forward",
        abstract: "Pass a mail on (an encrypted one is opened with your key): Fwd:, inline or attached whole.",
        discussion: """
            The mail's header lines and text go into the body, its attachments stay attached; with \
            --attach-original the whole mail (decrypted) is attached as message/rfc822 instead. Then \
            as 'mailsec compose'. When the mail arrived encrypted and a recipient would get a \
            postcard, sending is refused (69, naming them) unless confirmed at the prompt or with \
            --confirm-downgrade. --body-file puts its text above the forwarded block.

            \(composeExitStatus)
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var configOption: ConfigOption
    @OptionGroup(title: "Recipients") var recipients: RecipientOptions

    @Flag(name: .customLong("attach-original"), help: "Attach the whole mail (message/rfc822) instead of quoting it.")
    var attachOriginal = false

    @OptionGroup(title: "Composing") var flow: ComposeFlowOptions

    @Argument(help: ArgumentHelp("The mail to pass on; - reads standard input.", valueName: "file"))
    var file: String

    func validate() throws {
        if recipients.to.isEmpty { throw ValidationError("forward needs --to") }
        if file == "-" && flow.bodyFile == "-" { throw ValidationError("the mail and --body-file cannot both be standard input") }
    }

    func run() async throws {
        let context = try ComposeContext(config: configOption, global: global)
        let original = try openOriginal(file, context: context)
        let to = try recipients.list(recipients.to, "--to")
        let cc = try recipients.list(recipients.cc, "--cc"), bcc = try recipients.list(recipients.bcc, "--bcc")
        let session = try await ComposeSession.forward(original, to: to, asAttachment: attachOriginal, from: context.from,
                                                       gnupg: context.gnupg, options: context.options, outbox: context.outbox,
                                                       drafts: context.drafts)
        if !cc.isEmpty { try await session.add(cc, as: .cc) }
        if !bcc.isEmpty { try await session.add(bcc, as: .bcc) }
        try await ComposeFlow(session: session, context: context, flow: flow, title: "forward").run(body: .above)
    }
}
