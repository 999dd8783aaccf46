import Foundation
import TestSupport
import Testing

/// A user's environment for the sending commands: config, store and GnuPG home all private.
func userEnvironment(_ home: TemporaryGnuPGHome) throws -> [String: String] {
    var env = home.environment
    env["XDG_CONFIG_HOME"] = home.path + "/config"
    try FileManager.default.createDirectory(atPath: home.path + "/config/mailsec", withIntermediateDirectories: true)
    // Nothing listens on port 1: every send stays queued (75), which is all these tests need of the server.
    try """
        from = "alice@example.org"
        gnupg_home = "\(home.path)"

        [submission]
        host = "127.0.0.1"
        port = 1
        security = "starttls"
        timeout = 5
        """.write(toFile: home.path + "/config/mailsec/config.toml", atomically: true, encoding: .utf8)
    return env
}

private func run(_ arguments: [String], _ env: [String: String], input: [UInt8] = []) throws -> ProcessResult {
    try TestSupport.run(Paths.mailsecExecutable.path, arguments, input: input, environment: env)
}

private func outboxCount(_ env: [String: String]) throws -> Int {
    let listed = try run(["outbox", "list", "--json"], env)
    #expect(listed.status == 0, "\(listed.errors)")
    return ((try JSONSerialization.jsonObject(with: Data(listed.output.utf8))) as? [Any])?.count ?? -1
}

private func mail(_ to: String, _ subject: String) -> [UInt8] {
    Array("From: Alice <alice@example.org>\nTo: \(to)\nSubject: \(subject)\nMessage-ID: <\(UUID().uuidString)@example.org>\n\nHello.\n".utf8)
}

@Suite("mailsec contacts, key continuity at the CLI, completion", .serialized)
struct ContactsCLITests {
    @Test("a key deleted after a letter: send refuses (75, naming the address) and queues nothing; after keys forget it goes")
    func sendKeyContinuity() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let env = try userEnvironment(home)
            let first = try run(["send", "-"], env, input: mail("Bob <bob@example.org>, carol@example.net", "one"))
            #expect(first.status == 75, "queued for a later try: \(first.errors)")
            #expect(!first.errors.contains("key continuity"))
            let queued = try outboxCount(env)
            #expect(queued == 2, "a letter and a postcard")

            // The contacts noted both recipients, Bob with his name and key.
            let listed = try run(["contacts", "--json"], env)
            #expect(listed.status == 0, "\(listed.errors)")
            let contacts = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]] ?? []
            let bob = contacts.first { $0["address"] as? String == "bob@example.org" }
            #expect(bob?["name"] as? String == "Bob" && bob?["key"] as? String == "usable" && bob?["sent"] as? Int == 1)
            #expect(contacts.contains { $0["address"] as? String == "carol@example.net" && $0["key"] as? String == "missing" })

            let fingerprint = try #require(bob?["fingerprint"] as? String)
            #expect(try home.gpg(["--delete-key", fingerprint]).status == 0)
            for command in [["send", "-"], ["sendmail", "-t"]] {
                let refused = try run(command, env, input: mail("Bob <bob@example.org>, carol@example.net", "two"))
                #expect(refused.status == 75, "\(command): \(refused.errors)")
                expectOneLine(refused)
                #expect(refused.errors.contains("key continuity") && refused.errors.contains("bob@example.org"), "\(refused.errors)")
                #expect(!refused.errors.contains("carol@example.net"))
                #expect(try outboxCount(env) == queued, "\(command): nothing queued")
            }
            // encrypt refuses the same way, and writes nothing.
            let out = home.path + "/out"
            let encrypted = try run(["encrypt", "--out", out, "-"], env, input: mail("bob@example.org", "three"))
            #expect(encrypted.status == 75 && encrypted.errors.contains("bob@example.org"), "\(encrypted.errors)")
            #expect(!FileManager.default.fileExists(atPath: out + "/manifest.json"))

            let forgotten = try run(["keys", "forget", "bob@example.org", "nobody@example.org"], env)
            #expect(forgotten.status == 0, "\(forgotten.errors)")
            #expect(forgotten.output == "bob@example.org: forgotten\nnobody@example.org: no record\n", "\(forgotten.output)")
            let after = try run(["send", "-"], env, input: mail("Bob <bob@example.org>", "four"))
            #expect(after.status == 75 && !after.errors.contains("key continuity"), "\(after.errors)")
            #expect(try outboxCount(env) == queued + 1, "a postcard now")
        }
    }

    @Test("encrypt remembers the letter's key; a recipient's key deleted: refused until forgotten")
    func encryptKeyContinuity() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let env = try userEnvironment(home)
            let first = try run(["encrypt", "--out", home.path + "/one", "-"], env, input: mail("bob@example.org, carol@example.org", "x"))
            #expect(first.status == 0, "\(first.errors)")
            let carol = try home.gpg(["--with-colons", "--list-keys", "carol@example.org"]).output
                .split(separator: "\n").first { $0.hasPrefix("fpr:") }.map { String($0.split(separator: ":", omittingEmptySubsequences: false)[9]) }
            #expect(try home.gpg(["--delete-key", try #require(carol)]).status == 0)
            let second = try run(["encrypt", "--out", home.path + "/two", "-"], env, input: mail("bob@example.org, carol@example.org", "x"))
            #expect(second.status == 75, "\(second.errors)")
            #expect(second.errors.contains("carol@example.org") && !second.errors.contains("bob@example.org"), "\(second.errors)")
            #expect(try run(["keys", "forget", "carol@example.org"], env).status == 0)
            let third = try run(["encrypt", "--out", home.path + "/three", "-"], env, input: mail("bob@example.org, carol@example.org", "x"))
            #expect(third.status == 0, "\(third.errors)")
        }
    }

    @Test("contacts learn: a hostile Maildir (injection, look-alike names, thousands of addresses, broken encodings, garbage)")
    func learnHostile() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let env = try userEnvironment(home)
            let maildir = home.path + "/Mail"
            for part in ["cur", "new", "tmp"] { try FileManager.default.createDirectory(atPath: maildir + "/" + part, withIntermediateDirectories: true) }
            var random = SeededRandom(seed: 4242)
            let tricks: [() -> String] = [
                { "From: =?utf-8?q?Bob=0D=0ABcc:_evil@x.test?= <bob@example.org>\nTo: alice@example.org\n" },
                { "From: \"paypal@bank.test\" <evil@phish.test>\nTo: alice@example.org\n" },
                { "From: \"service\u{FF20}bank\u{FF0E}test\" <evil2@phish.test>\nTo: alice@example.org\n" },
                { "From: \"Ali\u{202E}ecila\" <rtl@phish.test>\nTo: alice@example.org\n" },
                { "From: =?utf-8?b?!!!not-base64?= <broken@enc.test>\nTo: alice@example.org\n" },
                { "From: \u{FF}\u{FE}raw bytes <rawbytes@enc.test>\nTo: alice@example.org\n" },
                { "From: <>\nTo: \"a b\"@spaces.test, nodomain, @nolocal.test\n" },
                { "From: Many <many@example.org>\nTo: " + (0..<3000).map { "r\($0)@bulk.test" }.joined(separator: ", ") + "\n" },
                { "From: Dora <dora@example.org>\nCc: Émile Zola <emile@example.org>\nDate: Fri, 01 Jan 2100 00:00:00 +0000\n" },
            ]
            var files = 0
            for index in 0..<60 {
                let content: [UInt8]
                if index % 10 == 9 {
                    content = (0..<Int.random(in: 0...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                } else {
                    content = Array((tricks.randomElement(using: &random)!() + "Subject: s\(index)\n\nbody\n").utf8)
                }
                try Data(content).write(to: URL(fileURLWithPath: maildir + "/cur/\(index):2,S"))
                files += 1
            }
            try FileManager.default.createDirectory(atPath: maildir + "/new/a-folder", withIntermediateDirectories: true)
            let learned = try run(["contacts", "learn", "--json", maildir], env)
            #expect(learned.status == 0, "\(learned.errors)")
            let report = try JSONSerialization.jsonObject(with: Data(learned.output.utf8)) as? [String: Int] ?? [:]
            #expect((report["mails"] ?? 0) + (report["skippedMails"] ?? 0) == files + 1, "\(report)")
            #expect((report["mails"] ?? 0) > 0 && (report["droppedNames"] ?? 0) > 0, "\(report)")

            let listed = try run(["contacts", "--json", "--no-refresh"], env)
            #expect(listed.status == 0, "\(listed.errors)")
            let contacts = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]] ?? []
            #expect(contacts.filter { ($0["address"] as? String ?? "").hasSuffix("@bulk.test") }.count <= 1000)
            for contact in contacts {
                let address = contact["address"] as? String ?? ""
                #expect(address.wholeMatch(of: /[^@\s"<>]+@[^@\s"<>]+/) != nil, "\(address)")
                if let name = contact["name"] as? String {
                    #expect(!name.unicodeScalars.contains { $0.value < 0x20 || $0.properties.generalCategory == .format }, "\(address)")
                    #expect(!name.contains("@") && !name.contains("\u{FF20}"), "\(address): \(name)")
                }
                // A Date in the future counts as now, never later.
                if let last = contact["lastUsed"] as? String, let date = ISO8601DateFormatter().date(from: last) {
                    #expect(date <= Date().addingTimeInterval(5), "\(address)")
                }
            }
            // The text list prints every line without control characters.
            let text = try run(["contacts", "--no-refresh"], env)
            #expect(text.status == 0 && !text.output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
            // Prefix, accents folded; --letters keeps only those with a usable key.
            let emile = try run(["contacts", "--no-refresh", "emi"], env)
            #expect(emile.output.contains("emile@example.org"), "\(emile.output)")
            let zola = try run(["contacts", "--no-refresh", "ZOLA"], env)
            #expect(zola.output.contains("emile@example.org"), "\(zola.output)")
            // Only the user's own key (a keyring user ID with a usable key) can get a letter here.
            let letters = try run(["contacts", "--letters"], env).output
            #expect(letters.split(separator: "\n").map { $0.split(separator: " ").dropFirst().first ?? "" } == ["alice@example.org"], "\(letters)")

            for bad in [home.path + "/nothing", home.path] {  // missing; a folder that is no Maildir
                let failed = try run(["contacts", "learn", bad], env)
                #expect(failed.status == 66, "\(bad): \(failed.errors)")
                expectOneLine(failed)
            }
        }
    }

    @Test("contacts learn imports Autocrypt keys by autocrypt import's rules: the From address only")
    func learnAutocrypt() throws {
        let keydata = try withGnuPGHome(importing: ["bob.pub.asc"]) { other throws in
            Data(try other.gpg(["--export", "bob@example.org"]).stdout).base64EncodedString()
        }
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let env = try userEnvironment(home)
            let good = "From: Bob <bob@example.org>\nTo: alice@example.org\nAutocrypt: addr=bob@example.org; keydata=\(keydata)\n\nhi\n"
            let forged = "From: Eve <eve@example.org>\nTo: alice@example.org\nAutocrypt: addr=bob@example.org; keydata=\(keydata)\n\nhi\n"
            try forged.write(toFile: home.path + "/forged.eml", atomically: true, encoding: .utf8)
            let refused = try run(["contacts", "learn", "--json", home.path + "/forged.eml"], env)
            #expect(refused.status == 0, "\(refused.errors)")
            #expect(refused.output.contains("\"keysImported\" : 0") && refused.output.contains("\"keysRefused\" : 1"), "\(refused.output)")
            #expect(!(try run(["contacts", "--letters"], env).output.contains("bob@")))
            try good.write(toFile: home.path + "/good.eml", atomically: true, encoding: .utf8)
            let imported = try run(["contacts", "learn", "--json", home.path + "/good.eml"], env)
            #expect(imported.output.contains("\"keysImported\" : 1"), "\(imported.output)")
            let letters = try run(["contacts", "--letters"], env).output
            #expect(letters.split(separator: "\n").contains { $0.hasPrefix("letter   bob@example.org Bob (") }, "\(letters)")
        }
    }

    @Test("bash completion: --generate-completion-script bash, sourced in a real bash, offers addresses from the store")
    func bashCompletion() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            var env = try userEnvironment(home)
            env["PATH"] = Paths.mailsecExecutable.deletingLastPathComponent().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
            let people = ["bob@example.org", "bea@example.org", "barbara@example.net", "carl@example.org"]
            for (index, person) in people.enumerated() {
                for _ in 0...index { _ = try run(["send", "-"], env, input: mail(person, "x")) }
            }
            let script = try run(["--generate-completion-script", "bash"], env)
            #expect(script.status == 0, "\(script.errors)")
            try script.output.write(toFile: home.path + "/mailsec.bash", atomically: true, encoding: .utf8)
            func complete(_ words: [String]) throws -> [String] {
                let quoted = words.map { "'\($0)'" }.joined(separator: " ")
                let shell = """
                    source '\(home.path)/mailsec.bash'
                    COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
                    COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
                    _mailsec
                    printf '%s\\n' "${COMPREPLY[@]}"
                    """
                let result = try TestSupport.run("bash", ["-c", shell], environment: env)
                #expect(result.status == 0, "\(result.errors)")
                return result.output.split(separator: "\n").map(String.init)
            }
            // keys forget: addresses beginning with b, most frecent first (carl does not begin with b).
            let offered = try complete(["mailsec", "keys", "forget", "b"])
            #expect(offered == ["barbara@example.net", "bea@example.org", "bob@example.org"], "\(offered)")
            // An address already on the line is not offered again.
            let again = try complete(["mailsec", "keys", "forget", "bea@example.org", "b"])
            #expect(again == ["barbara@example.net", "bob@example.org"], "\(again)")
            // contacts PREFIX and sendmail's recipients.
            #expect(try complete(["mailsec", "contacts", "list", "ca"]) == ["carl@example.org"])
            let sendmail = try complete(["mailsec", "sendmail", "-f", "alice@example.org", "be"])
            #expect(sendmail.contains("bea@example.org"), "\(sendmail)")
        }
    }

    @Test("zsh and fish: the generated scripts, in real terminals (tmux), complete a TAB with addresses from the store")
    func zshAndFish() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            var env = try userEnvironment(home)
            let bin = Paths.mailsecExecutable.deletingLastPathComponent().path
            for person in ["zed@example.org", "zara@example.net", "carl@example.org"] {
                _ = try run(["send", "-"], env, input: mail(person, "x"))
            }
            env["PATH"] = bin + ":" + (env["PATH"] ?? "/usr/bin:/bin")
            let folder = home.path + "/completions"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (shell, file) in [("zsh", "_mailsec"), ("fish", "mailsec.fish")] {
                let script = try run(["--generate-completion-script", shell], env)
                #expect(script.status == 0, "\(script.errors)")
                try script.output.write(toFile: folder + "/" + file, atomically: true, encoding: .utf8)
            }
            let shells: [(String, [String], String)] = [
                ("zsh", ["zsh", "-f"], "fpath=(\(folder) $fpath); autoload -U compinit; compinit -u"),
                ("fish", ["fish", "--no-config"], "source \(folder)/mailsec.fish"),
            ]
            // tmux driven from Python: its server must not inherit our pipes, and a
            // time-out must end everything the test started.
            let driver = """
                import os, signal, subprocess, sys, time
                server, setup, command = sys.argv[1], sys.argv[2], sys.argv[3:]
                def tmux(*args):
                    return subprocess.run(["tmux", "-L", server, *args], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20).stdout.decode()
                try:
                    subprocess.run(["tmux", "-L", server, "new-session", "-d", "-x", "160", "-y", "30", *command],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
                    time.sleep(1); tmux("send-keys", setup, "Enter"); time.sleep(2)
                    tmux("send-keys", "mailsec keys forget z", "Tab")
                    screen = ""
                    for _ in range(40):
                        time.sleep(0.25)
                        screen = tmux("capture-pane", "-p")
                        if "zara@example.net" in screen: break
                    print(screen)
                finally:
                    pids = tmux("display-message", "-p", "#{pid} #{pane_pid}").split()
                    tmux("kill-server")
                    time.sleep(0.5)
                    for pid in pids:  # the server has been seen to outlive kill-server: end it and its shell by id
                        try: os.kill(int(pid), signal.SIGKILL)
                        except (OSError, ValueError): pass
                """
            for (name, command, setup) in shells {
                let environment = ["HOME=\(home.path)", "XDG_DATA_HOME=\(env["XDG_DATA_HOME"]!)", "XDG_CONFIG_HOME=\(home.path)/shellconfig",
                                   "GNUPGHOME=\(home.path)", "PATH=\(env["PATH"]!)", "TERM=xterm"]
                let result = try TestSupport.run("timeout", ["60", "python3", "-c", driver, "ms-\(name)-\(getpid())", setup, "env", "-i"]
                                                 + environment + command)
                #expect(result.status == 0, "\(name): \(result.errors)")
                let screen = result.output
                #expect(screen.contains("zara@example.net") && screen.contains("zed@example.org"), "\(name): \(screen)")
                #expect(!screen.contains("carl@example.org"), "\(name): \(screen)")
            }
        }
    }
}
