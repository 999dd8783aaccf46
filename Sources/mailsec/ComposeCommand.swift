import ArgumentParser
import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline

struct ComposeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Write a mail in your editor, see who gets a letter and who a postcard, and send it.",
        discussion: """
            Opens $VISUAL (else $EDITOR, else vi) on a template: header lines (To, Cc, Bcc, \
            Subject, Attach), an empty line, the text, and below a scissors line a comment \
            block that is left out. Mark private text with the markers ([[private]] … \
            [[/private]] unless configured otherwise). After the editor, it shows each recipient \
            and what they get (letter or postcard, and why), both security states and the copies, \
            and asks: s send, e edit again, p postcard for everybody on/off, i invite on/off, \
            x extension, d save as draft, q discard. The prompt reads the terminal (/dev/tty), also \
            when standard input is the text (--body-file -); Ctrl-C there saves a draft and exits 130. For scripts: --no-edit with --send or \
            --save-draft. Sent means queued in the outbox ('mailsec outbox'); it is delivered at \
            once as far as the server takes it. Settings come from the configuration ('mailsec \
            config check').

            \(composeExitStatus)
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var configOption: ConfigOption
    @OptionGroup(title: "Recipients") var recipients: RecipientOptions

    @Option(help: ArgumentHelp("The Subject.", valueName: "text"))
    var subject: String?

    @OptionGroup(title: "Composing") var flow: ComposeFlowOptions

    func run() async throws {
        let context = try ComposeContext(config: configOption, global: global)
        let mail = Composition(from: context.from, to: try recipients.list(recipients.to, "--to"),
                               cc: try recipients.list(recipients.cc, "--cc"), bcc: try recipients.list(recipients.bcc, "--bcc"),
                               subject: subject ?? "", text: "")
        let session = try await context.session(ComposeDraft(mail))
        try await ComposeFlow(session: session, context: context, flow: flow, title: "new mail").run(body: .replacing)
    }
}
