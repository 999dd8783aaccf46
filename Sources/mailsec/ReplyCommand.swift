import ArgumentParser
import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline

struct ReplyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reply",
        abstract: "Answer a mail (an encrypted one is opened with your key): Re:, In-Reply-To, References, the text quoted.",
        discussion: """
            To: the mail's Reply-To, else its From; with --all also its To and Cc, leaving out your \
            own address. Then as 'mailsec compose': the editor, the plan, the prompt. When the mail \
            arrived encrypted and a recipient would get a postcard, sending is refused (69, naming \
            them) unless confirmed at the prompt or with --confirm-downgrade; in a reply to all of a \
            mixed audience the quoted text is marked private from the start, so postcards get it \
            censored and letters whole. --body-file puts its text above the quote.

            \(composeExitStatus)
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var configOption: ConfigOption

    @Flag(help: "Reply to the sender and every recipient of the mail.")
    var all = false

    @OptionGroup(title: "Composing") var flow: ComposeFlowOptions

    @Argument(help: ArgumentHelp("The mail to answer; - reads standard input.", valueName: "file"))
    var file: String

    func validate() throws {
        if file == "-" && flow.bodyFile == "-" { throw ValidationError("the mail and --body-file cannot both be standard input") }
    }

    func run() async throws {
        let context = try ComposeContext(config: configOption, global: global)
        let original = try openOriginal(file, context: context)
        let session = try await ComposeSession.reply(to: original, all: all, from: context.from, identities: [context.from.address],
                                                     gnupg: context.gnupg, options: context.options, outbox: context.outbox,
                                                     drafts: context.drafts)
        try await ComposeFlow(session: session, context: context, flow: flow, title: all ? "reply to all" : "reply").run(body: .above)
    }
}
