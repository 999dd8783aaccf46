import Foundation
import TestSupport
import Testing

/// A private tmux server (its own socket) running one command in a window of
/// fixed size; keys are typed with send-keys and the screen read with
/// capture-pane. `stop()` kills the server.
final class TmuxTerminal {
    let socket: String
    let statusFile: String

    /// Starts `arguments` (with `environment` set) in a 100×50 window; its exit
    /// status is written to a file when it ends, and the window stays.
    init(folder: String, _ arguments: [String], environment: [String: String], input: String? = nil) throws {
        socket = folder + "/tmux-\(UUID().uuidString.prefix(8)).sock"  // a server of its own
        statusFile = folder + "/status-\(UUID().uuidString)"
        func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let assignments = environment.sorted { $0.key < $1.key }.map { quoted("\($0.key)=\($0.value)") }.joined(separator: " ")
        var command = "env " + assignments + " " + arguments.map(quoted).joined(separator: " ")
        if let input { command = "printf %s " + quoted(input) + " | " + command }
        command += "; echo $? > " + quoted(statusFile) + "; sleep 600"
        // Through python3 with every other descriptor closed: the tmux server this
        // starts must not inherit what Foundation watches to see the client end.
        // The test runner blocks signals in its threads: the server and its panes get none blocked.
        let start = "import signal, subprocess, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
            + "sys.exit(subprocess.call(sys.argv[1:], close_fds=True, stdin=subprocess.DEVNULL))"
        let result = try run("python3", ["-c", start, "tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "50",
                                         command])
        guard result.status == 0 else { throw TmuxFailure(description: "tmux did not start: \(result.errors)") }
    }

    /// What the window shows, with its scroll-back.
    func screen() throws -> String { try run("tmux", ["-S", socket, "capture-pane", "-p", "-S", "-300"]).output }

    /// Types `keys` and Enter.
    func type(_ keys: String) throws {
        _ = try run("tmux", ["-S", socket, "send-keys", "-l", keys])
        _ = try run("tmux", ["-S", socket, "send-keys", "Enter"])
    }

    /// Waits until `ready` holds for the screen (up to `seconds`); returns the screen.
    @discardableResult
    func wait(seconds: Double = 90, sourceLocation: SourceLocation = #_sourceLocation, until ready: (String) -> Bool) throws -> String {
        let end = Date().addingTimeInterval(seconds)
        var last = ""
        while Date() < end {
            last = try screen()
            if ready(last) { return last }
            usleep(200_000)
        }
        Issue.record("the screen did not show what was awaited:\n\(last)", sourceLocation: sourceLocation)
        return last
    }

    /// The command's exit status, once it ended.
    func status(seconds: Double = 60) -> Int32? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let text = try? String(contentsOfFile: statusFile, encoding: .utf8), let status = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return status
            }
            usleep(200_000)
        }
        return nil
    }

    /// Kills the server (and, should it linger, its process).
    func stop() {
        let pid = (try? run("tmux", ["-S", socket, "display-message", "-p", "#{pid}"]))
            .flatMap { Int32($0.output.trimmingCharacters(in: .whitespacesAndNewlines)) }
        _ = try? run("tmux", ["-S", socket, "kill-server"])
        if let pid {
            for _ in 0..<20 where kill(pid, 0) == 0 { usleep(50_000) }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
    }
}

struct TmuxFailure: Error, CustomStringConvertible {
    let description: String
}

/// The part of `screen` after the last time `marker` appears in it.
func after(_ marker: String, in screen: String) -> String {
    screen.range(of: marker, options: .backwards).map { String(screen[$0.upperBound...]) } ?? ""
}

@Suite("mailsec compose at a real terminal (tmux)", .serialized)
struct ComposeTerminalTests {
    static let prompt = "save [d]raft"

    /// An EDITOR script: the first run fills in recipients, subject and a
    /// private span; a later run (edit again) changes the subject.
    static func editorScript(in folder: String) throws -> String {
        let path = folder + "/editor.sh"
        try #"""
            #!/bin/sh
            f="$1"
            if grep -q '^Subject: Lunch$' "$f"; then sed -i 's/^Subject: Lunch$/Subject: Lunch moved/' "$f"; exit 0; fi
            { printf 'To: Bob <bob@example.org>, dave@example.net\nCc:\nBcc:\nSubject: Lunch\n\nSee you at [[private]]Luigi, table 12[[/private]] at noon.\n# not a comment: the text keeps this line\n\n'
              sed -n '/^# -* >8 -*$/,$p' "$f"; } > "$f.new"
            cat "$f.new" > "$f"; rm -f "$f.new"
            """#.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return path
    }

    @Test("editor, plan, toggles, edit again, send: queued and delivered; the plan tells letter and postcard apart in words")
    func toSent() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        var environment = world.environment
        environment["EDITOR"] = try Self.editorScript(in: world.folder)
        environment["TERM"] = "xterm-256color"
        let terminal = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "compose", "--config", world.config],
                                        environment: environment)
        defer { terminal.stop() }
        let first = try terminal.wait { $0.contains(Self.prompt) }
        let plan = after("new mail", in: first)
        let bob = try #require(plan.split(separator: "\n").first { $0.contains("bob@example.org") })
        let dave = try #require(plan.split(separator: "\n").first { $0.contains("dave@example.net") && $0.contains("To") })
        #expect(bob.contains("letter") && bob.contains("key "), "\(bob)")
        #expect(dave.contains("postcard") && dave.contains("no key"), "\(dave)")
        #expect(plan.contains("recipients: mixed") && plan.contains("mail: extendedPostcard(censored)"), "\(plan)")
        #expect(plan.contains("copy: letter to bob@example.org") && plan.contains("copy: postcard to dave@example.net"), "\(plan)")
        if let out = ProcessInfo.processInfo.environment["MAILSEC_SCREEN_OUT"] {
            try first.write(toFile: out, atomically: true, encoding: .utf8)
        }

        try terminal.type("p")
        var now = after("new mail", in: try terminal.wait { after("new mail", in: $0).contains("postcard for everybody: on") })
        #expect(now.contains("recipients: mixed") && !now.contains("copy: letter"), "\(now)")
        #expect(now.split(separator: "\n").first { $0.contains("bob@example.org") }?.contains("postcard enforced") == true, "\(now)")
        try terminal.type("p")
        now = after("new mail", in: try terminal.wait { after("new mail", in: $0).contains("postcard for everybody: off") })
        try terminal.type("i")
        now = after("new mail", in: try terminal.wait { after("new mail", in: $0).contains("invite: on") })
        try terminal.type("e")
        now = after("new mail", in: try terminal.wait { after("new mail", in: $0).contains("subject: Lunch moved") })
        #expect(now.contains("invite: on"), "the options stay across an edit")
        try terminal.type("z")
        try terminal.wait { $0.contains("answer with one letter") }
        try terminal.type("s")
        let end = try terminal.wait { $0.contains("sent: ") && $0.contains("delivered to") }
        #expect(end.contains("sent: 2 copies queued in the outbox"), "\(end)")
        #expect(terminal.status() == 0)

        let transactions = world.server.transactions
        #expect(transactions.count == 2)
        let postcard = try #require(transactions.first { $0.recipients == ["<dave@example.net>"] })
        let text = try decodedText(postcard.data)
        #expect(!postcard.data.contains("Luigi") && !text.contains("Luigi") && text.contains("at noon."), "\(text)")
        #expect(text.contains("# not a comment"), "a text line starting with # is kept")
        #expect(header("Subject", in: postcard.data) == "Lunch moved")
        #expect(postcard.data.contains("Autocrypt:"), "invited")
        let letter = try #require(transactions.first { $0.recipients == ["<bob@example.org>"] })
        #expect(letter.data.contains("multipart/encrypted"))
        // The editor's folder and file are gone.
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.runtime).isEmpty)
    }

    @Test("partially encrypted postcards: the plan shows the password notice to the sender (letter; without a key plain when notice = \"plain\", else shown here) between the letters and the postcards; e[x]tension off takes it away, on brings it back", arguments: [(true, nil), (false, "plain"), (false, nil)])
    func noticeInPlan(senderHasKey: Bool, notice: String?) throws {
        let world = try NoticeWorld(from: senderHasKey ? "alice@example.org" : "zed@example.org", notice: notice)
        defer { world.close() }
        var environment = world.environment
        environment["TERM"] = "xterm-256color"
        let terminal = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "compose", "--config", world.config,
                                                               "--to", "dora@example.net", "--cc", senderHasKey ? "bob@example.org" : "erin@example.net",
                                                               "--subject", "Plan", "--body-file", "-", "--no-edit"],
                                        environment: environment, input: "Meet at [[private]]the old mill[[/private]].\n")
        defer { terminal.stop() }
        let sender = world.from
        let line = !senderHasKey && notice == nil ? "password → shown here when sent (no key of yours: not mailed)"
            : "password notice → \(sender) (\(senderHasKey ? "letter" : "plain"))"
        let plan = after("new mail", in: try terminal.wait { $0.contains(Self.prompt) })
        let lines = plan.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let copies = lines.filter { $0.hasPrefix("copy: ") || $0.hasPrefix("password") }
        let expected = senderHasKey ? ["copy: letter to bob@example.org", line, "copy: postcard to dora@example.net"]
            : [line, "copy: postcard to dora@example.net, erin@example.net"]
        #expect(copies == expected, "\(plan)")
        try terminal.type("x")
        let off = after("new mail", in: try terminal.wait { after("new mail", in: $0).contains("extension: censored") })
        #expect(!off.contains("password"), "\(off)")
        try terminal.type("x")
        let on = after("new mail", in: try terminal.wait { after("new mail", in: $0).contains("extension: partially-encrypted") })
        #expect(on.contains(line), "\(on)")
        try terminal.type("q")
        try terminal.wait { $0.contains("Discard this mail? [y/N]") }
        try terminal.type("y")
        try terminal.wait { $0.contains("discarded") }
        #expect(terminal.status() == 0)
        #expect(try world.pagesHeld() == 0 && world.server.transactions.isEmpty, "planning published or sent something")
    }

    @Test("saved as draft from the prompt; the text from standard input while the prompt reads the terminal; discard asks")
    func toDraft() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        var environment = world.environment
        environment["EDITOR"] = "true"
        let terminal = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "compose", "--config", world.config,
                                                               "--to", "carol@example.org", "--subject", "Draft me", "--body-file", "-"],
                                        environment: environment, input: "kept as a draft\n")
        defer { terminal.stop() }
        let screen = try terminal.wait { $0.contains(Self.prompt) }
        #expect(screen.contains("recipients: allSecure") && screen.contains("mail: letter"), "\(screen)")
        try terminal.type("d")
        let end = try terminal.wait { $0.contains("saved as draft ") }
        #expect(terminal.status() == 0, "\(end)")
        let queued = try world.outbox()
        #expect(world.server.transactions.isEmpty && queued.isEmpty)
        let list = try world.ms(["drafts"])
        #expect(list.output.contains("Draft me") && list.output.contains("carol@example.org"), "\(list.output)")
        #expect(try world.ms(["drafts", "show", String(list.output.prefix(8))]).output.contains("kept as a draft"))

        let discard = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "compose", "--config", world.config,
                                                              "--to", "carol@example.org", "--no-edit"], environment: environment)
        defer { discard.stop() }
        try discard.wait { $0.contains(Self.prompt) }
        try discard.type("q")
        try discard.wait { $0.contains("Discard this mail? [y/N]") }
        try discard.type("y")
        try discard.wait { $0.contains("discarded") }
        #expect(discard.status() == 0)
        #expect(try world.ms(["drafts"]).output.split(separator: "\n").count == 1, "nothing more saved")

        // The end of input at the prompt (Ctrl-D): kept as a draft, not lost.
        let gone = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "compose", "--config", world.config,
                                                           "--to", "carol@example.org", "--subject", "Kept", "--no-edit"],
                                    environment: environment)
        defer { gone.stop() }
        try gone.wait { $0.contains(Self.prompt) }
        _ = try run("tmux", ["-S", gone.socket, "send-keys", "C-d"])
        try gone.wait { $0.contains("saved as draft ") }
        #expect(gone.status() == 0)
        #expect(try world.ms(["drafts"]).output.contains("Kept"))
    }

    @Test("a forward of a letter to a postcard recipient asks at the prompt; no keeps it, yes sends; Ctrl-C at the prompt keeps a draft")
    func downgradeAtPrompt() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let letter = try world.letterFromBob()
        var environment = world.environment
        environment["EDITOR"] = "true"
        let terminal = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "forward", letter, "--config", world.config,
                                                               "--to", "frank@example.net"], environment: environment)
        defer { terminal.stop() }
        let screen = try terminal.wait { $0.contains(Self.prompt) }
        #expect(screen.contains("downgrade: content that arrived encrypted would reach frank@example.net"), "\(screen)")
        try terminal.type("s")
        try terminal.wait { $0.contains("Send it to them as a postcard anyway? [y/N]") }
        try terminal.type("n")
        try terminal.wait { $0.components(separatedBy: Self.prompt).count == 3 }
        let queued = try world.outbox()
        #expect(world.server.transactions.isEmpty && queued.isEmpty, "no is no")
        try terminal.type("s")
        try terminal.wait { $0.components(separatedBy: "postcard anyway?").count == 3 }
        try terminal.type("y")
        try terminal.wait { $0.contains("delivered to 1 recipient") }
        #expect(terminal.status() == 0)
        let sent = try #require(world.server.transactions.first)
        let text = try decodedText(sent.data)
        #expect(sent.recipients == ["<frank@example.net>"] && text.contains("7405"))

        let interrupted = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "reply", letter, "--config", world.config,
                                                                  "--body-file", "-"], environment: environment, input: "Noted.\n")
        defer { interrupted.stop() }
        try interrupted.wait { $0.contains(Self.prompt) }
        _ = try run("tmux", ["-S", interrupted.socket, "send-keys", "C-c"])
        try interrupted.wait { $0.contains("interrupted; saved as draft") }
        #expect(interrupted.status() == 130)
        #expect(try world.ms(["drafts"]).output.contains("Re: Vault"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.runtime).isEmpty, "the editor's file is gone")
    }

    @Test("a template with a mistake: the prompt names the line, refuses to send, and the next edit starts from the mistake")
    func mistakeInTemplate() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let script = world.folder + "/typo.sh"
        try #"""
            #!/bin/sh
            if grep -q '^Tu:' "$1"; then sed -i 's/^Tu:/To:/' "$1"; exit 0; fi
            sed -i 's/^To:.*$/Tu: bob@example.org/; s/^Subject:.*$/Subject: Typo/' "$1"
            """#.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o700)
        var environment = world.environment
        environment["EDITOR"] = script
        let terminal = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "compose", "--config", world.config],
                                        environment: environment)
        defer { terminal.stop() }
        let screen = try terminal.wait { $0.contains(Self.prompt) }
        #expect(screen.contains("the edited text has a problem: line 1 is not a header line"), "\(screen)")
        try terminal.type("s")
        try terminal.wait { $0.contains("edit the text again first") }
        try terminal.type("e")
        let fixed = try terminal.wait { after("new mail", in: $0).contains("bob@example.org") }
        #expect(after("new mail", in: fixed).contains("subject: Typo") && !after("new mail", in: fixed).contains("has a problem"))
        try terminal.type("d")
        try terminal.wait { $0.contains("saved as draft ") }
        #expect(terminal.status() == 0)
        #expect(world.server.transactions.isEmpty)
    }
}
