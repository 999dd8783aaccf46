import ArgumentParser
import Compose
import ComposeStore
import Foundation

struct DraftsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drafts",
        abstract: "List, show, edit and delete your drafts (kept encrypted to your own key).",
        discussion: """
            Drafts are saved by 'mailsec compose' (d at the prompt, or --save-draft) and by \
            'mailsec outbox edit'. They are kept in the store encrypted to and signed by your own \
            key: nothing of them is readable there without your secret key. An ID may be \
            shortened to its first characters while it stays unique. A draft that is sent is removed.
            """,
        subcommands: [DraftsList.self, DraftsShow.self, DraftsEdit.self, DraftsDelete.self],
        defaultSubcommand: DraftsList.self)
}

/// The exit statuses of the drafts commands that only read or delete.
let draftsExitStatus = ExitStatus.section([
    (.success, "done"),
    (.usage, "usage error, or no draft with that ID (or the ID names more than one)"),
    (.refused, "no key of your own to open the drafts with, or a draft not signed by it"),
    (.temporary, "temporary or unexpected: GnuPG, the store or the configuration unusable; try again"),
])

/// The draft an action is for.
struct DraftChoice: ParsableArguments {
    @OptionGroup var global: GlobalOptions
    @OptionGroup var configOption: ConfigOption

    @Argument(help: ArgumentHelp("The draft's id (see 'mailsec drafts'), or its first characters.", valueName: "id"))
    var id: String

    /// The context, and the full id of the one draft `id` names.
    func open() throws -> (ComposeContext, String) {
        let context = try ComposeContext(config: configOption, global: global)
        return (context, try resolve(in: context.drafts))
    }

    /// The full id of the one draft `id` names.
    func resolve(in drafts: SealedDraftStore) throws -> String {
        let ids = try drafts.ids()
        if ids.contains(id) { return id }
        let matching = id.isEmpty ? [] : ids.filter { $0.hasPrefix(id.lowercased()) }
        guard matching.count == 1 else {
            throw CommandFailure(matching.isEmpty ? "no draft \(id) (see 'mailsec drafts')" : "\(id) names \(matching.count) drafts; give more of it",
                                 status: .usage)
        }
        return matching[0]
    }
}

struct DraftsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Every draft, newest first: id, when saved, kind, recipients, subject.",
        discussion: draftsExitStatus)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var configOption: ConfigOption

    func run() throws {
        let context = try ComposeContext(config: configOption, global: global)
        let entries = try context.drafts.list()
        guard !entries.isEmpty else { return print("no drafts") }
        let formatter = localTimes("yyyy-MM-dd HH:mm")
        for entry in entries {
            let draft = entry.draft
            let to = draft.recipients.map(\.address).joined(separator: ", ")
            print("\(entry.id)  \(formatter.string(from: entry.updated))  \(DraftsShow.modeName(draft.mode))  "
                  + "to: \(to.isEmpty ? "-" : to)  subject: \(draft.mail.subject.isEmpty ? "-" : draft.mail.subject)")
        }
    }
}

struct DraftsShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "A draft as the editor shows it: header lines, text, attachments.",
        discussion: draftsExitStatus)

    @OptionGroup var choice: DraftChoice

    func run() throws {
        let (context, id) = try choice.open()
        guard let draft = try context.drafts.draft(id) else { throw CommandFailure("no draft \(id)", status: .usage) }
        var text = try ComposeTemplate.text(for: draft, redactor: context.options.redactor, mode: Self.modeName(draft.mode))
        if let cut = text.range(of: "\n" + ComposeTemplate.scissors) { text = String(text[..<cut.lowerBound]) + "\n" }
        print("# draft \(id), \(Self.modeName(draft.mode)); from \(draft.mail.from.address)", terminator: "\n")
        print(text, terminator: "")
    }

    static func modeName(_ mode: ComposeMode) -> String {
        switch mode {
        case .new: "new mail"
        case .reply: "reply"
        case .replyAll: "reply to all"
        case .forwardInline: "forward"
        case .forwardAsAttachment: "forward (attached)"
        case .editingDraft: "draft"
        }
    }
}

struct DraftsEdit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Take a draft up again: the editor and the prompt, as 'mailsec compose'.",
        discussion: """
            Saving replaces the draft; sending removes it. With --no-edit and --send a draft is \
            sent as it is (--body-file replaces its text).

            \(composeExitStatus)
            """)

    @OptionGroup var choice: DraftChoice
    @OptionGroup(title: "Composing") var flow: ComposeFlowOptions

    func run() async throws {
        let (context, id) = try choice.open()
        guard let draft = try context.drafts.draft(id) else { throw CommandFailure("no draft \(id)", status: .usage) }
        let session = try await context.session(draft, editing: id)
        try await ComposeFlow(session: session, context: context, flow: flow, title: "draft (\(DraftsShow.modeName(draft.mode)))")
            .run(body: .replacing)
    }
}

struct DraftsDelete: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Remove a draft for good.",
        discussion: draftsExitStatus)

    @OptionGroup var choice: DraftChoice

    func run() throws {
        let (context, id) = try choice.open()
        try context.drafts.delete(id)
        print("deleted draft \(id)")
    }
}

/// Dates as lists show them, in local time: `format` in the POSIX locale.
func localTimes(_ format: String) -> DateFormatter {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.dateFormat = format
    return formatter
}
