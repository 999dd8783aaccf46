import Foundation
import TestSupport
import Testing

@Suite("compose, reply, forward, drafts and outbox edit through the built CLI", .serialized)
struct ComposeCLITests {
    @Test("a draft saved by one process is listed, shown, taken up and sent by others; the store shows nothing of it")
    func draftsAcrossProcesses() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        var random = SeededRandom(seed: 1522)
        let word = { (prefix: String) in prefix + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! }) }
        let subject = word("Subj"), body = word("Body"), attachmentName = word("file") + ".txt", hidden = word("Priv")
        let attachment = world.folder + "/" + attachmentName
        try "attached \(word("Att"))\n".write(toFile: attachment, atomically: true, encoding: .utf8)

        let saved = try world.ms(["compose", "--no-edit", "--save-draft", "--to", "Bob <bob@example.org>", "--cc", "dave@example.net",
                                  "--subject", subject, "--attach", attachment, "--body-file", "-"],
                                 input: Array("Hello \(body).\n[[private]]\(hidden)[[/private]]\n".utf8))
        #expect(saved.status == 0, "\(saved.errors)")
        let id = try #require(saved.output.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        #expect(saved.output.hasPrefix("saved as draft "))

        // At rest: neither the database nor its WAL shows the draft.
        let raw = try world.storeBytes()
        #expect(raw.contains("BEGIN PGP MESSAGE"))
        for secret in [subject, body, hidden, attachmentName, "bob@example.org", "dave@example.net"] {
            #expect(!raw.contains(secret), "\(secret) readable in the store")
        }

        let list = try world.ms(["drafts"])
        #expect(list.status == 0 && list.output.contains(id) && list.output.contains(subject), "\(list.output) \(list.errors)")
        let show = try world.ms(["drafts", "show", String(id.prefix(6))])
        #expect(show.status == 0, "\(show.errors)")
        for expected in ["To: Bob <bob@example.org>", "Cc: dave@example.net", "Subject: " + subject,
                         "Attached: 1 (" + attachmentName, body] {
            #expect(show.output.contains(expected), "\(expected) not in \(show.output)")
        }
        #expect(try world.ms(["drafts", "show", "nosuch"]).status == 64)

        // Sent from another process: a letter to Bob, a censored postcard to Dave; the draft goes.
        let sent = try world.ms(["drafts", "edit", id, "--no-edit", "--send"])
        #expect(sent.status == 0, "\(sent.errors)")
        #expect(sent.output.contains("sent: 2 copies queued") && sent.output.contains("delivered to 2 recipients"), "\(sent.output)")
        let transactions = world.server.transactions
        #expect(transactions.count == 2)
        let letter = try #require(transactions.first { $0.recipients == ["<bob@example.org>"] })
        let postcard = try #require(transactions.first { $0.recipients == ["<dave@example.net>"] })
        #expect(letter.data.contains("multipart/encrypted") && !letter.data.contains(body))
        let postcardText = try decodedText(postcard.data)
        #expect(postcardText.contains(body) && !postcardText.contains(hidden) && !postcard.data.contains(hidden), "\(postcardText)")
        #expect(header("Subject", in: postcard.data) == subject)
        let none = try world.ms(["drafts"])
        #expect(none.output == "no drafts\n", "\(none.output) \(none.errors)")
        // The sender's own copy (the letter) is filed in sent_maildir.
        let filed = try FileManager.default.contentsOfDirectory(atPath: world.sent + "/new")
        #expect(filed.count == 1)
        let own = try String(contentsOfFile: world.sent + "/new/" + filed[0], encoding: .utf8)
        #expect(own.contains("multipart/encrypted"))
        // Sent mail keeps no source in the outbox.
        #expect(try world.outbox().allSatisfy { ($0["state"] as? String) == "sent" })
        #expect(!(try world.storeBytes().contains(body)))

        #expect(try world.ms(["drafts", "delete", "nosuch"]).status == 64)
    }

    @Test("compose --no-edit: refusals come before anything is queued, with one line and the README's statuses")
    func refusals() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let cases: [([String], String, Int32, String)] = [
            (["--to", "bob@example.org"], "one [[private]]two\n", 65, "marked span is never closed"),
            (["--to", "bob@example.org"], "no subject, fine\n", 0, ""),
            ([], "nobody\n", 65, "no recipients"),
            (["--to", "not-an-address"], "x\n", 64, "--to is not a mail address"),
            (["--to", "bob@example.org", "--attach", world.folder + "/missing.pdf"], "x\n", 66, "cannot read"),
        ]
        for (arguments, body, status, words) in cases {
            let before = world.server.transactions.count
            let result = try world.ms(["compose", "--no-edit", "--send", "--body-file", "-"] + arguments, input: Array(body.utf8))
            #expect(result.status == status, "\(arguments): \(result.status) \(result.errors)")
            if status != 0 {
                expectOneLine(result)
                #expect(result.errors.contains(words), "\(arguments): \(result.errors)")
                #expect(world.server.transactions.count == before, "\(arguments): something was sent")
            }
        }
        #expect(try world.outbox().count == 1)
        // Policy: a letter required for example.net, Dave has no key: 69 naming him, nothing queued.
        try world.writeConfig(trusted: true, policy: "mode = \"require-letter\"")
        let refused = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--to", "dave@example.net",
                                    "--body-file", "-"], input: Array("x\n".utf8))
        #expect(refused.status == 69, "\(refused.errors)")
        expectOneLine(refused)
        #expect(refused.errors.contains("dave@example.net"))
        #expect(try world.outbox().count == 1)
        // Usage.
        for arguments in [["--no-edit", "--send", "--save-draft"], ["--extension", "loud"], ["--send", "--save-draft"]] {
            let result = try world.ms(["compose", "--to", "bob@example.org"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.errors)")
            expectOneLine(result)
        }
        // Without a terminal there is no editor and no prompt: 64, said so.
        for arguments in [[], ["--no-edit"]] {
            let noTerminal = try run("setsid", ["-w", Paths.mailsecExecutable.path, "compose", "--to", "bob@example.org", "--config", world.config]
                                     + arguments, environment: world.environment)
            #expect(noTerminal.status == 64 && noTerminal.errors.contains("no terminal"), "\(noTerminal.errors)")
        }
    }

    @Test("reply and forward: Re:/Fwd: once, In-Reply-To, References, quote; an encrypted original needs downgrade confirmation")
    func replyAndForward() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let plain = world.folder + "/plain.eml"
        try """
            From: Dave <dave@example.net>
            To: Alice <alice@example.org>, Carol <carol@example.org>
            Cc: erin@example.net
            Subject: Re: Picnic
            Message-ID: <orig.2@example.net>
            References: <orig.1@example.net>
            Date: Sun, 22 Nov 2026 10:00:00 +0000

            Bring the blue blanket.

            """.write(toFile: plain, atomically: true, encoding: .utf8)
        let reply = try world.ms(["reply", plain, "--all", "--no-edit", "--send", "--body-file", "-"], input: Array("Will do.\n".utf8))
        #expect(reply.status == 0, "\(reply.errors)")
        let transactions = world.server.transactions
        let postcard = try #require(transactions.first { $0.data.contains("In-Reply-To") && !$0.data.contains("multipart/encrypted") })
        #expect(Set(postcard.recipients) == ["<dave@example.net>", "<erin@example.net>"])
        #expect(transactions.contains { $0.recipients == ["<carol@example.org>"] }, "Carol (with a key) gets a letter")
        #expect(!transactions.contains { $0.recipients.contains("<alice@example.org>") }, "not back to oneself")
        #expect(header("Subject", in: postcard.data) == "Re: Picnic")
        #expect(header("In-Reply-To", in: postcard.data) == "<orig.2@example.net>")
        #expect(header("References", in: postcard.data) == "<orig.1@example.net> <orig.2@example.net>")
        let text = try decodedText(postcard.data)
        #expect(text.hasPrefix("Will do.") && text.contains("> Bring the blue blanket."), "\(text)")

        let forward = try world.ms(["forward", plain, "--to", "frank@example.net", "--no-edit", "--send"])
        #expect(forward.status == 0, "\(forward.errors)")
        let passed = try #require(world.server.transactions.last)
        #expect(passed.recipients == ["<frank@example.net>"] && header("Subject", in: passed.data) == "Fwd: Re: Picnic")
        #expect(try decodedText(passed.data).contains("Bring the blue blanket."))
        #expect(try world.ms(["forward", plain, "--no-edit", "--send"]).status == 64, "forward needs --to")

        // An original that arrived as a letter (Bob to Alice, encrypted with mailsec encrypt in Bob's home).
        let letter = try world.letterFromBob()
        let before = world.server.transactions.count
        let refused = try world.ms(["forward", letter, "--to", "frank@example.net", "--no-edit", "--send"])
        #expect(refused.status == 69, "\(refused.errors)")
        expectOneLine(refused)
        #expect(refused.errors.contains("frank@example.net"))
        let queuedCount = try world.outbox().count
        #expect(world.server.transactions.count == before && queuedCount == 3, "nothing queued")
        let toBob = try world.ms(["reply", letter, "--no-edit", "--send"])
        #expect(toBob.status == 0, "a letter back to Bob needs no confirmation: \(toBob.errors)")
        let confirmed = try world.ms(["forward", letter, "--to", "frank@example.net", "--no-edit", "--send", "--confirm-downgrade"])
        #expect(confirmed.status == 0, "\(confirmed.errors)")
        #expect(try decodedText(try #require(world.server.transactions.last).data).contains("7405"))
    }

    @Test("outbox edit: a failed mail becomes a draft, leaves the outbox, and is sent after the fix; other states are refused")
    func outboxEdit() throws {
        // Without the CA the server's certificate fails verification: a permanent failure.
        let world = try ComposeWorld(trusted: false)
        defer { world.close() }
        let queued = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--cc", "dave@example.net",
                                   "--subject", "Second try", "--body-file", "-"], input: Array("Ship it.\n".utf8))
        #expect(queued.status == 0, "queued is sent: \(queued.errors)")
        #expect(queued.errors.contains("failed"), "\(queued.errors)")
        let entries = try world.outbox()
        #expect(entries.count == 2 && entries.allSatisfy { ($0["state"] as? String) == "failed" }, "\(entries)")
        let id = try #require(entries.first?["id"] as? Int)

        // A failed copy of mail from 'send' keeps no source.
        let sendMail = "From: alice@example.org\nTo: carol@example.org\nSubject: plain send\n\nhi\n"
        _ = try world.ms(["send"], input: Array(sendMail.utf8))
        let fromSend = try #require(try world.outbox().last?["id"] as? Int)
        let noSource = try world.ms(["outbox", "edit", String(fromSend)])
        #expect(noSource.status == 64 && noSource.errors.contains("no source"), "\(noSource.errors)")
        expectOneLine(noSource)
        #expect(try world.ms(["outbox", "edit", "999"]).status == 64)

        let taken = try world.ms(["outbox", "edit", String(id)])
        #expect(taken.status == 0, "\(taken.errors)")
        let draft = try #require(taken.output.split(separator: " ").dropFirst(6).first.map(String.init))
        #expect(try world.outbox().map { $0["id"] as? Int } == [fromSend], "the whole mail left the outbox")
        #expect(try world.ms(["outbox", "edit", String(id)]).status == 64, "taken back once")
        let show = try world.ms(["drafts", "show", draft])
        #expect(show.output.contains("Subject: Second try") && show.output.contains("Ship it.")
                && show.output.contains("dave@example.net"), "\(show.output) \(show.errors)")

        try world.writeConfig(trusted: true)
        let again = try world.ms(["drafts", "edit", draft, "--no-edit", "--send"])
        #expect(again.status == 0 && again.output.contains("delivered to 2 recipients"), "\(again.output) \(again.errors)")
        let sentCopy = try #require(try world.outbox().first { ($0["state"] as? String) == "sent" }?["id"] as? Int)
        let refused = try world.ms(["outbox", "edit", String(sentCopy)])
        #expect(refused.status == 64 && refused.errors.contains("was sent"), "\(refused.errors)")
        expectOneLine(refused)
    }

    @Test("outbox edit refuses a pending copy (a temporary failure is tried again)")
    func pendingRefused() throws {
        let world = try ComposeWorld(failing: [1])
        defer { world.close() }
        let queued = try world.ms(["compose", "--no-edit", "--send", "--to", "dave@example.net", "--body-file", "-"],
                                  input: Array("later\n".utf8))
        #expect(queued.status == 0 && queued.errors.contains("queued for a later try"), "\(queued.errors)")
        let id = try #require(try world.outbox().first?["id"] as? Int)
        let refused = try world.ms(["outbox", "edit", String(id)])
        #expect(refused.status == 64 && refused.errors.contains("pending"), "\(refused.errors)")
    }

    @Test("key continuity: a recipient's remembered key deleted, compose, reply and forward refuse (75, one line naming them), nothing queued or sent; after keys forget it goes")
    func keyContinuity() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let first = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--cc", "carol@example.org",
                                  "--subject", "one", "--body-file", "-"], input: Array("First.\n".utf8))
        #expect(first.status == 0, "\(first.errors)")
        #expect(world.server.transactions.contains { $0.recipients.contains("<carol@example.org>") && $0.data.contains("multipart/encrypted") },
                "Carol gets a letter")

        let carol = try world.home.gpg(["--with-colons", "--list-keys", "carol@example.org"]).output
            .split(separator: "\n").first { $0.hasPrefix("fpr:") }
            .map { String($0.split(separator: ":", omittingEmptySubsequences: false)[9]) }
        #expect(try world.home.gpg(["--batch", "--yes", "--delete-key", try #require(carol)]).status == 0)

        let original = world.folder + "/from-carol.eml"
        try """
            From: Carol <carol@example.org>
            To: Alice <alice@example.org>, bob@example.org
            Subject: Plans
            Message-ID: <plans.1@example.org>

            Tomorrow?

            """.write(toFile: original, atomically: true, encoding: .utf8)
        let queued = try world.outbox().count
        let sent = world.server.transactions.count
        let attempts: [[String]] = [
            ["compose", "--no-edit", "--send", "--to", "bob@example.org", "--bcc", "carol@example.org", "--body-file", "-"],
            ["reply", original, "--all", "--no-edit", "--send", "--body-file", "-"],
            ["forward", original, "--to", "Carol <carol@example.org>", "--no-edit", "--send", "--body-file", "-"],
        ]
        for arguments in attempts {
            let refused = try world.ms(arguments, input: Array("Second.\n".utf8))
            #expect(refused.status == 75, "\(arguments[0]): \(refused.status) \(refused.errors)")
            expectOneLine(refused)
            #expect(refused.errors.contains("key continuity") && refused.errors.contains("carol@example.org"), "\(refused.errors)")
            #expect(!refused.errors.contains("bob@example.org"), "\(refused.errors)")
            #expect(try world.outbox().count == queued, "\(arguments[0]): nothing queued")
            #expect(world.server.transactions.count == sent, "\(arguments[0]): nothing sent")
        }

        let forgotten = try run(Paths.mailsecExecutable.path, ["keys", "forget", "carol@example.org"], environment: world.environment)
        #expect(forgotten.status == 0 && forgotten.output == "carol@example.org: forgotten\n", "\(forgotten.errors)")
        let after = try world.ms(["compose", "--no-edit", "--send", "--to", "bob@example.org", "--cc", "carol@example.org",
                                  "--subject", "three", "--body-file", "-"], input: Array("Third.\n".utf8))
        #expect(after.status == 0, "\(after.errors)")
        let carolsCopy = try #require(world.server.transactions.dropFirst(sent).first { $0.recipients.contains("<carol@example.org>") })
        #expect(!carolsCopy.data.contains("multipart/encrypted"), "Carol, without a key now, gets a postcard")
    }
}

@Suite("compose --extension partially-encrypted with the configuration's [reading] server", .serialized)
struct ComposeReadingCLITests {
    @Test("with [reading] the spans are published to a real reading server and the mail is queued and sent; without it one line, nothing queued")
    func publishesThroughConfiguredServer() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        let world = try ComposeWorld()
        defer { world.close() }
        var random = SeededRandom(seed: UInt64(Date().timeIntervalSince1970))
        let secret = "zq" + String((0..<10).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
        let body = "Meet at [[private]]\(secret)[[/private]] tonight.\n"
        let arguments = ["compose", "--no-edit", "--send", "--extension", "partially-encrypted", "--to", "dave@example.net",
                         "--subject", "Plans", "--body-file", "-"]

        // Without [reading]: refused with one line before anything is queued or sent.
        let refused = try world.ms(arguments, input: Array(body.utf8))
        #expect(refused.status != 0)
        expectOneLine(refused)
        #expect(refused.errors.contains("reading server"), "\(refused.errors)")
        #expect(!refused.errors.contains(secret))
        #expect(try world.outbox().isEmpty)
        #expect(world.server.transactions.isEmpty)

        // A token file others can read is refused by the configuration.
        let token = world.folder + "/publish-token"
        FileManager.default.createFile(atPath: token, contents: Data((server.token + "\n").utf8), attributes: [.posixPermissions: 0o644])
        let reading = "[reading]\npublish_url = \"\(server.url)\"\ntoken_file = \"\(token)\"\nlifetime_days = 2\n"
        try world.writeConfig(trusted: true, policy: reading)
        let open = try world.ms(arguments, input: Array(body.utf8))
        #expect(open.status != 0)
        expectOneLine(open)
        #expect(open.errors.contains("reading.token_file"), "\(open.errors)")
        #expect(world.server.transactions.isEmpty)

        // With a private token: published, queued, sent; the span never leaves in the postcard.
        chmod(token, 0o600)
        #expect(try world.outbox().isEmpty, "nothing was queued by the refusals")
        #expect(!((try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? "").contains("POST /api/postcards 201"))
        let sent = try world.ms(arguments, input: Array(body.utf8))
        #expect(sent.status == 0, "\(sent.errors)")
        #expect(try world.outbox().count >= 1)
        let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
        #expect(log.components(separatedBy: "POST /api/postcards 201").count == 2, "one publication")
        #expect(!world.server.transactions.isEmpty)
        for transaction in world.server.transactions {
            #expect(!transaction.data.contains(secret), "a span in a postcard")
        }
        #expect(!(try world.storeBytes()).contains(secret))
    }
}
