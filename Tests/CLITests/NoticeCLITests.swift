import Foundation
import TestSupport
import Testing

/// A sender's world for partially encrypted postcards from the user's side:
/// a GnuPG home (Alice's secret key, Bob's and Carol's public keys), a real
/// reading server (`mailsec serve`), a store and a sent folder, and a
/// submission server under the test's control (the recording SMTP server
/// behind a real TLS proxy), which ``submitTo(failing:faults:)`` replaces.
final class NoticeWorld {
    let home: TemporaryGnuPGHome
    let folder: String
    let reading: ReadingServerProcess
    private var servers: [(server: RecordingSMTPServer, proxy: TLSProxy)] = []
    let from: String
    /// `[reading] notice`; nil leaves it out (the default, letter-required).
    let notice: String?
    var config: String { folder + "/config.toml" }
    var sent: String { folder + "/sent" }
    var server: RecordingSMTPServer { servers.last!.server }

    init(from: String = "alice@example.org", notice: String? = nil) throws {
        self.from = from
        self.notice = notice
        home = try TemporaryGnuPGHome()
        folder = try makePrivateDirectory(prefix: "ms-ntc")
        reading = try ReadingServerProcess()
        try home.importFixtures(["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"])
        FileManager.default.createFile(atPath: folder + "/token", contents: Data(reading.token.utf8), attributes: [.posixPermissions: 0o600])
        try submitTo()
    }

    /// A new submission server (451 to the data attempts in `failing`,
    /// 550 to the recipients in `faults.refused`), and the configuration
    /// pointed at it.
    @discardableResult
    func submitTo(failing: Set<Int> = [], faults: RecordingSMTPServer.Faults = .init()) throws -> RecordingSMTPServer {
        let server = try RecordingSMTPServer(failing: failing, faults: faults)
        let proxy = try TLSProxy(backendPort: server.port)
        servers.append((server, proxy))
        try """
            from = "\(from)"
            gnupg_home = "\(home.path)"
            sent_maildir = "\(sent)"
            extension = "partially-encrypted"

            [reading]
            publish_url = "\(reading.url)"
            token_file = "\(folder)/token"
            \(notice.map { "notice = \"\($0)\"" } ?? "")

            [submission]
            host = "127.0.0.1"
            port = \(proxy.port)
            security = "tls"
            ca_file = "\(proxy.caFile)"
            timeout = 20

            """.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        return server
    }

    var environment: [String: String] {
        var environment = home.environment
        environment["XDG_DATA_HOME"] = folder + "/data"
        environment["XDG_CONFIG_HOME"] = folder + "/config"
        environment["HOME"] = folder
        environment["TMPDIR"] = folder
        environment["EDITOR"] = "/bin/false"
        environment.removeValue(forKey: "VISUAL")
        return environment
    }

    /// `mailsec ARGUMENTS --config CONFIG`; sendmail takes `-C CONFIG` first.
    func ms(_ arguments: [String], input: [UInt8] = []) throws -> ProcessResult {
        let arguments = arguments.first == "sendmail" ? ["sendmail", "-C", config] + arguments.dropFirst() : arguments + ["--config", config]
        return try run(Paths.mailsecExecutable.path, arguments, input: input, environment: environment)
    }

    /// Like ``ms(_:input:)`` in a session of its own without a terminal (setsid).
    func msWithoutTerminal(_ arguments: [String], input: [UInt8] = []) throws -> ProcessResult {
        let arguments = arguments.first == "sendmail" ? ["sendmail", "-C", config] + arguments.dropFirst() : arguments + ["--config", config]
        return try run("setsid", ["-w", Paths.mailsecExecutable.path] + arguments, input: input, environment: environment)
    }

    /// `mailsec ARGUMENTS` without a configuration (the store from `$XDG_DATA_HOME`).
    func plain(_ arguments: [String], input: [UInt8] = []) throws -> ProcessResult {
        try run(Paths.mailsecExecutable.path, arguments, input: input, environment: environment)
    }

    /// `outbox list --json`, decoded.
    func outbox() throws -> [[String: Any]] {
        let result = try ms(["outbox", "list", "--json"])
        #expect(result.status == 0, "\(result.errors)")
        return (try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [[String: Any]]) ?? []
    }

    /// Reading pages published (201) less those withdrawn, from the server's log.
    func pagesHeld() throws -> Int {
        let log = try String(contentsOfFile: reading.logPath, encoding: .utf8)
        let lines = log.split(separator: "\n")
        return lines.filter { $0.contains("POST /api/postcards 201") }.count
            - lines.filter { $0.contains("DELETE /api/postcards/") && $0.hasSuffix(" 204") }.count
    }

    /// A configuration whose submission server is gone (connection refused):
    /// `send` only queues.
    func submitAway() throws {
        try submitTo()
        let proxy = servers.last!.proxy, kept = folder + "/away-ca.pem"
        try FileManager.default.copyItem(atPath: proxy.caFile, toPath: kept)
        proxy.stop()  // takes its CA file along
        let text = try String(contentsOfFile: config, encoding: .utf8).replacingOccurrences(of: proxy.caFile, with: kept)
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
    }

    /// A submission server that refuses the sender (550): the notice fails for good.
    @discardableResult
    func submitRefusingSender() throws -> RecordingSMTPServer {
        var faults = RecordingSMTPServer.Faults()
        faults.refused = [from]
        return try submitTo(faults: faults)
    }

    private var mounted = false

    /// Puts the store (`$XDG_DATA_HOME`) on a tmpfs of `size`; false, said on
    /// standard output, where mounting is not allowed.
    func storeOnTmpfs(size: String) throws -> Bool {
        mkdir(folder + "/data", 0o700)
        let result = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=700", "tmpfs", folder + "/data"])
        guard result.status == 0 else {
            print("full store: not tried, cannot mount a tmpfs here (\(result.errors.trimmingCharacters(in: .whitespacesAndNewlines)))")
            return false
        }
        mounted = true
        return true
    }

    func close() {
        if mounted { _ = try? run("/bin/umount", ["-l", folder + "/data"]) }
        for (_, proxy) in servers { proxy.stop() }
        reading.remove()
        home.close()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// A mail with private spans in the Subject and the text, to Bob (a key) and
/// Dora (none): a letter, a partially encrypted postcard. The span words are
/// fresh for each mail.
struct SpanMail {
    let id = "ntc.\(UUID().uuidString.prefix(8))@example.org"
    let place = "Zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement()! })
    let secret = "zq" + String((0..<10).map { _ in "bcdfghjkmnpqrstvwxz".randomElement()! })
    var subject: String { "Dinner at [[private]]\(place)[[/private]]" }
    var body: String { "The secret ingredient is [[private]]\(secret) and saffron[[/private]].\n" }

    func bytes(from: String = "Alice <alice@example.org>", to: String = "Bob <bob@example.org>", cc: String = "Dora <dora@example.net>") -> [UInt8] {
        Array("""
            From: \(from)
            To: \(to)
            Cc: \(cc)
            Subject: \(subject)
            Message-ID: <\(id)>
            MIME-Version: 1.0
            Content-Type: text/plain; charset=utf-8

            \(body)
            """.utf8)
    }
}

/// The password in a notice's text: four groups of four.
func password(in text: String) -> String? {
    guard let range = text.range(of: #"[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}-[2-9A-HJ-NP-Z]{4}"#,
                                 options: .regularExpression) else { return nil }
    return String(text[range])
}

/// The reading page's link in a postcard's text.
func readingLink(in text: String) -> String? {
    guard let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+/r/[A-Za-z0-9_-]+"#, options: .regularExpression) else { return nil }
    return String(text[range])
}

@Suite("Password notice from send, sendmail and compose", .serialized)
struct NoticeCLITests {
    /// The notice's text: decrypted with the sender's key when it is a letter
    /// (it must be one when `sealed`), decoded as a reader would.
    func noticeText(_ data: String, sealed: Bool, world: NoticeWorld) throws -> String {
        #expect(data.contains("multipart/encrypted") == sealed, "the notice is \(sealed ? "not " : "")a letter")
        guard sealed else { return try decodedText(data) }
        let armor = try #require(data.range(of: "-----BEGIN PGP MESSAGE-----").flatMap { start in
            data.range(of: "-----END PGP MESSAGE-----").map { String(data[start.lowerBound..<$0.upperBound]) } })
        let clear = try run("gpg", ["--homedir", world.home.path, "--batch", "--quiet", "--decrypt"], input: Array(armor.utf8),
                            environment: world.home.environment)
        #expect(clear.status == 0, "\(clear.errors)")
        return try decodedText(clear.output.replacingOccurrences(of: "\r\n", with: "\n"))
    }

    /// Checks what the server took from the first transaction on: the
    /// letters (when `letters`), then the notice to `sender`, then the
    /// postcard to Dora, each once; the notice opens the page and nothing
    /// else holds the password. Returns the password.
    @discardableResult
    func checkDelivery(_ world: NoticeWorld, _ mail: SpanMail, server: RecordingSMTPServer, from first: Int = 0,
                       sender: String, letters: Bool, sealed: Bool = true, output: ProcessResult) throws -> String {
        let taken = Array(server.transactions.dropFirst(first))
        let order = taken.map { $0.recipients.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "<>")) } }
        #expect(order == (letters ? [["bob@example.org"]] : []) + [[sender], ["dora@example.net"]], "\(order)")
        guard order.count == (letters ? 3 : 2) else { return "" }
        let notice = taken[letters ? 1 : 0].data, postcard = taken[letters ? 2 : 1].data
        let text = try noticeText(notice, sealed: sealed, world: world)
        let found = try #require(password(in: text), "no password in the notice")
        let postcardText = try decodedText(postcard)
        let link = try #require(readingLink(in: postcardText), "no link in the postcard")
        #expect(text.contains(link), "the notice names another page")
        for span in [mail.secret, mail.place] { #expect(!postcard.contains(span) && !postcardText.contains(span)) }
        // The password opens the page; a wrong one does not.
        let revealed = try world.plain(["reveal", link], input: Array((found + "\n").utf8))
        #expect(revealed.status == 0 && revealed.output.contains(mail.secret) && revealed.output.contains(mail.place), "\(revealed.errors)")
        let wrong = try world.plain(["reveal", link], input: Array("ABCD-EFGH-JKLM-NPQR\n".utf8))
        #expect(wrong.status != 0 && !wrong.output.contains(mail.secret))
        // Nowhere else: not in a postcard or letter, not on the terminal, not in a log or the outbox listing.
        let listing = try world.ms(["outbox", "list"])
        let places = [("postcard", postcard + postcardText), ("the command's output", output.output + output.errors),
                      ("the reading server's log", try String(contentsOfFile: world.reading.logPath, encoding: .utf8)),
                      ("outbox list", listing.output + listing.errors)]
            + taken.enumerated().filter { $0.element.data != notice }.map { ("copy \($0.offset + 1)", $0.element.data) }
        for (name, content) in places {
            #expect(!content.contains(found) && !content.lowercased().contains(found.lowercased()), "\(name) holds the password")
        }
        return found
    }

    @Test("send: letters, the notice (a letter to the sender's key), the postcards, in that order; the password opens the page and is nowhere else; the sent folder has the letter; the contacts do not count the notice")
    func send() throws {
        let world = try NoticeWorld()
        defer { world.close() }
        let mail = SpanMail()
        let result = try world.ms(["send", "-"], input: mail.bytes())
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("password notice queued to alice@example.org"), "\(result.output)")
        let entries = try world.outbox().filter { $0["messageID"] as? String == mail.id }
        #expect(entries.map { $0["kind"] as? String } == ["letter", "notice", "postcard"])
        #expect(result.output.contains("(copy \(entries[1]["id"] as? Int ?? -1))"))
        try checkDelivery(world, mail, server: world.server, sender: "alice@example.org", letters: true, output: result)

        // sent_maildir: the To/Cc letter, never the notice.
        let filed = (try? FileManager.default.contentsOfDirectory(atPath: world.sent + "/new")) ?? []
        #expect(filed.count == 1)
        if let name = filed.first {
            let own = try String(contentsOfFile: world.sent + "/new/" + name, encoding: .utf8)
            #expect(header("To", in: own.replacingOccurrences(of: "\r\n", with: "\n"))?.contains("bob@example.org") == true)
            #expect(header("Auto-Submitted", in: own.replacingOccurrences(of: "\r\n", with: "\n")) == nil)
        }
        // Contacts: Bob and Dora got the mail once; the sender got nothing counted.
        let contacts = try world.plain(["contacts", "--json"])
        #expect(contacts.status == 0, "\(contacts.errors)")
        let list = (try JSONSerialization.jsonObject(with: Data(contacts.stdout)) as? [[String: Any]]) ?? []
        let sentCounts = Dictionary(list.map { ($0["address"] as? String ?? "", $0["sent"] as? Int ?? -1) }, uniquingKeysWith: { a, _ in a })
        #expect(sentCounts["bob@example.org"] == 1 && sentCounts["dora@example.net"] == 1, "\(sentCounts)")
        #expect((sentCounts["alice@example.org"] ?? 0) == 0, "the notice was counted as mail sent to the sender")
    }

    @Test("sendmail -t and compose --no-edit --send: the same order and notice; each says so in its line")
    func sendmailAndCompose() throws {
        let world = try NoticeWorld()
        defer { world.close() }
        let mail = SpanMail()
        let viaSendmail = try world.ms(["sendmail", "-t", "-i"], input: mail.bytes())
        #expect(viaSendmail.status == 0, "\(viaSendmail.errors)")
        #expect(viaSendmail.errors.contains("password notice queued to alice@example.org"), "\(viaSendmail.errors)")
        try checkDelivery(world, mail, server: world.server, sender: "alice@example.org", letters: true, output: viaSendmail)

        let composed = SpanMail()
        let before = world.server.transactions.count
        let viaCompose = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--cc", "dora@example.net",
                                       "--subject", composed.subject, "--body-file", "-"], input: Array(composed.body.utf8))
        #expect(viaCompose.status == 0, "\(viaCompose.errors)")
        #expect(viaCompose.output.contains("sent: 3 copies") && viaCompose.output.contains("password notice queued to alice@example.org"),
                "\(viaCompose.output)")
        try checkDelivery(world, composed, server: world.server, from: before, sender: "alice@example.org", letters: true, output: viaCompose)
    }

    @Test("a sender without a key, notice = \"plain\" (asked for by name): a plain notice, still before the postcard")
    func keylessPlain() throws {
        let world = try NoticeWorld(from: "zed@example.org", notice: "plain")
        defer { world.close() }
        let mail = SpanMail()
        let result = try world.ms(["send", "-"], input: mail.bytes(from: "Zed <zed@example.org>", to: "Dora <dora@example.net>",
                                                                   cc: "Erin <erin@example.net>"))
        #expect(result.status == 0, "\(result.errors)")
        let taken = world.server.transactions.map { $0.recipients.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "<>")) } }
        #expect(taken == [["zed@example.org"], ["dora@example.net", "erin@example.net"]], "\(taken)")
        guard taken.count == 2 else { return }
        let notice = world.server.transactions[0].data
        let text = try noticeText(notice, sealed: false, world: world)
        let found = try #require(password(in: text))
        // The plain notice names the mail by its postcard Subject: the span is not in it.
        #expect(!notice.contains(mail.place) && !text.contains(mail.place))
        let link = try #require(readingLink(in: try decodedText(world.server.transactions[1].data)))
        let revealed = try world.plain(["reveal", link], input: Array((found + "\n").utf8))
        #expect(revealed.status == 0 && revealed.output.contains(mail.secret), "\(revealed.errors)")
        #expect(header("Auto-Submitted", in: notice) == "auto-generated")
        #expect(!world.server.transactions[1].data.contains(found) && !(result.output + result.errors).contains(found))
    }

    /// Every file under `folder` (the store's database, its WAL and
    /// journal, the sent folder) that holds `secret` as bytes.
    func filesHolding(_ secret: String, under folder: String) -> [String] {
        let needle = Data(secret.utf8)
        let files = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []
        return files.filter { name in
            guard let data = FileManager.default.contents(atPath: folder + "/" + name) else { return false }
            return data.range(of: needle) != nil
        }
    }

    @Test("a plain notice (keyless sender): once delivered, or discarded, its password is in no file of the store (database, WAL) while its row stays for the state", arguments: [false, true])
    func plainNoticeNotAtRest(discarded: Bool) throws {
        let world = try NoticeWorld(from: "zed@example.org", notice: "plain")
        defer { world.close() }
        if discarded { try world.submitRefusingSender() }
        // A long-lived mailsec (outbox watch, idle) keeps the store open: the WAL
        // is not checkpointed and deleted when each command ends.
        let watch = try startMailsec(["outbox", "watch", "--interval", "86000", "--config", world.config], environment: world.environment)
        defer {
            kill(watch.processIdentifier, SIGKILL)
            watch.waitUntilExit()
        }
        usleep(500_000)
        // Several mails, so that the WAL and the database have seen the notices' pages several times over.
        var passwords: [String] = []
        for _ in 0..<3 {
            let mail = SpanMail()
            let before = world.server.transactions.count
            let result = try world.ms(["send", "-"], input: mail.bytes(from: "Zed <zed@example.org>", to: "Dora <dora@example.net>",
                                                                       cc: "Erin <erin@example.net>"))
            #expect(result.status == (discarded ? 76 : 0), "\(result.errors)")
            if discarded {
                // The store is the only place the password is: read it from the queued notice's bytes.
                let notice = try #require(try world.outbox().last { $0["kind"] as? String == "notice" })
                let store = try Data(contentsOf: URL(fileURLWithPath: world.folder + "/data/mailsec/mailsec.sqlite"))
                    + ((try? Data(contentsOf: URL(fileURLWithPath: world.folder + "/data/mailsec/mailsec.sqlite-wal"))) ?? Data())
                var text = Substring(String(decoding: store, as: UTF8.self)), found: [String] = []
                while let next = password(in: String(text)), let at = text.range(of: next) {
                    found.append(next)
                    text = text[at.upperBound...]
                }
                let new = try #require(Set(found).subtracting(passwords).first, "the queued plain notice holds no password")
                passwords.append(new)
                let gone = try world.ms(["outbox", "discard", String(notice["id"] as? Int ?? -1)])
                #expect(gone.status == 0, "\(gone.errors)")
            } else {
                #expect(world.server.transactions.count == before + 2)
                passwords.append(try #require(password(in: try decodedText(world.server.transactions[before].data))))
            }
        }
        let entries = try world.outbox()
        if discarded {
            #expect(!entries.contains { $0["kind"] as? String == "notice" || $0["kind"] as? String == "postcard" }, "\(entries)")
        } else {
            #expect(entries.filter { $0["kind"] as? String == "notice" }.count == 3, "the delivered notices' rows went")
            #expect(entries.allSatisfy { $0["state"] as? String == "sent" })
        }
        #expect(watch.isRunning, "outbox watch ended: nothing kept the store (and its WAL) open")
        for found in passwords {
            let holding = filesHolding(found, under: world.folder)
            #expect(holding.isEmpty, "the password is still at rest in \(holding)")
        }
    }

    @Test("letter-required (the default, or named) and a sender without a key, without a terminal: send, sendmail and compose refuse (69) before anything is published or queued; notice = \"plain\" sends", arguments: [nil, "letter-required"])
    func letterRequired(notice: String?) throws {
        let world = try NoticeWorld(from: "zed@example.org", notice: notice)
        defer { world.close() }
        let mail = SpanMail()
        let bytes = mail.bytes(from: "Zed <zed@example.org>", to: "Dora <dora@example.net>", cc: "Erin <erin@example.net>")
        // In a session of their own (setsid): no terminal to show the password on, whoever runs the tests.
        let refusals = [try world.msWithoutTerminal(["send", "-"], input: bytes), try world.msWithoutTerminal(["sendmail", "-t", "-i"], input: bytes),
                        try world.msWithoutTerminal(["compose", "--no-edit", "--send", "--to", "dora@example.net", "--subject", mail.subject,
                                                     "--body-file", "-"], input: Array(mail.body.utf8))]
        for result in refusals {
            #expect(result.status == 69, "\(result.status) \(result.errors)")
            #expect(result.errors.contains("may only reach the sender in a letter") && result.errors.contains("zed@example.org")
                    && result.errors.contains("notice = \"plain\""), "\(result.errors)")
            #expect(result.errors.split(separator: "\n").count == 1 && !result.errors.contains(mail.secret))
        }
        #expect(try world.outbox().isEmpty)
        #expect(world.server.transactions.isEmpty)
        let log = try String(contentsOfFile: world.reading.logPath, encoding: .utf8)
        #expect(!log.contains("POST /api/postcards"), "a page was published")
        // The same sender with notice = "plain" sends (the refusal is the setting's, not the mail's).
        let plain = try NoticeWorld(from: "zed@example.org", notice: "plain")
        defer { plain.close() }
        #expect(try plain.msWithoutTerminal(["send", "-"], input: bytes).status == 0)
    }

    @Test("the default notice and a sender without a key, at a terminal: send and compose show the password once on the terminal (not on standard output or error), mail no notice, and the password is in no file; it opens the page", arguments: ["send", "compose"])
    func shownOnTerminal(command: String) throws {
        let world = try NoticeWorld(from: "zed@example.org")
        defer { world.close() }
        let mail = SpanMail()
        let file = world.folder + "/mail.eml", body = world.folder + "/body.txt"
        try Data(mail.bytes(from: "Zed <zed@example.org>", to: "Dora <dora@example.net>", cc: "Erin <erin@example.net>")).write(to: URL(fileURLWithPath: file))
        try mail.body.write(toFile: body, atomically: true, encoding: .utf8)
        let arguments = command == "send" ? ["send", file]
            : ["compose", "--no-edit", "--send", "--to", "dora@example.net", "--cc", "erin@example.net", "--subject", mail.subject, "--body-file", body]
        let (result, terminal) = try runOnTerminal(Paths.mailsecExecutable.path, arguments + ["--config", world.config], environment: world.environment)
        #expect(result.status == 0, "\(result.status) \(result.errors) \(terminal)")
        let found = try #require(password(in: terminal), "no password on the terminal: \(terminal)")
        #expect(terminal.components(separatedBy: found).count == 2, "shown once")
        #expect(!(result.output + result.errors).contains(found), "the password on standard output or error")
        #expect(!(result.output + result.errors).contains("password notice queued"), "\(result.output) \(result.errors)")
        // No notice: the postcard alone, to Dora and Erin; nothing to the sender.
        let taken = world.server.transactions.map { Set($0.recipients.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "<>")) }) }
        #expect(taken == [["dora@example.net", "erin@example.net"]], "\(taken)")
        #expect(!(try world.outbox()).contains { $0["kind"] as? String == "notice" })
        let postcard = try #require(world.server.transactions.first).data
        #expect(!postcard.contains(found))
        let link = try #require(readingLink(in: try decodedText(postcard)))
        #expect(terminal.contains(link), "the terminal names another page")
        let revealed = try world.plain(["reveal", link], input: Array((found + "\n").utf8))
        #expect(revealed.status == 0 && revealed.output.contains(mail.secret), "\(revealed.errors)")
        let log = try String(contentsOfFile: world.reading.logPath, encoding: .utf8)
        #expect(!log.contains(found), "the password in the reading server's log")
        let holding = filesHolding(found, under: world.folder)
        #expect(holding.isEmpty, "the password is at rest in \(holding)")
    }

    @Test("the notice gets 451: no postcard that run; the next run sends the notice, then the postcard, each exactly once")
    func noticeDeferred() throws {
        let world = try NoticeWorld()
        defer { world.close() }
        // Data attempt 1 is the letter, 2 the notice.
        let server = try world.submitTo(failing: [2])
        let mail = SpanMail()
        let first = try world.ms(["send", "-"], input: mail.bytes())
        #expect(first.status == 75, "\(first.errors)")
        #expect(first.errors.contains("password notice queued to alice@example.org"), "\(first.errors)")
        #expect(server.transactions.map(\.recipients) == [["<bob@example.org>"]])
        let entries = try world.outbox()
        let notice = try #require(entries.first { $0["kind"] as? String == "notice" })
        let postcard = try #require(entries.first { $0["kind"] as? String == "postcard" })
        #expect(postcard["state"] as? String == "pending" && postcard["waitingFor"] as? Int == notice["id"] as? Int)
        #expect(postcard["attempts"] as? Int == 0)
        // The result line counts the held postcard's recipient, after the notice's own deferral.
        #expect(first.errors.contains("1 recipient queued for a later try") && first.errors.contains("1 delivered")
                && first.errors.contains("1 postcard recipient waits for the password notice (copy \(notice["id"] as? Int ?? -1))"),
                "\(first.errors)")
        #expect(!first.errors.contains("which was refused"))
        let listing = try world.ms(["outbox", "list"])
        #expect(listing.output.contains("waiting for the password notice (copy \(notice["id"] as? Int ?? -1))"), "\(listing.output)")

        let second = try world.ms(["outbox", "flush"])
        #expect(second.status == 0, "\(second.errors)")
        try checkDelivery(world, mail, server: server, sender: "alice@example.org", letters: true, output: second)
        let third = try world.ms(["outbox", "flush"])
        #expect(third.status == 0 && third.output.contains("nothing to deliver"), "\(third.output) \(third.errors)")
        #expect(server.transactions.count == 3)
    }

    @Test("outbox watch: a run whose notice gets 451 says how many postcard recipients wait for it, on its one line")
    func watchSaysHeld() throws {
        let world = try NoticeWorld()
        defer { world.close() }
        try world.submitAway()
        let mail = SpanMail()
        #expect(try world.ms(["send", "-"], input: mail.bytes()).status == 75)
        let notice = try #require(try world.outbox().first { $0["kind"] as? String == "notice" }?["id"] as? Int)
        // Data attempt 1 is the letter, 2 the notice.
        try world.submitTo(failing: [2])
        let out = world.folder + "/watch.out"
        let watch = try startMailsec(["outbox", "watch", "--interval", "1", "--config", world.config], environment: world.environment, output: out)
        defer {
            kill(watch.processIdentifier, SIGKILL)
            watch.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(60)
        var lines: [String] = []
        while Date() < deadline {
            lines = (try? String(contentsOfFile: out, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
            if lines.contains(where: { $0.contains("delivered 1") }) { break }
            usleep(200_000)
        }
        let line = try #require(lines.first { $0.contains("delivered 1") }, "\(lines)")
        #expect(line.hasPrefix("online: delivered 1, pending 1, failed 0")
                && line.hasSuffix("; 1 postcard recipient waits for the password notice (copy \(notice))"), "\(line)")
        #expect(world.server.transactions.count == 1, "only the letter went")
    }

    @Test("the RFC 1047 window on the notice: the server took it but its 250 was never recorded (send killed with SIGKILL while the server sat on its answer, or the connection cut after the take): the postcard stays held, the next run sends the notice again, then the postcard once", arguments: [true, false])
    func noticeWindow(killed: Bool) throws {
        let world = try NoticeWorld()
        defer { world.close() }
        var faults = RecordingSMTPServer.Faults()
        // Data attempt 1 is the letter, 2 the notice.
        if killed { faults.delayAfterDot = [2: 6] } else { faults.takeThenCut = [2] }
        let server = try world.submitTo(faults: faults)
        let mail = SpanMail()
        if killed {
            let send = try startMailsec(["send", "-", "--config", world.config], environment: world.environment, input: mail.bytes())
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, try !world.outbox().contains(where: { $0["kind"] as? String == "notice" && $0["state"] as? String == "sending" }) {
                usleep(100_000)
            }
            usleep(1_500_000)  // the data is sent; the server sits on its answer
            kill(send.processIdentifier, SIGKILL)
            send.waitUntilExit()
            #expect(server.transactions.count == 1, "the server answered the notice before the kill")
            while Date() < deadline, server.transactions.count < 2 { usleep(100_000) }
        } else {
            let result = try world.ms(["send", "-"], input: mail.bytes())
            #expect(result.status == 75, "\(result.errors)")
        }
        #expect(server.transactions.count == 2, "the server did not take the notice")
        let entries = try world.outbox()
        let notice = try #require(entries.first { $0["kind"] as? String == "notice" })
        let postcard = try #require(entries.first { $0["kind"] as? String == "postcard" })
        #expect(notice["state"] as? String == (killed ? "sending" : "pending"), "\(notice)")
        #expect(postcard["state"] as? String == "pending" && postcard["waitingFor"] as? Int == notice["id"] as? Int, "\(postcard)")

        let flushed = try world.ms(["outbox", "flush"])
        #expect(flushed.status == 0, "\(flushed.errors)")
        let taken = server.transactions
        let order = taken.map { $0.recipients.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "<>")) } }
        // The notice twice (the window's one duplicate), the postcard once, after both.
        #expect(order == [["bob@example.org"], ["alice@example.org"], ["alice@example.org"], ["dora@example.net"]], "\(order)")
        guard order.count == 4 else { return }
        #expect(taken[1].data == taken[2].data, "the notice sent again is another one")
        let found = try #require(password(in: try noticeText(taken[2].data, sealed: true, world: world)))
        let link = try #require(readingLink(in: try decodedText(taken[3].data)))
        let revealed = try world.plain(["reveal", link], input: Array((found + "\n").utf8))
        #expect(revealed.status == 0 && revealed.output.contains(mail.secret), "\(revealed.errors)")
        #expect(try world.outbox().allSatisfy { $0["state"] as? String == "sent" })
    }

    @Test("the notice refused for good (550): the postcard is never sent; resend releases it after the notice; discard takes it along")
    func noticeRefused() throws {
        let world = try NoticeWorld()
        defer { world.close() }
        let refusing = try world.submitRefusingSender()
        let kept = SpanMail(), dropped = SpanMail()
        var notices: [Int] = []
        for mail in [kept, dropped] {
            let result = try world.ms(["send", "-"], input: mail.bytes())
            #expect(result.status == 76, "\(result.errors)")
            #expect(result.errors.contains("password notice queued to alice@example.org"))
            let notice = try #require(try world.outbox().last { $0["kind"] as? String == "notice" }?["id"] as? Int)
            notices.append(notice)
            #expect(result.errors.contains("1 postcard recipient waits for the password notice (copy \(notice)), which was refused: "
                                           + "'mailsec outbox resend \(notice)'"), "\(result.errors)")
        }
        // A run of its own: the held postcards do not go, the failed notices are not retried without the person;
        // the line says what waits, and why (0: nothing failed in this run).
        let flushed = try world.ms(["outbox", "flush"])
        #expect(flushed.status == 0, "\(flushed.output) \(flushed.errors)")
        #expect(flushed.output == "nothing delivered: 2 postcard recipients wait for their password notices (copies \(notices[0]), \(notices[1])); "
                + "resend or discard the refused ones (see 'mailsec outbox')\n", "\(flushed.output)")
        #expect(refusing.transactions.map(\.recipients) == [["<bob@example.org>"], ["<bob@example.org>"]], "only the letters went")
        func copies(_ mail: SpanMail) throws -> [String: Int] {
            Dictionary(try world.outbox().filter { $0["messageID"] as? String == mail.id }.map { ($0["kind"] as? String ?? "", $0["id"] as? Int ?? -1) },
                       uniquingKeysWith: { a, _ in a })
        }
        let keptCopies = try copies(kept), droppedCopies = try copies(dropped)
        let listing = try world.ms(["outbox", "list"])
        #expect(listing.output.contains("waiting for the password notice (copy \(keptCopies["notice"]!))"))
        // Resending the held postcard itself: a usage error naming the notice, nothing sent.
        let direct = try world.ms(["outbox", "resend", String(keptCopies["postcard"]!)])
        #expect(direct.status == 64 && direct.errors.contains("resend copy \(keptCopies["notice"]!)"), "\(direct.status) \(direct.errors)")
        #expect(refusing.transactions.count == 2)

        // A server that takes the sender again; resend of the notice sends it, then its postcard.
        let taking = try world.submitTo()
        let resent = try world.ms(["outbox", "resend", String(keptCopies["notice"]!)])
        #expect(resent.status == 0, "\(resent.errors)")
        try checkDelivery(world, kept, server: taking, sender: "alice@example.org", letters: false, sealed: true, output: resent)

        // Discarding the other notice discards its postcard: Dora never gets a link she could not open.
        let discarded = try world.ms(["outbox", "discard", String(droppedCopies["notice"]!)])
        #expect(discarded.status == 0 && discarded.output.contains("\(droppedCopies["postcard"]!)"), "\(discarded.output) \(discarded.errors)")
        #expect(try copies(dropped).keys.sorted() == ["letter"])
        #expect(try world.ms(["outbox", "flush"]).status == 0)
        #expect(taking.transactions.count == 2, "the discarded mail's postcard went out")
    }

    @Test("outbox edit of a compose mail whose notice failed: the notice and the waiting postcard go with the rest into the draft")
    func editFailed() throws {
        let world = try NoticeWorld()
        defer { world.close() }
        try world.submitRefusingSender()
        let mail = SpanMail()
        let composed = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--cc", "dora@example.net",
                                     "--subject", mail.subject, "--body-file", "-"], input: Array(mail.body.utf8))
        #expect(composed.status == 0, "\(composed.errors)")
        let entries = try world.outbox()
        let notice = try #require(entries.first { $0["kind"] as? String == "notice" })
        let postcard = try #require(entries.first { $0["kind"] as? String == "postcard" })
        #expect(notice["state"] as? String == "failed" && postcard["state"] as? String == "pending")
        // The waiting postcard points at its notice.
        let held = try world.ms(["outbox", "edit", String(postcard["id"] as? Int ?? -1)])
        #expect(held.status == 64 && held.errors.contains("password notice"), "\(held.errors)")
        let edited = try world.ms(["outbox", "edit", String(notice["id"] as? Int ?? -1)])
        #expect(edited.status == 0, "\(edited.errors)")
        let left = try world.outbox()
        #expect(left.allSatisfy { $0["state"] as? String == "sent" } && left.map { $0["kind"] as? String } == ["letter"], "\(left)")
        let drafts = try world.ms(["drafts", "list"])
        #expect(drafts.status == 0 && drafts.output.contains("dora@example.net"), "\(drafts.output)")
        #expect(!drafts.output.contains("bob@example.org"), "Bob has the letter already")
        #expect(try world.ms(["outbox", "flush"]).status == 0)
        #expect(world.server.transactions.count == 1, "something of the taken-back mail went out")
    }
    @Test("the store full after the page was published: nothing queued (75), nothing sent, and the page withdrawn")
    func fullStoreWithdraws() throws {
        let world = try NoticeWorld()
        defer { world.close() }
        guard try world.storeOnTmpfs(size: "2m") else { return }
        let first = SpanMail()
        #expect(try world.ms(["send", "-"], input: first.bytes()).status == 0)
        #expect(try world.pagesHeld() == 1)
        // Filled but for 320 KB: room to open the store, none for a mail of a megabyte.
        var space = statvfs()
        #expect(statvfs(world.folder + "/data", &space) == 0)
        let filler = world.folder + "/data/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 0x55, count: 4096)
        for _ in 0..<max(0, (Int(space.f_bavail) * Int(space.f_frsize) - 320 * 1024) / 4096) {
            _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        close(fd)
        let big = SpanMail()
        let bytes = big.bytes() + Array(String(repeating: "A fairly long line of text that fills the mail up to half a megabyte.\n", count: 7000).utf8)
        let sentBefore = world.server.transactions.count
        let full = try world.ms(["send", "-"], input: bytes)
        #expect(full.status == 75, "\(full.status) \(full.errors)")
        #expect(full.errors.split(separator: "\n").count == 1 && !full.errors.contains(big.secret), "\(full.errors)")
        #expect(world.server.transactions.count == sentBefore, "sent though it could not be stored")
        let log = try String(contentsOfFile: world.reading.logPath, encoding: .utf8)
        #expect(log.components(separatedBy: "POST /api/postcards 201").count == 3, "the second mail was not published before the store failed")
        #expect(try world.pagesHeld() == 1, "the page of the mail that was not queued is still there")
        #expect(try world.outbox().allSatisfy { $0["messageID"] as? String == first.id })
        // Room again: the same mail goes, with a notice of its own.
        unlink(filler)
        let again = try world.ms(["send", "-"], input: bytes)
        #expect(again.status == 0, "\(again.errors)")
        #expect(try world.pagesHeld() == 2)
    }
    @Test("generated: several mails, 451 at random data attempts, flushes until done: each copy once, every notice before its postcard, each notice opens its own mail's page", arguments: 0..<3)
    func randomDeferrals(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let failing = Set((1...14).filter { _ in Int.random(in: 0..<10, using: &random) < 4 })
        let world = try NoticeWorld()
        defer { world.close() }
        let server = try world.submitTo(failing: failing)
        let mails = (0..<Int.random(in: 2...3, using: &random)).map { _ in SpanMail() }
        for mail in mails {
            let result = try world.ms(["send", "-"], input: mail.bytes())
            #expect(result.status == 0 || result.status == 75, "\(result.status) \(result.errors)")
        }
        var flushes = 0
        while try world.outbox().contains(where: { $0["state"] as? String != "sent" }) && flushes < 12 {
            _ = try world.ms(["outbox", "flush"])
            flushes += 1
        }
        #expect(try world.outbox().allSatisfy { $0["state"] as? String == "sent" }, "not all delivered after \(flushes) flushes (failing \(failing.sorted()))")
        let taken = server.transactions
        for mail in mails {
            let own = taken.enumerated().filter { header("Message-ID", in: $0.element.data) == "<\(mail.id)>" }
            let letters = own.filter { $0.element.recipients == ["<bob@example.org>"] }
            let postcards = own.filter { $0.element.recipients == ["<dora@example.net>"] }
            #expect(letters.count == 1 && postcards.count == 1, "\(mail.id): \(own.map(\.element.recipients))")
            let notices = try taken.enumerated().filter { $0.element.recipients == ["<alice@example.org>"] }.filter {
                try noticeText($0.element.data, sealed: true, world: world).contains(mail.id)
            }
            #expect(notices.count == 1, "\(mail.id): \(notices.count) notices")
            guard let notice = notices.first, let postcard = postcards.first else { continue }
            #expect(notice.offset < postcard.offset, "\(mail.id): the postcard went before its notice (failing \(failing.sorted()))")
            let link = try #require(readingLink(in: try decodedText(postcard.element.data)))
            let found = try #require(password(in: try noticeText(notice.element.data, sealed: true, world: world)))
            let revealed = try world.plain(["reveal", link], input: Array((found + "\n").utf8))
            #expect(revealed.status == 0 && revealed.output.contains(mail.secret), "\(revealed.errors)")
        }
        #expect(taken.count == 3 * mails.count, "\(taken.count) transactions for \(mails.count) mails")
        print("notice deferrals, seed \(seed): failing data attempts \(failing.sorted()), \(flushes) flushes")
    }
}
