import Foundation
import SMTP
import Synchronization
import TestSupport
import Testing

/// The real `mailsec filter --listen` process, fed by the project's SMTP
/// client, re-injecting into a recording SMTP server; real gpg in a
/// temporary home.
@Suite("mailsec filter --listen, as a process", .serialized)
struct ResidentTests {
    func mail(to: [String], cc: [String] = [], id: String = UUID().uuidString, body: String = "hello\n") -> [UInt8] {
        Array(("From: Alice <alice@example.org>\nTo: \(to.joined(separator: ", "))\n" + (cc.isEmpty ? "" : "Cc: \(cc.joined(separator: ", "))\n")
               + "Subject: s\nMessage-ID: <\(id)@example.org>\n\n\(body)").utf8)
    }

    @Test("a key imported and a key revoked between two mails on the same SMTP connection count from the next mail")
    func keyringChanges() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "carol.pub.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port), home: home)
            let connection = try daemon.connect()
            defer { connection.quit() }
            func isLetter(_ index: Int) -> Bool { peer.transactions[index].data.contains("multipart/encrypted") }

            #expect(send(connection, mail(to: ["bob@example.org"]), to: ["bob@example.org"]).code == 250)
            #expect(!isLetter(0), "no key for Bob yet: a postcard")
            try home.importFixtures(["bob.pub.asc"])
            #expect(send(connection, mail(to: ["bob@example.org"]), to: ["bob@example.org"]).code == 250)
            #expect(isLetter(1), "Bob's key, imported while the daemon runs, is used at once")

            #expect(send(connection, mail(to: ["carol@example.org"]), to: ["carol@example.org"]).code == 250)
            #expect(isLetter(2))
            try home.importFixtures(["carol.sec.asc"])
            try home.revokeKey(of: "carol@example.org")
            // Carol had a letter with that key: continuity holds the mail rather than give her a postcard.
            let held = send(connection, mail(to: ["carol@example.org"]), to: ["carol@example.org"])
            #expect(held.code == 451, "\(held.text)")
            #expect(held.text.contains("carol@example.org") && held.text.contains("revoked"), "\(held.text)")
            #expect(peer.transactions.count == 3)
            #expect(peer.connections == 1, "one kept re-injection session")
        }
    }

    @Test("SIGHUP: a broken filter.toml keeps the running one (one line); a good one counts from the next mail")
    func reload() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let path = try filterConfig(home, reinjectPort: peer.port)
            let daemon = try ResidentProcess(config: path, home: home)
            let good = try String(contentsOfFile: path, encoding: .utf8)
            for broken in ["mode = [", "gnupg_home = \"/nonexistent\"\n" + good.split(separator: "\n").dropFirst().joined(separator: "\n"),
                           good + "\nnonsense = 1\n"] {
                try broken.write(toFile: path, atomically: true, encoding: .utf8)
                daemon.signal(SIGHUP)
                try daemon.waitFor("not reloaded")
                let connection = try daemon.connect()
                #expect(send(connection, mail(to: ["nobody@example.org"]), to: ["nobody@example.org"]).code == 250)
                connection.quit()
                let notReloaded = daemon.lines.filter { $0.contains("not reloaded") }
                #expect(notReloaded.count == 1, "\(daemon.log)")
                // Start over for the next broken file.
                try good.write(toFile: path, atomically: true, encoding: .utf8)
                daemon.signal(SIGHUP)
                try daemon.waitFor("configuration reloaded")
                try "".write(toFile: daemon.logPath, atomically: false, encoding: .utf8)
            }
            try ("mode = \"require-letter\"\n" + good).write(toFile: path, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            try daemon.waitFor("configuration reloaded")
            let connection = try daemon.connect()
            defer { connection.quit() }
            let refused = send(connection, mail(to: ["nobody@example.org"]), to: ["nobody@example.org"])
            #expect(refused.code == 554 && refused.text.contains("5.7.1"), "\(refused.text)")
            #expect(send(connection, mail(to: ["bob@example.org"]), to: ["bob@example.org"]).code == 250)
        }
    }

    @Test("SIGTERM: no new connection, the mail in progress finishes and is answered 250, exit 0")
    func drain() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            var faults = RecordingSMTPServer.Faults()
            faults.delayAfterDot = [1: 2.0]
            let peer = try RecordingSMTPServer(faults: faults)
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port), home: home)
            let connection = try daemon.connect()
            let answer = Mutex<(code: Int, text: String)?>(nil)
            let bytes = mail(to: ["bob@example.org"], cc: ["nobody@example.org"])
            let sender = Thread { answer.withLock { $0 = send(connection, bytes, to: ["bob@example.org", "nobody@example.org"]) } }
            sender.start()
            let until = Date().addingTimeInterval(60)
            while peer.attempts < 1 && Date() < until { usleep(10_000) }
            daemon.signal(SIGTERM)
            try daemon.waitFor("stopping")
            #expect(throws: (any Error).self, "no new connection once stopping") { try daemon.connect() }
            #expect(daemon.exitStatus(within: 60) == 0, "\(daemon.log)")
            #expect(answer.withLock { $0?.code } == 250, "\(answer.withLock { $0 }.debugDescription)")
            #expect(counts([peer]) == ["bob@example.org": 1, "nobody@example.org": 1])
            #expect(!daemon.log.contains("cut off"), "\(daemon.log)")
        }
    }

    @Test("kill -9 in the middle of a mail, a new daemon, the mail sent again: every copy exactly once")
    func killedMidMail() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            var faults = RecordingSMTPServer.Faults()
            faults.hangAfterDot = [2]  // the second copy's reply never comes
            let peer = try RecordingSMTPServer(faults: faults)
            let path = try filterConfig(home, reinjectPort: peer.port)
            let first = try ResidentProcess(config: path, home: home)
            let connection = try first.connect()
            let recipients = ["bob@example.org", "carol@example.org", "nobody@example.org", "nemo@example.org"]
            // To Bob, Cc Carol (one letter), Bcc nobody and nemo (a postcard each: Bcc copies are separate).
            let bytes = mail(to: ["bob@example.org"], cc: ["carol@example.org"])
            let answer = Mutex<(code: Int, text: String)?>(nil)
            Thread { answer.withLock { $0 = send(connection, bytes, to: recipients) } }.start()
            let until = Date().addingTimeInterval(60)
            while peer.attempts < 2 && Date() < until { usleep(10_000) }
            first.signal(SIGKILL)
            #expect(first.exitStatus(within: 10) != nil)
            while answer.withLock({ $0 }) == nil && Date() < until { usleep(10_000) }
            #expect(answer.withLock { $0?.code } != 250, "the mail was not answered 250: the MTA keeps it")

            let second = try ResidentProcess(config: path, home: home)
            let again = try second.connect()
            defer { again.quit() }
            let retried = send(again, bytes, to: recipients)
            #expect(retried.code == 250, "\(retried.text)")
            #expect(counts([peer]) == Dictionary(uniqueKeysWithValues: recipients.map { ($0, 1) }), "\(peer.transactions.map(\.recipients))")
        }
    }

    @Test("twelve mails at once over six connections, four workers: every answer 250, every copy once")
    func parallel() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port), home: home)
            var random = SeededRandom(seed: UInt64.random(in: 0...UInt64.max))
            let people = ["bob@example.org", "carol@example.org", "nobody@example.org", "nemo@example.org"]
            let mails: [(id: String, recipients: [String])] = (0..<12).map { number in
                let chosen = people.filter { _ in Bool.random(using: &random) }
                return ("par\(number).\(random.next())", chosen.isEmpty ? ["nobody@example.org"] : chosen)
            }
            let codes = Mutex([Int]())
            let group = DispatchGroup()
            for lane in 0..<6 {
                group.enter()
                Thread {
                    defer { group.leave() }
                    guard let connection = try? daemon.connect() else { return }
                    defer { connection.quit() }
                    for item in mails.enumerated() where item.offset % 6 == lane {
                        let result = send(connection, mail(to: item.element.recipients, id: item.element.id), to: item.element.recipients)
                        codes.withLock { $0.append(result.code) }
                    }
                }.start()
            }
            #expect(group.wait(timeout: .now() + 240) == .success)
            #expect(codes.withLock { $0 } == Array(repeating: 250, count: 12), "\(daemon.log)")
            let expected = mails.flatMap(\.recipients).reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
            #expect(counts([peer]) == expected)
            #expect(daemon.lines.filter { $0.contains("status=sent") }.count == 12)
        }
    }
}

/// Pipe and daemon, side by side: the same generated mails through
/// `mailsec filter -f … -- …` and through `mailsec filter --listen`.
@Suite("One decision path: the pipe filter and the resident filter give the same copies", .serialized)
struct SamePathTests {
    /// A copy as the recording server took it, with what is random in it
    /// made plain: the ciphertext, MIME boundaries, and the loop tag's value
    /// (an HMAC over the body, boundaries and ciphertext included).
    static func normalised(_ data: String) -> String {
        var text = data
        if let armor = try? Regex(#"-----BEGIN PGP MESSAGE-----[\s\S]*?-----END PGP MESSAGE-----"#) {
            text = text.replacing(armor, with: "(ciphertext)")
        }
        let boundaries = text.matches(of: try! Regex(#"boundary="?([^";\s]+)"?"#)).compactMap { $0.output[1].substring.map(String.init) }
        for (number, boundary) in Set(boundaries).sorted().enumerated() {
            text = text.replacingOccurrences(of: boundary, with: "(boundary \(number))")
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("X-Mailsec-Copy: v2 ") ? "X-Mailsec-Copy: (tag)" : String($0) }.joined(separator: "\n")
    }

    @Test("random mails (To, Cc, Bcc, keys or none, marked spans or none, overrides): the same copies, kinds, recipients and bytes")
    func sameCopies() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let seed = UInt64.random(in: 0...UInt64.max)
            var random = SeededRandom(seed: seed)
            let viaPipe = try RecordingSMTPServer(), viaDaemon = try RecordingSMTPServer()
            let (daemonConfig, pipeConfig) = try filterConfigs(home, daemonPort: viaDaemon.port, pipePort: viaPipe.port)
            let daemon = try ResidentProcess(config: daemonConfig, home: home)
            let connection = try daemon.connect()
            defer { connection.quit() }
            let people = ["bob@example.org", "carol@example.org", "nobody@example.org", "Nemo@Example.org"]
            for number in 0..<10 {
                var chosen = people.filter { _ in Bool.random(using: &random) }
                if chosen.isEmpty { chosen = ["nobody@example.org"] }
                var to: [String] = [], cc: [String] = []
                for person in chosen {
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: to.append(person)
                    case 1: cc.append(person)
                    default: break  // Bcc: in the envelope only
                    }
                }
                let spans = Bool.random(using: &random)
                let override = ["", "X-Mailsec-Invite: yes\n", "X-Mailsec-Mode: enforce-postcard\n"][Int.random(in: 0..<3, using: &random)]
                let body = (0..<Int.random(in: 1...6, using: &random)).map { line in
                    spans && line == 0 ? "the code is [[private]]\(random.next())[[/private]] ok" : "line \(random.next())"
                }.joined(separator: "\n") + "\n"
                let text = "From: Alice <alice@example.org>\n" + (to.isEmpty ? "" : "To: \(to.joined(separator: ", "))\n")
                    + (cc.isEmpty ? "" : "Cc: \(cc.joined(separator: ", "))\n")
                    + "Subject: same path \(number)\nMessage-ID: <same.\(seed).\(number)@example.org>\n\(override)\n\(body)"
                let bytes = Array(text.utf8)
                let piped = try run(Paths.mailsecExecutable.path, ["filter", "--config", pipeConfig, "-f", "alice@example.org", "--"] + chosen,
                                    input: bytes, environment: home.environment)
                let answered = send(connection, bytes, to: chosen)
                let expectedCode = [0: 250, 65: 554, 69: 554, 75: 451][piped.status] ?? -1
                #expect(answered.code == expectedCode, "seed \(seed) mail \(number): pipe \(piped.status) \(piped.errors), daemon \(answered.text)")
            }
            let left = viaPipe.transactions.map { [$0.sender, $0.recipients.joined(separator: ","), Self.normalised($0.data)] }
            let right = viaDaemon.transactions.map { [$0.sender, $0.recipients.joined(separator: ","), Self.normalised($0.data)] }
            #expect(left.count == right.count, "seed \(seed)")
            for (index, (one, other)) in zip(left, right).enumerated() {
                let difference = zip(one[2].split(separator: "\n"), other[2].split(separator: "\n")).first { $0 != $1 }
                #expect(one == other, "seed \(seed), copy \(index): \(one[1]) / \(other[1]); first difference: \(difference.map { "\($0.0) | \($0.1)" } ?? "length")")
            }
            #expect(left.count > 0)
        }
    }
}

/// Issue 22, item 6: the HTML a hostile sender writes costs the filter what it
/// costs `redact` (HostileGrowthCLITests counts that cost), in both modes,
/// because both write the postcard through the one rebuild: the same bytes.
@Suite("Hostile HTML: redact, the pipe filter and the resident filter write the same postcard", .serialized)
struct HostileHTMLModesTests {
    /// Spans crossing tags, nesting deeper than a browser nests, formatting
    /// elements reopened in every block: each shape repeated `units` times.
    static func html(_ shape: Int, units: Int) -> String {
        switch shape {
        case 0: String(repeating: "<p>Hi [[private]]sec<b>ret</b> <i>more</p><div>te&amp;xt[[/pri<span>vate]] after</i> ok</div>\n", count: units)
        case 1: String(repeating: "<div>", count: units) + "deep [[private]]x[[/private]]" + String(repeating: "</div>", count: units)
        default: (0..<units).map { "<b id=\($0)><p>x" }.joined() + "[[private]]y[[/private]]"
        }
    }

    /// A postcard with what differs by design made plain (boundaries, the loop tag) and LF line ends.
    static func plain(_ bytes: String) -> String {
        SamePathTests.normalised(bytes.replacingOccurrences(of: "\r\n", with: "\n"))
            .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("X-Mailsec-Copy:") }
            .joined(separator: "\n").trimmingCharacters(in: .newlines)  // SMTP's DATA ends the last line itself
    }

    @Test("three hostile shapes at random sizes: one postcard, byte for byte, from all three; no span in it")
    func samePostcard() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            var random = SeededRandom(seed: UInt64.random(in: 0...UInt64.max))
            let viaPipe = try RecordingSMTPServer(), viaDaemon = try RecordingSMTPServer()
            let (daemonConfig, pipeConfig) = try filterConfigs(home, daemonPort: viaDaemon.port, pipePort: viaPipe.port)
            let daemon = try ResidentProcess(config: daemonConfig, home: home)
            let connection = try daemon.connect()
            defer { connection.quit() }
            let recipients = ["bob@example.org", "dora@example.net"]
            for shape in 0..<3 {
                let units = [Int.random(in: 800...1600, using: &random), Int.random(in: 1500...4000, using: &random),
                             Int.random(in: 1500...3000, using: &random)][shape]
                let mail = Array(("From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nCc: Dora <dora@example.net>\n"
                    + "Subject: shape \(shape)\nMessage-ID: <hostile-html.\(shape).\(UUID())@example.org>\nMIME-Version: 1.0\n"
                    + "Content-Type: text/html; charset=utf-8\n\n" + Self.html(shape, units: units) + "\n").utf8)
                let what = "shape \(shape), \(units) units"
                let redacted = try run(Paths.mailsecExecutable.path, ["redact", "-"], input: mail, environment: home.environment)
                try #require(redacted.status == 0, "\(what): \(redacted.errors)")
                let pipeBefore = viaPipe.transactions.count, daemonBefore = viaDaemon.transactions.count
                let piped = try run(Paths.mailsecExecutable.path, ["filter", "--config", pipeConfig, "-f", "alice@example.org", "--"] + recipients,
                                    input: mail, environment: home.environment)
                try #require(piped.status == 0, "\(what): \(piped.errors)")
                #expect(send(connection, mail, to: recipients).code == 250, "\(what)")
                func postcard(_ server: RecordingSMTPServer, after: Int) -> String? {
                    server.transactions.dropFirst(after).first { $0.recipients.contains { $0.contains("dora@") } }?.data
                }
                let fromPipe = try #require(postcard(viaPipe, after: pipeBefore), "\(what): the pipe filter's postcard")
                let fromDaemon = try #require(postcard(viaDaemon, after: daemonBefore), "\(what): the resident filter's postcard")
                let reference = Self.plain(String(decoding: redacted.stdout, as: UTF8.self))
                #expect(!reference.contains("[[") && !reference.contains("secret") && !reference.contains("ret</b>"), "\(what)")
                for (who, copy) in [("the pipe filter", Self.plain(fromPipe)), ("the resident filter", Self.plain(fromDaemon))] {
                    let difference = zip(copy.split(separator: "\n"), reference.split(separator: "\n")).first { $0 != $1 }
                    #expect(copy == reference, "\(what): \(who) differs from redact: \(difference.map { "\($0.0) | \($0.1)" } ?? "in length")")
                }
            }
        }
    }
}

@Suite("mailsec filter --listen --check-config and its arguments")
struct CheckConfigTests {
    @Test("a good configuration: 0, silent; each problem: one line, 78; a wrong argument: 64")
    func checks() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let path = try filterConfig(home, reinjectPort: 10026)
            let mailsec = Paths.mailsecExecutable.path
            let good = try run(mailsec, ["filter", "--listen", "--check-config", "--config", path], environment: home.environment)
            #expect(good.status == 0 && good.errors.isEmpty, "\(good.errors)")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            // Two problems at once: a listen address others can reach, and a spool folder that cannot be made.
            try text.replacingOccurrences(of: "parallel = 4", with: "parallel = 4\naddress = \"0.0.0.0:10025\"\nspool_directory = \"\(path)/spool\"")
                .write(toFile: path, atomically: true, encoding: .utf8)
            let two = try run(mailsec, ["filter", "--listen", "--check-config", "--config", path], environment: home.environment)
            #expect(two.status == 78)
            #expect(two.errors.split(separator: "\n").count == 2, "\(two.errors)")
            #expect(two.errors.contains("0.0.0.0") && two.errors.contains("filter.toml/spool"), "\(two.errors)")
            try (text + "\nunknown_key = 1\n").write(toFile: path, atomically: true, encoding: .utf8)
            let bad = try run(mailsec, ["filter", "--listen", "--check-config", "--config", path], environment: home.environment)
            #expect(bad.status == 78 && bad.errors.contains("unknown_key"), "\(bad.errors)")
            // Started with it, the daemon says the same and stops with 78.
            let started = try run(mailsec, ["filter", "--listen", "--config", path], environment: home.environment)
            #expect(started.status == 78 && started.errors.split(separator: "\n").count == 1, "\(started.errors)")
            for arguments in [["--listen", "nonsense"], ["--listen", "127.0.0.1:99999"], ["--listen", "--bogus"]] {
                let wrong = try run(mailsec, ["filter"] + arguments + ["--config", path], environment: home.environment)
                #expect(wrong.status == 64, "\(arguments): \(wrong.errors)")
            }
        }
    }
}
