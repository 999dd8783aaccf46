import Compose
import Foundation
import Platform
import Policy

/// The person's terminal while composing: `/dev/tty`, so that the prompt and
/// the editor work when standard input is the body (`--body-file -`) or
/// standard output is redirected.
final class ComposeTerminal {
    let fd: Int32
    let colour: Bool

    /// Opens `/dev/tty`; nil when the process has no terminal.
    init?() {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        self.fd = fd
        let environment = ProcessInfo.processInfo.environment
        colour = environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
    }

    deinit { close(fd) }

    func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// One line typed (without its line break); nil at the end of input.
    func readLine() -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == 10 { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    /// Asks `question`; the first letter of the answer, lowercased ("" for an
    /// empty answer), nil at the end of input.
    func ask(_ question: String) -> Character? {
        write(question)
        guard let line = readLine() else { return nil }
        return line.trimmingCharacters(in: .whitespaces).lowercased().first ?? " "
    }

    /// `text` in an ANSI colour when colours are on (green 32, yellow 33, red 31, bold 1).
    func paint(_ text: String, _ code: Int) -> String { colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }

    /// Runs `$VISUAL`, else `$EDITOR`, else `vi` on `path` through `/bin/sh`
    /// (as git does, so EDITOR may carry arguments), on this terminal.
    /// Returns the editor's exit status.
    func edit(_ path: String) throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let editor = [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
        // In our own process group, the terminal's foreground one: an editor in a group of its
        // own would be stopped (SIGTTIN) at its first read of the terminal.
        let started = ChildProcess.spawn("/bin/sh", ["sh", "-c", editor + " \"$1\"", editor, path],
                                         stdin: .descriptor(fd), stdout: .descriptor(fd), stderr: .descriptor(fd), ownGroup: false)
        guard case .success(let pid) = started else {
            throw CommandFailure("cannot start the editor (\(editor))", status: .temporary)
        }
        // A signal that ends composing ends the editor too (Interruption).
        Interruption.editor.withLock { $0 = pid }
        defer { Interruption.editor.withLock { $0 = nil } }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return ChildProcess.exitCode(status)
    }

    /// The plan of `state` as the prompt shows it: each recipient with its
    /// role, what it gets (the word says it without colour too) and why;
    /// both security states, the copies, the options, the problems.
    func screen(_ state: ComposeState, title: String) -> String { Self.screen(state, title: title, colour: colour) }

    /// ``screen(_:title:)`` without a terminal: `--send` prints it (without
    /// colour) before it sends, so that every recipient and attachment is shown.
    static func screen(_ state: ComposeState, title: String, colour: Bool) -> String {
        func paint(_ text: String, _ code: Int) -> String { colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        var lines = [paint("\(title) from \(state.draft.mail.from.address)", 1), ""]
        let width = max(12, state.recipients.map { $0.person.address.count + ($0.person.name.isEmpty ? 0 : $0.person.name.count + 3) }.max() ?? 0)
        for recipient in state.recipients {
            let who = ComposeDraft.Person.shown(recipient.person)
            let role = recipient.person.role.rawValue.capitalized.padding(toLength: 4, withPad: " ", startingAt: 0)
            let (word, colour, why) = Self.describe(recipient)
            lines.append("  \(role) \(who.padding(toLength: width, withPad: " ", startingAt: 0))  "
                         + paint(word.padding(toLength: 10, withPad: " ", startingAt: 0), colour) + why)
        }
        if state.recipients.isEmpty { lines.append("  (no recipients yet)") }
        lines.append("")
        let recipientState = state.recipientState?.rawValue ?? "-"
        lines.append("  recipients: \(recipientState)    mail: \(state.mailState?.name ?? "-")")
        // The password notice in its place: after the letters, before the postcards.
        var notice = state.plannedNotice.map {
            $0.isShown ? "  password → shown here when sent (no key of yours: not mailed)"
                : "  password notice → \($0.address) (\($0.isLetter ? "letter" : "plain"))"
        }
        for copy in state.plan?.copies ?? [] {
            if copy.kind == .postcard, let line = notice {
                lines.append(line)
                notice = nil
            }
            let who = copy.recipients.map { ($0.role == .bcc ? "bcc " : "") + $0.address }.joined(separator: ", ")
            lines.append("  copy: \(copy.kind.rawValue) to \(who)")
        }
        if let notice { lines.append(notice) }
        let draft = state.draft
        lines.append("  postcard for everybody: \(draft.enforcePostcard ? "on" : "off")    invite: \(draft.invite ? "on" : "off")"
                     + "    extension: \(draft.postcardExtension.rawValue)")
        var about = "  subject: " + (draft.mail.subject.isEmpty ? "(none)" : draft.mail.subject)
        if !draft.mail.attachments.isEmpty {
            about += "    attachments: " + draft.mail.attachments.map { "\($0.filename) (\($0.data.count) bytes)" }.joined(separator: ", ")
        }
        lines.append(about)
        if let problem = state.problem { lines.append(paint("  cannot be sent: ", 31) + problem) }
        if !state.downgrade.isEmpty && !state.downgradeConfirmed {
            lines.append(paint("  downgrade: ", 31) + "content that arrived encrypted would reach "
                         + state.downgrade.joined(separator: ", ") + " as a postcard; sending asks to confirm")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The word for what a recipient gets, its colour, and the reason.
    static func describe(_ recipient: RecipientStatus) -> (String, Int, String) {
        switch recipient.decision {
        case .letter(let fingerprint, let source)?: ("letter", 32, "key \(fingerprint) (\(source))")
        case .postcard(let why)?: ("postcard", 33, why.description)
        case .refused(.keyChanged(let change))?: ("REFUSED", 31, change.description + " (s: accept it)")
        case .refused(let why)?: ("REFUSED", 31, "a letter is required: " + why.description)
        case .unchanged?: ("unchanged", 0, "encrypted already")
        case nil:
            switch recipient.key {
            case .usable(let fingerprint, _): ("?", 0, "key \(fingerprint)")
            case .unusable: ("?", 0, "no usable key")
            case .missing: ("?", 0, "no key")
            }
        }
    }
}

extension ComposeDraft.Person {
    /// `Name <address>`, or the address alone.
    static func shown(_ person: ComposeDraft.Person) -> String {
        person.name.isEmpty ? person.address : "\(InertText.quoted(person.name)) <\(person.address)>"
    }
}
