import Foundation
import TestSupport
import Testing

@Suite("mailsec filter on the command line", .serialized)
struct FilterCLITests {
    let message = Array("From: alice@example.org\nTo: nobody@example.org\nSubject: s\n\nhello\n".utf8)

    /// A filter configuration in `home` that re-injects to 127.0.0.1:`port`.
    func filterConfig(_ home: TemporaryGnuPGHome, port: Int) throws -> String {
        let config = home.path + "/filter.toml"
        try """
            gnupg_home = "\(home.path)"
            log = "none"
            [reinject]
            method = "smtp"
            port = \(port)
            [journal]
            directory = "\(home.path)/journal"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        return config
    }

    @Test("an unreadable or mis-edited configuration, or wrong arguments, defer (75) with one line")
    func deferNeverBounce() throws {
        try withGnuPGHome { home throws in
            let broken = home.path + "/broken.toml"
            try "mode = \"strikt\"\n".write(toFile: broken, atomically: true, encoding: .utf8)
            for arguments in [["filter", "--config", "/nonexistent/filter.toml", "-f", "a@example.org", "--", "b@example.org"],
                              ["filter", "--config", broken, "-f", "a@example.org", "--", "b@example.org"],
                              ["filter", "--config", broken, "--", "b@example.org"],
                              ["filter", "--bogus"],
                              ["filter", "-f", "a@example.org", "--", "b@example.org"]] {  // no /etc/mailsec/filter.toml here
                let result = try mailsec(arguments, input: message, home: home)
                #expect(result.status == 75, "\(arguments): \(result.errors)")
                expectOneLine(result)
                #expect(result.errors.contains("deferred"))
            }
        }
    }

    @Test("the command line Postfix writes is read the same in every spelling the parser takes")
    func spellings() throws {
        let peer = try RecordingSMTPServer()
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let config = try filterConfig(home, port: peer.port)
            let spellings = [["filter", "--config", config, "-f", "alice@example.org", "--", "nobody@example.org"],
                             ["filter", "-f", "alice@example.org", "--config=\(config)", "--", "nobody@example.org"],
                             ["filter", "--config", config, "-f", "", "--", "nobody@example.org"],  // the null sender
                             // Given twice: through argument-parser, which takes the last.
                             ["filter", "--config", "/nonexistent", "--config", config, "-f", "alice@example.org", "--",
                              "nobody@example.org"]]
            for (number, arguments) in spellings.enumerated() {
                let mail = Array("From: alice@example.org\nTo: nobody@example.org\nSubject: s\nMessage-ID: <s\(number)@example.org>\n\nhello\n".utf8)
                let result = try mailsec(arguments, input: mail, home: home)
                #expect(result.status == 0, "\(arguments): \(result.errors)")
                #expect(peer.transactions.count == number + 1, "\(arguments)")
                #expect(peer.transactions.last?.sender == (arguments.contains("") ? "<>" : "<alice@example.org>"))
            }
            // A value that looks like an option: argument-parser refuses it, and the filter defers.
            for arguments in [["filter", "--config", config, "-f", "-x", "--", "b@example.org"]] {
                let result = try mailsec(arguments, input: message, home: home)
                #expect(result.status == 75, "\(arguments): \(result.errors)")
                expectOneLine(result)
            }
        }
    }

    @Test("per mail the filter starts gpg only: one version probe, one listing, one export, one sign+encrypt per letter")
    func helperProcesses() throws {
        let peer = try RecordingSMTPServer()
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            // gpg, gpgconf and gpgsm on PATH, each noting its call first.
            let bin = home.path + "/bin", log = home.path + "/calls.log"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false)
            for tool in ["gpg", "gpgconf", "gpgsm"] {
                try "#!/bin/sh\necho \"\(tool) $*\" >> '\(log)'\nexec /usr/bin/\(tool) \"$@\"\n"
                    .write(toFile: bin + "/" + tool, atomically: true, encoding: .utf8)
                chmod(bin + "/" + tool, 0o700)
            }
            let config = try filterConfig(home, port: peer.port)
            let mail = Array("From: alice@example.org\nTo: bob@example.org, nobody@example.org\nSubject: s\n\nhello\n".utf8)
            var environment = home.environment
            environment["PATH"] = bin + ":/usr/bin:/bin"
            let result = try run(Paths.mailsecExecutable.path, ["filter", "--config", config, "-f", "alice@example.org", "--",
                                                                 "bob@example.org", "nobody@example.org", "carol@example.org"],
                                 input: mail, environment: environment)
            #expect(result.status == 0, "\(result.errors)")
            let calls = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            #expect(!calls.contains { $0.hasPrefix("gpgconf") || $0.hasPrefix("gpgsm") }, "\(calls)")
            #expect(calls.filter { $0 == "gpg --version" }.count == 1, "\(calls)")
            #expect(calls.filter { $0.contains("--list-keys") || $0.contains("--check-sigs") }.count == 1, "\(calls)")
            #expect(calls.filter { $0.contains("--export") }.count == 1, "\(calls)")
            #expect(calls.filter { $0.contains("--encrypt") }.count == 2, "Bob's letter and Carol's (Bcc): \(calls)")
            #expect(calls.count == 5, "\(calls)")
        }
    }

    @Test("a mail rejected early gets its 65 and one line within seconds though GPGME's gpg --version probe hangs")
    func hungProbe() throws {
        let peer = try RecordingSMTPServer()
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            // gpg on PATH: `--version` (GPGME's probe) notes its process id and hangs; all else is the real gpg.
            let bin = home.path + "/bin", pids = home.path + "/hung.pids"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false)
            try """
                #!/bin/sh
                case "$*" in *--version*) echo $$ >> '\(pids)'; exec sleep 60;; esac
                exec /usr/bin/gpg "$@"
                """.write(toFile: bin + "/gpg", atomically: true, encoding: .utf8)
            chmod(bin + "/gpg", 0o700)
            defer {  // the hung probes outlive the filter (it leaves them): stop them
                let listed = (try? String(contentsOfFile: pids, encoding: .utf8)) ?? ""
                for pid in listed.split(separator: "\n").compactMap({ pid_t($0) }) where pid > 1 { kill(pid, SIGKILL) }
            }
            let config = home.path + "/filter.toml"
            try """
                gnupg_home = "\(home.path)"
                timeout = 30
                log = "none"
                [reinject]
                method = "smtp"
                port = \(peer.port)
                [journal]
                directory = "\(home.path)/journal"
                """.write(toFile: config, atomically: true, encoding: .utf8)
            var environment = home.environment
            environment["PATH"] = bin + ":/usr/bin:/bin"
            let badRecipients = ["bob", "@example.org", "bob@", "a@b@c", "-oQ/tmp@example.org", "bob@example.org\r\nRCPT TO:<eve@example.net>"]
            for round in 0..<3 {
                let bad = badRecipients.randomElement()!
                let recipients = (["bob@example.org", "nobody@example.org", bad]).shuffled()
                let started = Date()
                let result = try run(Paths.mailsecExecutable.path, ["filter", "--config", config, "-f", "alice@example.org", "--"] + recipients,
                                     input: message, environment: environment)
                let elapsed = Date().timeIntervalSince(started)
                #expect(result.status == 65, "round \(round), \(bad.debugDescription): \(result.status) \(result.errors)")
                expectOneLine(result)
                #expect(result.errors.contains("rejected") && !result.errors.contains("eve@"), "\(result.errors)")
                #expect(elapsed < 10, "waited \(elapsed) s, the watchdog's limit is 30 s")
            }
            // The stand-in did hang: each run started its probe, which is still sleeping.
            func hung() -> [pid_t] {
                ((try? String(contentsOfFile: pids, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { pid_t($0) }
            }
            let waited = Date()
            while hung().count < 3 && Date().timeIntervalSince(waited) < 10 { usleep(50_000) }  // a loaded machine
            let listed = hung()
            #expect(listed.count == 3, "\(listed)")
            #expect(listed.allSatisfy { kill($0, 0) == 0 }, "\(listed)")
            #expect(peer.transactions.isEmpty)
        }
    }

    @Test("the whole run has a time limit: past it, 75")
    func watchdog() throws {
        let silent = try SilentServer()
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let config = home.path + "/filter.toml"
            try """
                gnupg_home = "\(home.path)"
                timeout = 2
                log = "none"
                [reinject]
                method = "smtp"
                port = \(silent.port)
                timeout = 60
                [journal]
                directory = "\(home.path)/journal"
                """.write(toFile: config, atomically: true, encoding: .utf8)
            let started = Date()
            let result = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--", "nobody@example.org"],
                                     input: message, home: home)
            #expect(result.status == 75)
            expectOneLine(result)
            #expect(result.errors.contains("no result within 2 s"))
            #expect(Date().timeIntervalSince(started) < 20)
        }
    }
}
