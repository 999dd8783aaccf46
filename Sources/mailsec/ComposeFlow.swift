import ArgumentParser
import Compose
import ComposeStore
import Foundation
import MIME
import OpenPGP
import Outbox
import Pipeline
import Platform
import Policy
import Sending
import Synchronization

/// The options every composing command shares: the editor or not, what to
/// do at the end, the per-mail options.
struct ComposeFlowOptions: ParsableArguments {
    @Option(name: .customLong("body-file"), help: ArgumentHelp(
        "The text of the mail from FILE; - reads standard input (the prompt then reads the terminal).", valueName: "file"))
    var bodyFile: String?

    @Option(help: ArgumentHelp("Attach FILE (repeatable).", valueName: "file"))
    var attach: [String] = []

    @Flag(help: "Postcard recipients are invited to encrypted mail (explanation, your key, Autocrypt).")
    var invite = false

    @Flag(name: .customLong("enforce-postcard"), help: "Everybody gets a postcard, even recipients with keys.")
    var enforcePostcard = false

    @Option(name: .customLong("extension"), help: ArgumentHelp(
        "What postcards do with private spans.", valueName: "censored|partially-encrypted"))
    var postcardExtension: PostcardExtension?

    @Flag(name: .customLong("no-edit"), help: "Do not open the editor.")
    var noEdit = false

    @Flag(help: "Send without asking (after the editor, unless --no-edit).")
    var send = false

    @Flag(name: .customLong("save-draft"), help: "Save as a draft without asking.")
    var saveDraft = false

    @Flag(name: .customLong("confirm-downgrade"), help: ArgumentHelp(
        "Content that arrived encrypted may go to postcard recipients (else sending it is refused, 69)."))
    var confirmDowngrade = false

    func validate() throws {
        if send && saveDraft { throw ValidationError("--send and --save-draft exclude each other") }
    }
}

/// What a composing command works with: the configuration's store, keys,
/// outbox and drafts.
struct ComposeContext {
    let submission: Submission
    let gnupg: GnuPG
    let options: PipelineOptions
    let drafts: SealedDraftStore
    let outbox: OutboxQueue
    let from: MailAddress

    init(config configOption: ConfigOption, global: GlobalOptions) throws {
        submission = try configOption.submission()
        let config = submission.config
        gnupg = GnuPG(home: global.gnupgHome ?? config.gnupgHome)
        var options = submission.pipeline.options
        options.showPassword = terminalPasswordDisplay()
        self.options = options
        from = MailAddress(address: config.from)
        drafts = SealedDraftStore(store: submission.outbox.store, gnupg: gnupg, owner: config.from)
        outbox = OutboxQueue(submission.outbox, fileOwnCopy: config.sentMaildir != nil, sources: drafts)
    }

    /// A session on `draft` (a new mail, or the draft `id` taken up again).
    func session(_ draft: ComposeDraft, editing id: String? = nil) async throws -> ComposeSession {
        if let id { return try await ComposeSession(editing: draft, id: id, gnupg: gnupg, options: options, outbox: outbox, drafts: drafts) }
        return try await ComposeSession(draft, gnupg: gnupg, options: options, outbox: outbox, drafts: drafts)
    }
}

/// The mail a reply or a forward starts from, read and (when encrypted) opened.
func openOriginal(_ path: String, context: ComposeContext) throws -> Original {
    let bytes = try readInput(path, limit: ParseOptions.standard.maxSize, what: "the mail")
    return try Original.open(bytes, gnupg: context.gnupg)
}

/// How a composing command runs a session to its end: options applied, the
/// editor and the prompt (or `--send` / `--save-draft`), and what it prints.
/// On the main actor: the prompt and the editor block their thread, as they
/// did in the synchronous command, while the session and the delivery run on
/// the cooperative pool.
@MainActor
struct ComposeFlow {
    let session: ComposeSession
    let context: ComposeContext
    let flow: ComposeFlowOptions
    /// The first line of the screen ("new mail", "reply to …").
    let title: String

    /// Where `--body-file`'s text goes: instead of the text, or above it (a reply's quote).
    enum BodyPlace { case replacing, above }

    /// Runs the session to an output state; exits through a thrown
    /// ``CommandFailure`` when refused.
    func run(body place: BodyPlace) async throws {
        try await apply(place)
        if flow.noEdit && (flow.send || flow.saveDraft) {
            try await finishWithoutAsking()
            return
        }
        guard let terminal = ComposeTerminal() else {
            throw CommandFailure("no terminal for the editor and the prompt; use --no-edit with --send or --save-draft",
                                 status: .usage)
        }
        let workspace = try EditorFile()
        defer { workspace.remove() }
        if let fallback = workspace.fallback { terminal.write("mailsec: \(fallback)\n") }
        let interrupt = Interruption(session: session, workspace: workspace) { [session] edited in
            _ = try? await Self.apply(edited: edited, to: session)
        }
        defer { interrupt.end() }
        var template = try ComposeTemplate.text(for: await state().draft, redactor: context.options.redactor, mode: title)
        let problem = flow.noEdit ? nil : try await editOnce(terminal, workspace, &template)
        if flow.send || flow.saveDraft {
            if let problem { throw CommandFailure("the mail as edited has a problem: " + problem, status: .dataError) }
            try await finishWithoutAsking()
            return
        }
        try await prompt(terminal, workspace, template: template, problem: problem)
    }

    /// The screen and the one-letter prompt, until the mail is sent, saved
    /// or discarded; the editor again on `e`.
    private func prompt(_ terminal: ComposeTerminal, _ workspace: EditorFile, template: String, problem: String?) async throws {
        var template = template, problem = problem
        while true {
            let state = await state()
            terminal.write("\n" + terminal.screen(state, title: title))
            if let problem { terminal.write(terminal.paint("  the edited text has a problem: ", 31) + problem + " (e: edit again)\n") }
            let answer = terminal.ask("\n[s]end  [e]dit  [p]ostcard for everybody  [i]nvite  e[x]tension  save [d]raft  [q] discard? ")
            switch answer {
            case "s"?:
                if problem != nil { terminal.write("mailsec: edit the text again first (e)\n"); continue }
                if !state.downgrade.isEmpty && !state.downgradeConfirmed {
                    terminal.write("Content that arrived encrypted would reach \(state.downgrade.joined(separator: ", ")) "
                                   + "as a postcard (unencrypted).\n")
                    guard terminal.ask("Send it to them as a postcard anyway? [y/N] ") == "y" else { continue }
                    try await session.confirmDowngrade()
                }
                if !(try acceptKeyChanges(terminal, state)) { continue }
                do {
                    try await sendNow()
                    return
                } catch let failure as CommandFailure where failure.status != .temporary {
                    terminal.write("mailsec: not sent: \(failure.description)\n")
                }
            case "e"?:
                problem = try await editOnce(terminal, workspace, &template)
            case "p"?:
                try await session.setEnforcePostcard(!(await session.state.draft.enforcePostcard))
            case "i"?:
                try await session.setInvite(!(await session.state.draft.invite))
            case "x"?:
                let now = await session.state.draft.postcardExtension
                try await session.setExtension(now == .censored ? .partiallyEncrypted : .censored)
            case "d"?:
                try await saveNow()
                return
            case "q"?:
                if terminal.ask("Discard this mail? [y/N] ") == "y" {
                    try await session.discard()
                    print("discarded")
                    return
                }
            case nil:
                Interruption.parkIfEnding()
                // The terminal went away: keep the mail rather than lose it.
                terminal.write("\n")
                try await saveNow()
                return
            default:
                terminal.write("answer with one letter: s, e, p, i, x, d or q\n")
            }
        }
    }

    private func state() async -> ComposeState { await session.state }

    /// Key changes: each held one is shown (both keys, where the new one came
    /// from) and taken only on an explicit yes, recorded as `keys accept`
    /// records it; false when one is not accepted (nothing is sent).
    private func acceptKeyChanges(_ terminal: ComposeTerminal, _ state: ComposeState) throws -> Bool {
        for change in state.plan?.heldKeyChanges ?? [] {
            terminal.write("The key of \(change.address) changed: \(change.description).\n")
            guard terminal.ask("Accept \(change.current) as the key of \(change.address) (checked with them)? [y/N] ") == "y",
                  let continuity = context.options.continuity else { return false }
            try continuity.record(change.address, fingerprint: change.current)
        }
        return true
    }

    /// `--body-file`, `--attach`, the per-mail flags and `--confirm-downgrade`.
    private func apply(_ place: BodyPlace) async throws {
        let attachments = try flow.attach.map(ComposeTemplate.attachment(path:))
        let body: String? = try flow.bodyFile.map { path in
            let bytes = try readInput(path, limit: ParseOptions.standard.maxSize, what: "the text of the mail")
            guard let text = String(bytes: bytes, encoding: .utf8) else {
                throw CommandFailure("the text of the mail is not UTF-8", status: .dataError)
            }
            return text
        }
        // `extension` of config.toml is the default of a new mail; a draft keeps its own.
        let configured = context.options.mail.postcardExtension
        if flow.invite { try await session.setInvite(true) }
        if flow.enforcePostcard { try await session.setEnforcePostcard(true) }
        var isDraft = false
        if case .editingDraft = await session.mode { isDraft = true }
        if let ext = flow.postcardExtension ?? (isDraft ? nil : configured), ext != (await session.state.draft.postcardExtension) {
            try await session.setExtension(ext)
        }
        for attachment in attachments { try await session.attach(attachment) }
        if let body {
            let text = place == .above ? body + (await session.state.draft.mail.text) : body
            try await session.setText(text)
        }
        if flow.confirmDowngrade { try await session.confirmDowngrade() }
    }

    /// Opens the editor once on `template` and applies what it holds; returns
    /// the problem of the edited text (the session keeps its last good state).
    private func editOnce(_ terminal: ComposeTerminal, _ file: EditorFile, _ template: inout String) async throws -> String? {
        try file.write(template)
        Interruption.editorRuns.withLock { $0 = true }
        defer { Interruption.editorRuns.withLock { $0 = false } }
        let status = try terminal.edit(file.path)
        // An editor ended by the hang-up or SIGTERM that came to us too: on a loaded machine our
        // handler may not have run yet. It is waited for while the edit still counts as running,
        // so that it keeps what the editor wrote (a full test run once saved the draft without it).
        if status == 128 + SIGHUP || status == 128 + SIGTERM { Interruption.awaitEnding(seconds: 10) }
        Interruption.parkIfEnding()
        let edited = try file.read()
        template = edited
        guard status == 0 else { return "the editor ended with status \(status)" }
        do {
            try await Self.apply(edited: edited, to: session)
            // Written anew, so that `Attached: N` numbers the attachments as they are now.
            template = try ComposeTemplate.text(for: await state().draft, redactor: context.options.redactor, mode: title)
            return nil
        } catch let problem as ComposeTemplate.Problem {
            return problem.description
        } catch let error as ComposeError {
            return error.description
        }
    }

    /// Applies an edited template to `session`.
    nonisolated private static func apply(edited: String, to session: ComposeSession) async throws {
        let current = await session.state.draft.mail.attachments
        let reading = try ComposeTemplate.read(edited, current: current)
        try await session.setRecipients(reading.recipients)
        try await session.setSubject(reading.subject)
        try await session.setText(reading.text)
        try await session.setAttachments(reading.attachments)
    }

    private func finishWithoutAsking() async throws {
        if flow.send { try await sendNow() } else { try await saveNow() }
    }

    /// Sends: refused before anything is queued when the mail cannot be sent
    /// (69 refused by policy or a downgrade not confirmed, 65 bad text);
    /// else queued in the outbox and delivered now as far as the server
    /// takes it. Queued is sent: 0, with one line when delivery must wait.
    private func sendNow() async throws {
        let before = await state()
        if flow.send {
            // Nobody was asked: who gets what, and every attachment, is said before anything goes.
            print(ComposeTerminal.screen(before, title: title, colour: false), terminator: "")
        }
        let outcome: ComposeState
        do { outcome = try await session.send() } catch let error as ComposeError {
            switch error.code {
            case .downgrade: throw CommandFailure(error.description + " (--confirm-downgrade)", status: .refused)
            case .notSendable(let why):
                // Markers that do not pair up leave no plan: bad text. A refused plan, or no signing key: policy.
                let status: ExitStatus = before.plan == nil && !before.draft.recipients.isEmpty ? .dataError : .refused
                throw CommandFailure(before.draft.recipients.isEmpty ? "the mail has no recipients" : why,
                                     status: before.draft.recipients.isEmpty ? .dataError : status)
            default: throw CommandFailure(error.description, status: .temporary)
            }
        }
        guard case .sent(let ids) = outcome.phase else { throw CommandFailure("not sent", status: .temporary) }
        print("sent: \(ids.count) cop\(ids.count == 1 ? "y" : "ies") queued in the outbox (\(ids.joined(separator: ", ")))"
              + (outcome.passwordNotice.map { "; " + noticeClause(sender: outcome.draft.mail.from.address, copy: $0) } ?? ""))
        let only = Set(ids.compactMap { Int64($0) })
        let report = try? await context.submission.deliver(only: only, ignoringSchedule: true, lockWait: 30)
        guard let report else {
            FileHandle.standardError.write(Data("mailsec: queued; delivery could not start ('mailsec outbox flush' sends it)\n".utf8))
            return
        }
        if let line = deliveryLine(report, queuedCopies: ids.count) {
            FileHandle.standardError.write(Data("mailsec: \(line)\n".utf8))
        } else {
            print("delivered to \(report.delivered) recipient\(report.delivered == 1 ? "" : "s")")
        }
    }

    private func saveNow() async throws {
        let outcome = try await session.saveAsDraft()
        guard case .savedAsDraft(let id) = outcome.phase else { throw CommandFailure("not saved", status: .temporary) }
        print("saved as draft \(id)")
    }
}

/// SIGINT, SIGHUP and SIGTERM while composing. Ctrl-C (SIGINT) is ignored
/// while the editor runs (it is the editor's, as git does); at the prompt, and
/// SIGHUP (the terminal went away) or SIGTERM at any time, the mail is saved
/// as a draft and the editor's file removed: a signal during the editor ends
/// the editor and keeps what its file holds when that reads as a template.
/// The command then ends with 128 + the signal's number. Nothing is lost and
/// no clear text is left behind.
final class Interruption: @unchecked Sendable {
    // @unchecked: the signal sources are made, resumed and cancelled by the composing thread only.
    static let editorRuns = Mutex(false)
    /// The editor's process while it runs: ended when a signal ends composing.
    static let editor = Mutex<pid_t?>(nil)
    static let signals: [Int32] = [SIGINT, SIGHUP, SIGTERM]
    /// Set by the first signal that ends composing: a second one waits for it.
    private static let ending = Mutex(false)
    private let sources: [any DispatchSourceSignal]

    /// `keep` applies the editor's file (the text it holds) to the session,
    /// when a signal comes while the editor runs.
    init(session: ComposeSession, workspace: EditorFile, keep: @escaping @Sendable (String) async -> Void) {
        sources = Self.signals.map { number in
            // A handler that does nothing, not SIG_IGN: the source sees the signal either
            // way, and a caught signal is reset by exec, so the editor gets its own signals.
            signal(number) { _ in }
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let editing = Interruption.editorRuns.withLock { $0 }
                if number == SIGINT && editing { return }
                guard !Interruption.ending.withLock({ ending in defer { ending = true }; return ending }) else { return }
                if editing, let editor = Interruption.editor.withLock({ $0 }) { kill(editor, SIGTERM) }
                // The composing thread parks (``parkIfEnding()``) or blocks on the terminal; this
                // task saves and ends the process, on the cooperative pool, never on that thread.
                Task {
                    if editing, let edited = try? workspace.read(), !edited.isEmpty { await keep(edited) }
                    _ = try? await session.saveAsDraft()
                    workspace.remove()
                    // The phase, not the save's answer: the composing thread may have saved (or sent) it just before.
                    let phase = await session.state.phase
                    let name = number == SIGINT ? "interrupted" : number == SIGHUP ? "hung up" : "terminated"
                    switch phase {
                    case .savedAsDraft(let id): FileHandle.standardError.write(Data("\nmailsec: \(name); saved as draft \(id)\n".utf8))
                    case .sent: FileHandle.standardError.write(Data("\nmailsec: \(name); the mail was sent\n".utf8))
                    default: FileHandle.standardError.write(Data("\nmailsec: \(name); the mail could not be saved\n".utf8))
                    }
                    exit(128 + number)
                }
            }
            source.resume()
            return source
        }
    }

    /// Waits for the end when a signal is ending composing, so that the
    /// composing thread, which the signal woke (the editor ended, the terminal
    /// gone), does not race the handler to save or to exit.
    /// Waits up to `seconds` for a signal's handler to start ending composing.
    static func awaitEnding(seconds: Int) {
        for _ in 0..<(seconds * 100) where !ending.withLock({ $0 }) { usleep(10_000) }
    }

    static func parkIfEnding() {
        guard ending.withLock({ $0 }) else { return }
        while true { sleep(60) }
    }

    func end() {
        for source in sources { source.cancel() }
        for number in Self.signals { signal(number, SIG_DFL) }
    }
}

/// The file the editor works on, 0600, in a private folder (0700) made for
/// it under `$XDG_RUNTIME_DIR` (a folder only its owner, the user, can
/// enter), else under `$TMPDIR` or /tmp, never in a shared folder itself;
/// overwritten and removed with the folder (and any swap file an editor left
/// there) at the end.
final class EditorFile: Sendable {
    let folder: String
    /// Why the folder is not under `$XDG_RUNTIME_DIR`, when it is not: one line to show.
    let fallback: String?
    var path: String { folder + "/mailsec-compose.txt" }

    init(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        var fallback: String?
        var base: String
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            if let unsafe = Self.unsafety(of: runtime) {
                fallback = "XDG_RUNTIME_DIR (\(InertText.line(runtime))) \(unsafe)"
                base = ""
            } else {
                base = runtime
            }
        } else {
            fallback = "XDG_RUNTIME_DIR is not set"
            base = ""
        }
        if base.isEmpty {
            base = environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
            fallback! += "; the editor's file is in a private folder under \(InertText.line(base))"
        }
        self.fallback = fallback
        do { folder = try PrivateFolder.unique(in: base, prefix: "mailsec-compose") } catch {
            throw CommandFailure(error.rawValue == EEXIST ? "cannot make a private folder for the editor in \(base)"
                                                          : "cannot make a folder for the editor in \(base)", status: .cannotCreate)
        }
    }

    /// Why `runtime` is no place for the editor's file (nil: it is): it must
    /// be an absolute path to a folder of ours that nobody else may enter.
    static func unsafety(of runtime: String) -> String? {
        guard runtime.hasPrefix("/") else { return "is not an absolute path" }
        var info = stat()
        guard stat(runtime, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return "is not a folder" }
        guard info.st_uid == getuid() else { return "is not yours" }
        guard info.st_mode & 0o077 == 0 else { return "can be entered by others" }
        return nil
    }

    func write(_ text: String) throws { try writeOutput(Array(text.utf8), to: path) }

    func read() throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    func remove() {
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > 0 {
            try? writeOutput([UInt8](repeating: 0, count: size), to: path)
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}
