import Foundation
import TestSupport
import Testing

/// Keys never change silently, at the command line: keys learned from mail
/// (a forged Autocrypt header, a gossip header) never outrank the person's
/// own; a key other than the one a recipient last got a letter with is
/// refused (69, one line naming them) until `keys accept`.
@Suite("key changes at the command line", .serialized)
struct KeyChangeCLITests {
    func mailsec(_ arguments: [String], _ env: [String: String], input: [UInt8] = []) throws -> ProcessResult {
        try run(Paths.mailsecExecutable.path, arguments, input: input, environment: env)
    }

    func mail(to: String) -> [UInt8] {
        Array("From: Alice <alice@example.org>\nTo: \(to)\nSubject: s\nMessage-ID: <\(UUID().uuidString)@example.org>\n\nHello.\n".utf8)
    }

    /// A mail from `from` with an Autocrypt header offering `keydata` for `addr`, dated `date`.
    func autocryptMail(from: String, addr: String, keydata: [UInt8], date: String) -> [UInt8] {
        let base64 = Data(keydata).base64EncodedString()
        let folded = stride(from: 0, to: base64.count, by: 72).map { offset in
            let start = base64.index(base64.startIndex, offsetBy: offset)
            return String(base64[start..<(base64.index(start, offsetBy: 72, limitedBy: base64.endIndex) ?? base64.endIndex)])
        }.joined(separator: "\n ")
        return Array("""
            From: <\(from)>
            To: alice@example.org
            Subject: hello
            Date: \(date)
            Message-ID: <\(UUID().uuidString)@example.net>
            Autocrypt: addr=\(addr); prefer-encrypt=mutual; keydata=
             \(folded)

            Hi.

            """.utf8)
    }

    /// The plan of `mail` as JSON: the recipient entry of `address`.
    func planned(_ address: String, _ bytes: [UInt8], _ env: [String: String]) throws -> (status: Int32, entry: [String: Any]) {
        let plan = try mailsec(["plan", "--json", "-"], env, input: bytes)
        let object = try JSONSerialization.jsonObject(with: Data(plan.output.utf8)) as? [String: Any] ?? [:]
        let entry = (object["recipients"] as? [[String: Any]] ?? []).first { $0["address"] as? String == address } ?? [:]
        return (plan.status, entry)
    }

    /// The fingerprints the letter of `encrypt --out` to `address` is encrypted to (the recipient's first).
    func encrypted(_ bytes: [UInt8], _ env: [String: String], _ folder: String) throws -> (status: Int32, errors: String, keys: [String]) {
        let result = try mailsec(["encrypt", "--out", folder, "-"], env, input: bytes)
        guard result.status == 0 else { return (result.status, result.errors, []) }
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/manifest.json"))) as? [String: Any]
        let copies = manifest?["copies"] as? [[String: Any]] ?? []
        return (0, result.errors, copies.first { $0["kind"] as? String == "letter" }?["fingerprints"] as? [String] ?? [])
    }

    func fingerprint(_ home: TemporaryGnuPGHome, _ address: String) throws -> String {
        try #require(try home.gpg(["--with-colons", "--list-keys", "<\(address)>"]).output.split(separator: "\n")
            .first { $0.hasPrefix("fpr:") }.map { String($0.split(separator: ":", omittingEmptySubsequences: false)[9]) })
    }

    @Test("a forged Autocrypt header (From Bob, Mallory's key) at contacts learn: plan, encrypt and send keep Bob's own key")
    func forgedAutocrypt() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let env = try userEnvironment(home)
            let bob = try fingerprint(home, "bob@example.org")
            let first = try encrypted(mail(to: "bob@example.org"), env, home.path + "/one")
            #expect(first.status == 0 && first.keys.first == bob, "\(first.errors)")

            let mallory = try TemporaryGnuPGHome()
            defer { mallory.close() }
            let forged = try mallory.makeKey("Bob <bob@example.org>")
            try Data(autocryptMail(from: "bob@example.org", addr: "bob@example.org", keydata: try mallory.export([forged]),
                                   date: "Mon, 1 Jan 2024 10:00:00 +0000")).write(to: URL(fileURLWithPath: home.path + "/forged.eml"))
            let learned = try mailsec(["contacts", "learn", "--json", home.path + "/forged.eml"], env)
            #expect(learned.status == 0, "\(learned.errors)")
            #expect(learned.output.contains("\"keysImported\":1") || learned.output.contains("\"keysImported\" : 1"), "\(learned.output)")
            #expect(try home.gpg(["--list-keys", forged]).status == 0, "the learned key is in the keyring, kept apart")

            let plan = try planned("bob@example.org", mail(to: "bob@example.org"), env)
            #expect(plan.status == 0)
            #expect(plan.entry["fingerprint"] as? String == bob && plan.entry["keySource"] as? String == "keyring", "\(plan.entry)")
            let second = try encrypted(mail(to: "bob@example.org"), env, home.path + "/two")
            #expect(second.status == 0 && second.keys.first == bob, "the letter goes to Bob's own key, not the forged one: \(second)")
            let sent = try mailsec(["send", "-"], env, input: mail(to: "bob@example.org"))
            #expect(sent.status == 75 && !sent.errors.contains("key changed"), "queued for Bob's key: \(sent.errors)")
        }
    }

    @Test("a gossip header in an encrypted mail offering another key for Dave: Dave's own key is kept")
    func gossip() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "dave-older.pub.asc"]) { home throws in
            let env = try userEnvironment(home)
            let dave = try fingerprint(home, "dave@example.org")
            let mallory = try TemporaryGnuPGHome()
            defer { mallory.close() }
            try mallory.importFixtures(["alice.pub.asc"])
            let forged = try mallory.makeKey("Dave <dave@example.org>")
            let keydata = Data(try mallory.export([forged])).base64EncodedString()
            let inner = "Content-Type: text/plain; charset=utf-8\nAutocrypt-Gossip: addr=dave@example.org; keydata=\(keydata)\n\nHi both.\n"
            let ciphertext = try mallory.gpg(["--armor", "--trust-model", "always", "--encrypt", "-r", "alice@example.org"],
                                             input: Array(inner.utf8))
            #expect(ciphertext.status == 0, "\(ciphertext.errors)")
            let outer = """
                From: <mallory@example.net>
                To: alice@example.org, dave@example.org
                Subject: ...
                Date: Mon, 1 Jan 2024 10:00:00 +0000
                MIME-Version: 1.0
                Content-Type: multipart/encrypted; protocol="application/pgp-encrypted"; boundary="b1"

                --b1
                Content-Type: application/pgp-encrypted

                Version: 1

                --b1
                Content-Type: application/octet-stream

                \(ciphertext.output)
                --b1--

                """
            try Data(outer.utf8).write(to: URL(fileURLWithPath: home.path + "/gossip.eml"))
            let learned = try mailsec(["contacts", "learn", "--decrypt", "--json", home.path + "/gossip.eml"], env)
            #expect(learned.status == 0, "\(learned.errors)")
            #expect(try home.gpg(["--list-keys", forged]).status == 0, "the gossiped key was imported: \(learned.output)")
            let letter = try encrypted(mail(to: "dave@example.org"), env, home.path + "/one")
            #expect(letter.status == 0 && letter.keys.first == dave, "Dave's own key, not the gossiped one: \(letter)")
        }
    }

    @Test("learned keys only: a newer forged Autocrypt key for Carol is a key change: plan shows both, encrypt/send/sendmail refuse 69 until keys accept")
    func learnedChange() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let env = try userEnvironment(home)
            let carol = try TemporaryGnuPGHome(), mallory = try TemporaryGnuPGHome()
            defer { carol.close(); mallory.close() }
            let real = try carol.makeKey("Carol <carol@example.net>")
            let forged = try mallory.makeKey("Carol <carol@example.net>")
            try Data(autocryptMail(from: "carol@example.net", addr: "carol@example.net", keydata: try carol.export([real]),
                                   date: "Mon, 1 Jan 2024 10:00:00 +0000")).write(to: URL(fileURLWithPath: home.path + "/real.eml"))
            #expect(try mailsec(["contacts", "learn", home.path + "/real.eml"], env).status == 0)
            let plan = try planned("carol@example.net", mail(to: "carol@example.net"), env)
            #expect(plan.entry["fingerprint"] as? String == real && plan.entry["keySource"] as? String == "autocrypt", "\(plan.entry)")
            #expect(try encrypted(mail(to: "carol@example.net"), env, home.path + "/one").keys.first == real)

            try Data(autocryptMail(from: "carol@example.net", addr: "carol@example.net", keydata: try mallory.export([forged]),
                                   date: "Tue, 2 Jan 2024 10:00:00 +0000")).write(to: URL(fileURLWithPath: home.path + "/forged.eml"))
            #expect(try mailsec(["contacts", "learn", home.path + "/forged.eml"], env).status == 0)
            let changed = try planned("carol@example.net", mail(to: "carol@example.net"), env)
            #expect(changed.status == 69)
            #expect(changed.entry["decision"] as? String == "refused" && changed.entry["reason"] as? String == "key-changed", "\(changed.entry)")
            let change = changed.entry["keyChange"] as? [String: Any] ?? [:]
            #expect(change["previous"] as? String == real && change["current"] as? String == forged && change["origin"] as? String == "autocrypt",
                    "\(change)")
            #expect(change["since"] is String && change["certifiedByPrevious"] as? Bool == false, "\(change)")
            let text = try mailsec(["plan", "-"], env, input: mail(to: "carol@example.net"))
            #expect(text.output.contains(real) && text.output.contains(forged) && text.output.contains("Autocrypt"), "\(text.output)")

            for command in [["encrypt", "--out", home.path + "/two", "-"], ["send", "-"], ["sendmail", "-t"]] {
                let refused = try mailsec(command, env, input: mail(to: "carol@example.net"))
                #expect(refused.status == 69, "\(command): \(refused.errors)")
                expectOneLine(refused)
                #expect(refused.errors.contains("carol@example.net") && refused.errors.contains(forged), "\(refused.errors)")
            }
            #expect(!FileManager.default.fileExists(atPath: home.path + "/two/manifest.json"))
            let outbox = try mailsec(["outbox", "list", "--json"], env)
            #expect(outbox.output.trimmingCharacters(in: .whitespacesAndNewlines) == "[]" || !outbox.output.contains("carol"), "nothing queued")

            let wrong = try mailsec(["keys", "accept", "carol@example.net", String(repeating: "A", count: 40), "--sending"], env)
            #expect(wrong.status == 69 && wrong.errors.contains("carol@example.net"), "\(wrong.errors)")
            let accepted = try mailsec(["keys", "accept", "--sending", "carol@example.net", forged], env)
            #expect(accepted.status == 0 && accepted.output == "carol@example.net: \(forged) accepted\n", "\(accepted.errors)")
            let after = try encrypted(mail(to: "carol@example.net"), env, home.path + "/three")
            #expect(after.status == 0 && after.keys.first == forged, "accepted on purpose: \(after)")
        }
    }

    @Test("a rotation certified by the old key, an uncertified replacement, an expired old key: each refused (69) until keys accept")
    func rotations() throws {
        for kind in ["certified", "uncertified", "expired"] {
            try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
                let env = try userEnvironment(home)
                let bob = try TemporaryGnuPGHome()
                defer { bob.close() }
                let old = try bob.makeKey("Bob <bob@example.org>", at: "20200101T000000")
                try home.importKeys(try bob.export([old]))
                #expect(try encrypted(mail(to: "bob@example.org"), env, home.path + "/one").keys.first == old, "\(kind)")

                let new = try bob.makeKey("Bob <bob@example.org>", at: "20200201T000000")
                if kind != "uncertified" { try bob.certify(new, by: old, at: "20200301T000000") }
                if kind == "expired" { try bob.setExpiry(old, "2020-12-31", at: "20200401T000000") }
                try home.importKeys(try bob.export([old, new]))

                let plan = try planned("bob@example.org", mail(to: "bob@example.org"), env)
                #expect(plan.status == 69 && plan.entry["reason"] as? String == "key-changed", "\(kind): \(plan.entry)")
                let change = plan.entry["keyChange"] as? [String: Any] ?? [:]
                #expect(change["previous"] as? String == old && change["current"] as? String == new && change["origin"] as? String == "imported")
                #expect(change["certifiedByPrevious"] as? Bool == (kind == "certified"), "\(kind): \(change)")
                let refused = try encrypted(mail(to: "bob@example.org"), env, home.path + "/two")
                #expect(refused.status == 69 && refused.errors.contains("bob@example.org"), "\(kind): \(refused)")
                #expect(try mailsec(["keys", "accept", "--sending", "bob@example.org", new], env).status == 0)
                #expect(try encrypted(mail(to: "bob@example.org"), env, home.path + "/three").keys.first == new, "\(kind)")
            }
        }
    }
}

/// Key changes in compose: `--send` (compose, reply, forward) refuses (69,
/// one line naming the recipient); at the prompt, sending asks, and only a
/// yes takes the new key.
@Suite("key changes in compose", .serialized)
struct KeyChangeComposeTests {
    @Test("compose, reply and forward --send refuse a changed key (69); at the tmux prompt no keeps it, yes sends to the new key")
    func compose() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let first = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--subject", "one", "--body-file", "-"],
                                 input: Array("First.\n".utf8))
        #expect(first.status == 0, "\(first.errors)")
        let stranger = try TemporaryGnuPGHome()
        defer { stranger.close() }
        let new = try stranger.makeKey("Bob <bob@example.org>")
        try world.home.importKeys(try stranger.export([new]))

        let original = world.folder + "/from-bob.eml"
        try "From: Bob <bob@example.org>\nTo: Alice <alice@example.org>\nSubject: Plans\nMessage-ID: <plans.2@example.org>\n\nTomorrow?\n"
            .write(toFile: original, atomically: true, encoding: .utf8)
        let queued = try world.outbox().count, sent = world.server.transactions.count
        for arguments in [["compose", "--no-edit", "--send", "--to", "bob@example.org", "--body-file", "-"],
                          ["reply", original, "--no-edit", "--send", "--body-file", "-"],
                          ["forward", original, "--to", "bob@example.org", "--no-edit", "--send", "--body-file", "-"]] {
            let refused = try world.ms(arguments, input: Array("Second.\n".utf8))
            #expect(refused.status == 69, "\(arguments[0]): \(refused.errors)")
            expectOneLine(refused)
            #expect(refused.errors.contains("bob@example.org") && refused.errors.contains(new), "\(refused.errors)")
            #expect(try world.outbox().count == queued && world.server.transactions.count == sent, "\(arguments[0]): nothing queued or sent")
        }

        var environment = world.environment
        environment["EDITOR"] = "true"
        let terminal = try TmuxTerminal(folder: world.folder, [Paths.mailsecExecutable.path, "compose", "--config", world.config,
                                                               "--to", "bob@example.org", "--subject", "three", "--body-file", "-"],
                                        environment: environment, input: "Third.\n")
        defer { terminal.stop() }
        let screen = try terminal.wait { $0.contains(ComposeTerminalTests.prompt) }
        #expect(screen.contains("REFUSED") && screen.contains("the key changed"), "\(screen)")
        try terminal.type("s")
        try terminal.wait { $0.contains("Accept \(new) as the key of bob@example.org") }
        try terminal.type("n")
        try terminal.wait { $0.components(separatedBy: ComposeTerminalTests.prompt).count == 3 }
        #expect(world.server.transactions.count == sent, "no is no")
        try terminal.type("s")
        try terminal.wait { $0.components(separatedBy: "Accept \(new)").count == 3 }
        try terminal.type("y")
        try terminal.wait { $0.contains("delivered to 1 recipient") }
        #expect(terminal.status() == 0)
        let letter = try #require(world.server.transactions.dropFirst(sent).first)
        #expect(letter.recipients == ["<bob@example.org>"] && letter.data.contains("multipart/encrypted"))
        let accepted = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--body-file", "-"],
                                    input: Array("Fourth.\n".utf8))
        #expect(accepted.status == 0, "accepted at the prompt, recorded: \(accepted.errors)")
    }
}
