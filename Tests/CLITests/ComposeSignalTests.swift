import Foundation
import TestSupport
import Testing

/// SIGHUP, SIGTERM and SIGINT while composing, sent to the real process at a
/// real terminal (tmux), with an editor stand-in that writes the template
/// and, when it is to be caught in the editor, stays.
@Suite("compose: signals save the draft and leave no file", .serialized)
struct ComposeSignalTests {
    /// Where the editor's file is to be made.
    enum Runtime: String, CaseIterable, Sendable { case privateFolder, openFolder, unset }

    struct Case: Sendable, CustomStringConvertible {
        let signal: Int32
        let inEditor: Bool
        let runtime: Runtime
        var description: String { "signal \(signal), \(inEditor ? "in the editor" : "at the prompt"), XDG_RUNTIME_DIR \(runtime)" }
    }

    static let cases = [
        Case(signal: SIGTERM, inEditor: false, runtime: .privateFolder),
        Case(signal: SIGHUP, inEditor: false, runtime: .openFolder),
        Case(signal: SIGINT, inEditor: false, runtime: .unset),
        Case(signal: SIGTERM, inEditor: true, runtime: .unset),
        Case(signal: SIGHUP, inEditor: true, runtime: .privateFolder),
        // 0: the terminal itself goes away (its server is killed) while the editor runs.
        Case(signal: 0, inEditor: true, runtime: .openFolder),
    ]

    /// The editor stand-in: finds the mailsec process above it and writes its
    /// pid, where the file is and its folder's mode; fills in the template; with
    /// HOLD set says it is ready and stays (as an editor the person works in).
    static func editor(in folder: String) throws -> String {
        let path = folder + "/stand-in.sh"
        try #"""
            #!/bin/sh
            p=$PPID; i=0
            while [ "$(cat /proc/$p/comm)" != mailsec ] && [ $i -lt 10 ]; do p=$(awk '{ print $4 }' /proc/$p/stat); i=$((i + 1)); done
            echo "$p" > "$INFO.pid"
            echo "$1" > "$INFO.path"
            stat -c %a "$(dirname "$1")" > "$INFO.mode"
            { printf 'To: dave@example.net\nCc:\nBcc:\nSubject: %s\n\n%s\n' "$SUBJ" "$BODY"; sed -n '/^# -* >8 -*$/,$p' "$1"; } > "$1.new"
            cat "$1.new" > "$1"; rm -f "$1.new"
            if [ -n "$HOLD" ]; then touch "$INFO.ready"; exec sleep 30; fi
            """#.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return path
    }

    func waitFor(_ path: String, seconds: Double = 90) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if FileManager.default.fileExists(atPath: path) { return true }
            usleep(100_000)
        }
        return false
    }

    @Test("SIGHUP, SIGTERM and SIGINT at the prompt or in the editor (and the terminal closed): the draft is in the store, encrypted, with what the editor wrote; no file remains; the editor's folder is private and says where it is when XDG_RUNTIME_DIR is unset or open", arguments: ComposeSignalTests.cases)
    func signalSavesDraft(_ given: Case) throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let subject = "Sig" + UUID().uuidString.prefix(8), body = "Body" + UUID().uuidString.prefix(12)
        let info = world.folder + "/info"
        let tmp = world.folder + "/tmp", open = world.folder + "/open"
        mkdir(tmp, 0o700)
        mkdir(open, 0o700)
        chmod(open, 0o755)
        var environment = world.environment
        environment["EDITOR"] = try Self.editor(in: world.folder)
        environment["INFO"] = info
        environment["SUBJ"] = subject
        environment["BODY"] = body
        environment["TMPDIR"] = tmp
        environment["TERM"] = "xterm-256color"
        if given.inEditor { environment["HOLD"] = "1" }
        var command = [Paths.mailsecExecutable.path, "compose", "--config", world.config]
        switch given.runtime {
        case .privateFolder: break
        case .openFolder: environment["XDG_RUNTIME_DIR"] = open
        case .unset:
            environment.removeValue(forKey: "XDG_RUNTIME_DIR")
            command = ["env", "-u", "XDG_RUNTIME_DIR"] + command
        }
        let terminal = try TmuxTerminal(folder: world.folder, command, environment: environment)
        defer { terminal.stop() }
        if given.inEditor {
            #expect(waitFor(info + ".ready"), "the editor did not start")
        } else {
            try terminal.wait { $0.contains(ComposeTerminalTests.prompt) }
        }
        let pid = try #require(Int32((try String(contentsOfFile: info + ".pid", encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
        let file = try String(contentsOfFile: info + ".path", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(FileManager.default.fileExists(atPath: file))
        #expect(try String(contentsOfFile: info + ".mode", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == "700")
        switch given.runtime {
        case .privateFolder: #expect(file.hasPrefix(world.runtime + "/"), "\(file)")
        case .openFolder, .unset: #expect(file.hasPrefix(tmp + "/"), "\(file)")
        }

        if given.signal == 0 {
            terminal.stop()  // the terminal goes away: SIGHUP to the foreground
            let end = Date().addingTimeInterval(60)
            while Date() < end, kill(pid, 0) == 0 { usleep(100_000) }
            #expect(kill(pid, 0) != 0, "mailsec still runs after its terminal went away")
        } else {
            #expect(kill(pid, given.signal) == 0)
            let name = given.signal == SIGINT ? "interrupted" : given.signal == SIGHUP ? "hung up" : "terminated"
            let screen = try terminal.wait { $0.contains("mailsec: \(name); saved as draft") }
            #expect(terminal.status() == 128 + given.signal, "\(screen)")
            if given.runtime != .privateFolder {
                let why = given.runtime == .unset ? "XDG_RUNTIME_DIR is not set" : "can be entered by others"
                let joined = screen.replacingOccurrences(of: "\n", with: "")  // the window wraps long lines
                #expect(joined.contains(why) && joined.contains("private folder under \(tmp)"), "\(screen)")
            }
        }
        // No file, no folder left; the draft in the store, encrypted, with what the editor wrote.
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(!FileManager.default.fileExists(atPath: (file as NSString).deletingLastPathComponent))
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.runtime).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp).isEmpty)
        let list = try world.ms(["drafts"])
        #expect(list.output.contains(subject) && list.output.contains("dave@example.net"), "\(list.output) \(list.errors)")
        let id = String(list.output.prefix(8))
        #expect(try world.ms(["drafts", "show", id]).output.contains(body))
        let raw = try world.storeBytes()
        #expect(!raw.contains(body) && !raw.contains(subject), "the draft is readable in the store")
        #expect(world.server.transactions.isEmpty)
    }
}
