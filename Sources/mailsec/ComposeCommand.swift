import ArgumentParser
import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline

/// The exit statuses of the composing commands (compose, reply, forward, drafts edit).
let composeExitStatus = ExitStatus.section([
    (.success, "sent (queued in the outbox; a line on standard error when delivery must wait), saved as a draft, or discarded"),
    (.usage, "usage error; no terminal for the editor and the prompt (use --no-edit with --send or --save-draft)"),
    (.dataError, "bad input: markers that do not pair up, an address that is not local@domain, no recipients, a mail that is not one"),
    (.noInput, "a file (--body-file, --attach, the mail answered) cannot be read"),
    (.refused, "refused by policy before anything is queued: a letter required without a key, no signing key, "
        + "content that arrived encrypted going to postcard recipients without --confirm-downgrade (the recipients are named), "
        + "no key of your own to keep drafts with"),
    (.temporary, "temporary or unexpected: GnuPG, the store or the configuration unusable; try again"),
])

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

struct ComposeCommand: ParsableCommand {
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

    func run() throws {
        let context = try ComposeContext(config: configOption, global: global)
        let mail = Composition(from: context.from, to: try recipients.list(recipients.to, "--to"),
                               cc: try recipients.list(recipients.cc, "--cc"), bcc: try recipients.list(recipients.bcc, "--bcc"),
                               subject: subject ?? "", text: "")
        let session = try context.session(ComposeDraft(mail))
        try ComposeFlow(session: session, context: context, flow: flow, title: "new mail").run(body: .replacing)
    }
}

/// The mail a reply or a forward starts from, read and (when encrypted) opened.
func openOriginal(_ path: String, context: ComposeContext) throws -> Original {
    let bytes = try readInput(path, limit: ParseOptions.standard.maxSize, what: "the mail")
    return try Original.open(bytes, gnupg: context.gnupg)
}

struct ReplyCommand: ParsableCommand {
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

    func run() throws {
        let context = try ComposeContext(config: configOption, global: global)
        let original = try openOriginal(file, context: context)
        let (all, from, gnupg, options, outbox, drafts) = (all, context.from, context.gnupg, context.options, context.outbox, context.drafts)
        let session = try runAsync {
            try await ComposeSession.reply(to: original, all: all, from: from, identities: [from.address], gnupg: gnupg,
                                           options: options, outbox: outbox, drafts: drafts)
        }
        try ComposeFlow(session: session, context: context, flow: flow, title: all ? "reply to all" : "reply").run(body: .above)
    }
}

struct ForwardCommand: ParsableCommand {
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

    func run() throws {
        let context = try ComposeContext(config: configOption, global: global)
        let original = try openOriginal(file, context: context)
        let to = try recipients.list(recipients.to, "--to")
        let cc = try recipients.list(recipients.cc, "--cc"), bcc = try recipients.list(recipients.bcc, "--bcc")
        let (asAttachment, from, gnupg, options, outbox, drafts) = (attachOriginal, context.from, context.gnupg, context.options,
                                                                    context.outbox, context.drafts)
        let session = try runAsync {
            let session = try await ComposeSession.forward(original, to: to, asAttachment: asAttachment, from: from, gnupg: gnupg,
                                                           options: options, outbox: outbox, drafts: drafts)
            if !cc.isEmpty { try await session.add(cc, as: .cc) }
            if !bcc.isEmpty { try await session.add(bcc, as: .bcc) }
            return session
        }
        try ComposeFlow(session: session, context: context, flow: flow, title: "forward").run(body: .above)
    }
}
