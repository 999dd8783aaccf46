import Foundation
import TestSupport
import Testing

/// A sendmail stand-in (a program, not Postfix) that takes a copy only when
/// it finishes, after `delay` seconds, into `outbox/`: one `.args` file per copy.
private func standInSendmail(_ folder: String, delay: Double) throws -> String {
    try? FileManager.default.createDirectory(atPath: folder + "/outbox", withIntermediateDirectories: true)
    let script = folder + "/sendmail"
    try """
        #!/bin/sh
        tmp=$(mktemp '\(folder)/incoming.XXXXXX')
        cat > "$tmp"
        sleep \(delay)
        printf '%s\\n' "$*" > "$tmp.args"
        mv "$tmp.args" '\(folder)/outbox/'"$(basename "$tmp").args"
        rm -f "$tmp"
        """.write(toFile: script, atomically: true, encoding: .utf8)
    chmod(script, 0o700)
    return script
}

/// Recipients of every copy in `folder/outbox`, counted.
private func copiesPerRecipient(_ folder: String) -> [String: Int] {
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/outbox")) ?? []).filter { $0.hasSuffix(".args") }
    var counts: [String: Int] = [:]
    for name in names {
        let args = (try? String(contentsOfFile: folder + "/outbox/" + name, encoding: .utf8)) ?? ""
        for recipient in args.trimmingCharacters(in: .newlines).components(separatedBy: " -- ").last?.split(separator: " ") ?? [] {
            counts[String(recipient), default: 0] += 1
        }
    }
    return counts
}

@Suite("Faults on the command line: signals, damaged keyrings, hostile envelopes", .serialized)
struct FaultCLITests {
    let mail = Array("""
        From: Alice <alice@example.org>
        To: bob@example.org, nobody@example.org
        Subject: s
        Message-ID: <sig.\(UUID())@example.org>

        hello

        """.utf8)
    let recipients = ["bob@example.org", "nobody@example.org", "carol@example.org"]

    func config(_ home: TemporaryGnuPGHome, sendmail: String) throws -> String {
        let path = home.path + "/filter.toml"
        try """
            gnupg_home = "\(home.path)"
            log = "none"
            [reinject]
            sendmail = ["\(sendmail)"]
            [journal]
            directory = "\(home.path)/state/journal"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("SIGTERM or SIGINT to a running filter: 75, and the retry gives every recipient exactly one copy",
          arguments: [SIGTERM, SIGINT])
    func signalled(number: Int32) throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let folder = home.path + "/mta"
            let slow = try standInSendmail(folder, delay: 1.5)
            let config = try config(home, sendmail: slow)
            // Bob's letter, Carol's (Bcc) letter, nobody's postcard: three copies, 1.5 s each.
            let process = Process()
            process.executableURL = Paths.mailsecExecutable
            process.arguments = ["filter", "--config", config, "-f", "alice@example.org", "--"] + recipients
            process.environment = home.environment
            let input = Pipe(), errors = Pipe()
            process.standardInput = input
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            input.fileHandleForWriting.write(Data(mail))
            try input.fileHandleForWriting.close()
            // Wait for the first copy to be taken, then signal during the second.
            let started = Date()
            while copiesPerRecipient(folder).isEmpty && Date().timeIntervalSince(started) < 30 { usleep(20_000) }
            usleep(300_000)
            kill(process.processIdentifier, number)
            process.waitUntilExit()
            let line = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 75, "\(line)")
            #expect(line.contains("stopped by a signal"), "\(line)")
            let afterSignal = copiesPerRecipient(folder)
            #expect(afterSignal.values.reduce(0, +) >= 1 && afterSignal.values.reduce(0, +) < 3, "\(afterSignal)")

            let fast = try standInSendmail(folder, delay: 0)
            _ = try self.config(home, sendmail: fast)
            let retry = try run(Paths.mailsecExecutable.path, ["filter", "--config", config, "-f", "alice@example.org", "--"] + recipients,
                                input: mail, environment: home.environment)
            #expect(retry.status == 0, "\(retry.errors)")
            #expect(copiesPerRecipient(folder) == Dictionary(uniqueKeysWithValues: recipients.map { ($0, 1) }))
        }
    }

    @Test("a mail rejected before any key look-up, GnuPG's set-up still starting beside it, ends in 65 and one line, every time")
    func rejectedWhileGnuPGStarts() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let folder = home.path + "/mta"
            let config = try config(home, sendmail: try standInSendmail(folder, delay: 0))
            let hostile = ["bob@example.org\r\n", "bob@example.org\n", "bo b@example.org", "<bob@example.org", "a@b@c",
                           "bob(x)@example.org", "\u{2028}bob@example.org", "", "-oQ/tmp@example.org"]
            var generator = SystemRandomNumberGenerator()
            for round in 0..<12 {
                let bad = hostile.randomElement(using: &generator)!
                var recipients = ["bob@example.org", "nobody@example.org"]
                recipients.insert(bad, at: Int.random(in: 0...recipients.count, using: &generator))
                let result = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--"] + recipients, input: mail, home: home)
                #expect(result.status == 65, "round \(round), \(bad.debugDescription): \(result.errors)")
                expectOneLine(result)
            }
            #expect(copiesPerRecipient(folder).isEmpty)
        }
    }

    @Test("gpg killed while it encrypts (SIGKILL, as the OOM killer or an admin does): encrypt exits 75 with one line and writes nothing")
    func gpgKilledWhileEncrypting() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            // A letter large enough that gpg is still reading it when it is found: 6 to 10 MB of random words.
            var generator = SystemRandomNumberGenerator()
            let words = ["saffron", "dinner", "lorem", "ipsum", "table", "wine"]
            var body = ""
            while body.utf8.count < Int.random(in: 6_000_000...10_000_000, using: &generator) {
                body += (0..<12).map { _ in words.randomElement(using: &generator)! }.joined(separator: " ") + "\n"
            }
            let letter = home.path + "/letter.eml"
            try Data((String(decoding: demoMail, as: UTF8.self) + body).utf8).write(to: URL(fileURLWithPath: letter))
            // The gpg that encrypts for this home (its environment names it) is killed as soon as it is seen.
            let script = """
                "$1" encrypt --out "$2" "$3" 2>"$4" & P=$!
                killed=0
                for i in $(seq 1 6000); do
                  for G in $(pgrep -x gpg); do
                    if grep -qa -- --encrypt /proc/$G/cmdline 2>/dev/null && grep -qa -- "$GNUPGHOME" /proc/$G/environ 2>/dev/null; then
                      kill -9 $G && killed=1 && break 2
                    fi
                  done
                  kill -0 $P 2>/dev/null || break
                  sleep 0.005
                done
                wait $P; echo "$? $killed"
                """
            let out = home.path + "/out", errors = home.path + "/errors"
            let result = try run("bash", ["-c", script, "kill", Paths.mailsecExecutable.path, out, letter, errors],
                                 environment: ProcessInfo.processInfo.environment.merging(home.environment) { $1 })
            let fields = result.output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            try #require(fields.count == 2 && fields[1] == "1", "gpg was not seen encrypting: \(result.output) \(result.errors)")
            let line = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            #expect(fields[0] == "75", "exit \(fields[0]): \(line)")
            #expect(line.hasPrefix("mailsec: ") && line.split(separator: "\n").count == 1, "\(line)")
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).isEmpty, "something was written")
        }
    }

    @Test("a damaged keyring: encrypt, plan and the filter exit 75 with one line; none reports 'no key'")
    func damagedKeyring() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let folder = home.path + "/mta"
            let config = try config(home, sendmail: try standInSendmail(folder, delay: 0))
            let keyring = home.path + "/pubring.kbx"
            let good = try Data(contentsOf: URL(fileURLWithPath: keyring))
            var generator = SystemRandomNumberGenerator()
            for cut in [0, 40, good.count / 2, good.count - 3].map({ $0 + Int.random(in: 0..<3, using: &generator) }) {
                try good.prefix(cut).write(to: URL(fileURLWithPath: keyring))
                for arguments in [["encrypt", "--out", home.path + "/out", "-"], ["plan", "-"], ["plan", "--json", "-"],
                                  ["filter", "--config", config, "-f", "alice@example.org", "--", "bob@example.org", "nobody@example.org"]] {
                    try? FileManager.default.removeItem(atPath: home.path + "/out")
                    let result = try mailsec(arguments, input: mail, home: home)
                    #expect(result.status == 75, "cut at \(cut): \(arguments[0]): \(result.errors)")
                    expectOneLine(result)
                    #expect(result.errors.contains("keyring") && !result.errors.contains("no key"), "\(result.errors)")
                }
            }
            #expect(copiesPerRecipient(folder).isEmpty)
            try good.write(to: URL(fileURLWithPath: keyring))
            let repaired = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--", "bob@example.org", "nobody@example.org"],
                                       input: mail, home: home)
            #expect(repaired.status == 0, "\(repaired.errors)")
        }
    }

    @Test("--from with a line break, a space, brackets inside or nothing usable is a usage error (64), checked before anything is read")
    func hostileFrom() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<8 {
                var address = Array("alice@example.org")
                let bad = ["\r", "\n", " ", "<", ">", "\t", ",", "\u{7F}"].randomElement(using: &generator)!
                address.insert(contentsOf: bad, at: Int.random(in: 1..<address.count, using: &generator))
                for command in ["plan", "encrypt"] {
                    let result = try mailsec([command, "--from", String(address) + "\nRCPT TO:<eve@example.net>"]
                                             + (command == "encrypt" ? ["--out", home.path + "/o\(UUID())"] : []) + ["-"],
                                             input: mail, home: home)
                    #expect(result.status == 64, "\(String(address).debugDescription): \(result.errors)")
                    expectOneLine(result)
                    #expect(!result.errors.contains("eve@"))
                }
            }
            let normalised = try mailsec(["plan", "--json", "--from", "<alice@example.org>", "-"], input: mail, home: home)
            #expect(normalised.status == 0, "\(normalised.errors)")
        }
    }
}
