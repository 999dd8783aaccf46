import Compose
import Foundation
import Incoming
import MIME
import OpenPGP
import Pipeline
import Policy
import TestSupport
import Testing

let plainOriginal = """
    From: Bob <bob@example.org>
    Reply-To: Bob at home <bob.home@example.net>
    To: Alice <alice@example.org>, Dan <dan@example.com>
    Cc: a.liddell@example.org, carol@example.org
    Subject: RE: Lunch
    Date: Sat, 21 Nov 2026 10:00:00 +0100
    Message-ID: <m1@example.net>
    References: <r0@example.net> <r00@example.net>
    MIME-Version: 1.0
    Content-Type: text/plain; charset=utf-8

    Noon at the usual place?

    Bob

    """

let secretText = "The launch window opens on Tuesday at 06:00.\nBring the blue folder with the coordinates.\n"

/// A letter from Bob to Alice (Cc Carol and a postcard recipient), made by
/// the pipeline in Bob's home: the copy Alice receives.
func letterFromBob() throws -> [UInt8] {
    try withGnuPGHome(importing: ["bob.sec.asc", "alice.pub.asc", "carol.pub.asc"]) { home throws in
        let message = try MIMEMessage.parse(Array("""
            From: Bob <bob@example.org>
            To: Alice <alice@example.org>
            Cc: carol@example.org, nobody@example.org
            Subject: Falcon schedule
            Date: Sat, 21 Nov 2026 11:00:00 +0100
            Message-ID: <falcon.1@example.org>
            MIME-Version: 1.0
            Content-Type: text/plain; charset=utf-8

            \(secretText)
            """.utf8))
        let (_, copies, _, _) = try MailPipeline(gnupg: GnuPG(home: home.path)).process(message)
        let letter = try #require(copies.first { $0.kind == .letter && $0.recipients.contains("alice@example.org") })
        return try letter.bytes
    }
}

/// Runs `body` in Alice's home with Bob's letter opened, and the letter's bytes.
func withLetterFromBob(_ body: (GnuPG, Original, [UInt8]) async throws -> Void) async throws {
    let letter = try letterFromBob()
    try await withHome { home in
        let gnupg = GnuPG(home: home.path)
        try await body(gnupg, try Original.open(letter, gnupg: gnupg), letter)
    }
}

@Suite("Reply and forward", .serialized)
struct ReplyForwardTests {
    @Test("reply headers: Re: once, In-Reply-To, References, Reply-To, quoting; reply-all leaves out the sender's addresses")
    func replyHeaders() async throws {
        try await withHome { home in
            let gnupg = GnuPG(home: home.path)
            let original = try Original.open(Array(plainOriginal.utf8), gnupg: gnupg)
            #expect(!original.arrivedAsLetter && original.protected == nil)

            let reply = try await ComposeSession.reply(to: original, all: false, from: alice, gnupg: gnupg, outbox: HeldOutbox())
            var state = await reply.state
            #expect(state.mode == .reply)
            #expect(state.draft.recipients.map(\.address) == ["bob.home@example.net"])
            #expect(state.draft.mail.subject == "RE: Lunch")
            #expect(state.draft.mail.text.contains("Bob wrote:\n> Noon at the usual place?\n>\n> Bob\n"))
            let message = try state.draft.message()
            #expect(message.header("In-Reply-To") == "<m1@example.net>")
            #expect(message.header("References") == "<r0@example.net> <r00@example.net> <m1@example.net>")

            let all = try await ComposeSession.reply(to: original, all: true, from: alice, identities: ["A.Liddell@example.org"],
                                                     gnupg: gnupg, outbox: HeldOutbox())
            state = await all.state
            #expect(state.mode == .replyAll)
            #expect(state.draft.recipients.map { "\($0.role.rawValue):\($0.address)" }
                    == ["to:bob.home@example.net", "to:dan@example.com", "cc:carol@example.org"])
            #expect(state.downgrade.isEmpty, "a postcard original has nothing to protect")
            #expect(!state.draft.mail.text.contains("[[private]]"))

            for (subject, expected) in [("Lunch", "Re: Lunch"), ("re: Lunch", "re: Lunch"), ("", "Re:"), ("Fwd: x", "Re: Fwd: x")] {
                let text = plainOriginal.replacingOccurrences(of: "Subject: RE: Lunch", with: "Subject: \(subject)")
                #expect(try Original.open(Array(text.utf8), gnupg: gnupg).replySubject == expected)
            }
            #expect(try Original.open(Array(plainOriginal.utf8), gnupg: gnupg).forwardSubject == "Fwd: RE: Lunch")
            let forwarded = plainOriginal.replacingOccurrences(of: "Subject: RE: Lunch", with: "Subject: FW: Lunch")
            #expect(try Original.open(Array(forwarded.utf8), gnupg: gnupg).forwardSubject == "FW: Lunch")
        }
    }

    @Test("a letter is opened by the safe decryption; an EFAIL shape is refused")
    func opening() async throws {
        try await withLetterFromBob { gnupg, original, letter in
            #expect(original.arrivedAsLetter && original.subject == "Falcon schedule")
            #expect(original.text.contains("launch window"))
            #expect(original.protected?.subject == "Falcon schedule")

            // The encrypted part beside a text part the attacker wrote: not decrypted.
            let parsed = try MIMEMessage.parse(letter)
            let wrapped = MIMEMessage(body: .multipart("mixed", [.text("Please reply:"), try #require(parsed.body).copy()]))
            wrapped.add([MailAddress(address: "bob@example.org")], to: .from)
            #expect(throws: DecryptionRefusal.self) { try Original.open(wrapped.serialize(), gnupg: gnupg) }
        }
    }

    @Test("reply-all to a mixed audience: the quoted letter text is private by default; the postcard has it censored, letters whole")
    func mixedReplyAll() async throws {
        try await withLetterFromBob { gnupg, original, _ in
            let outbox = HeldOutbox()
            let session = try await ComposeSession.reply(to: original, all: true, from: alice, gnupg: gnupg, outbox: outbox)
            let state = await session.state
            #expect(state.draft.recipients.map(\.address) == ["bob@example.org", "carol@example.org", "nobody@example.org"])
            #expect(state.mailState == .extendedPostcard(.censored))
            #expect(state.draft.mail.text.contains("[[private]]On "))
            #expect(state.draft.mail.subject == "Re: [[private]]Falcon schedule[[/private]]")
            #expect(state.downgrade.isEmpty)
            try await session.setText("Yes, I will be there.\n\n" + state.draft.mail.text)
            let sent = try await session.send()
            if case .sent = sent.phase {} else { Issue.record("phase \(sent.phase)") }

            let mail = try #require(outbox.queued.first)
            let postcard = try #require(mail.copies.first { $0.kind == .postcard })
            #expect(postcard.recipients == ["nobody@example.org"])
            let shown = try visibleText(try postcard.bytes)
            #expect(shown.contains("Yes, I will be there."))
            for secret in ["launch window", "blue folder", "Falcon"] { #expect(!shown.contains(secret), "\(secret) in the postcard") }
            let letterCopy = try #require(mail.copies.first { $0.kind == .letter })
            #expect(Set(letterCopy.recipients) == ["bob@example.org", "carol@example.org"])
            let read = try gpgOpen(try letterCopy.bytes, as: "carol.sec.asc")
            #expect(read.contains("> The launch window opens on Tuesday at 06:00."))
            #expect(read.contains("Falcon schedule") && !read.contains("[[private]]"))
        }
    }

    @Test("downgrade: letter content to a postcard recipient is refused, naming them, until confirmed")
    func downgradeConfirmation() async throws {
        try await withLetterFromBob { gnupg, original, _ in
            // A plain reply to Bob alone: a letter, nothing to confirm.
            let outbox = HeldOutbox()
            let reply = try await ComposeSession.reply(to: original, all: false, from: alice, gnupg: gnupg, outbox: outbox)
            let first = await reply.state
            #expect(first.downgrade.isEmpty && !first.draft.mail.text.contains("[[private]]"))
            // Then a postcard recipient joins: the unmarked quote would reach them.
            var state = try await reply.add([person("nobody@example.org")], as: .cc)
            #expect(state.downgrade == ["nobody@example.org"])
            await #expect(throws: ComposeError(.downgrade(["nobody@example.org"]))) { try await reply.send() }
            let phase = await reply.state.phase
            #expect(outbox.queued.isEmpty && phase == .editing)
            // Re-typed rather than quoted, the text is still found.
            state = try await reply.setText("As you said: the   launch window opens on Tuesday at 06:00.")
            #expect(state.downgrade == ["nobody@example.org"])
            // Marked private, it is censored for the postcard: no confirmation needed.
            state = try await reply.setText("[[private]]" + original.quoted + "[[/private]]")
            #expect(state.downgrade == ["nobody@example.org"], "the subject Re: Falcon schedule is still in clear")
            state = try await reply.setSubject("Re: [[private]]Falcon schedule[[/private]]")
            #expect(state.downgrade.isEmpty)
            state = try await reply.setText(original.quoted)
            state = try await reply.confirmDowngrade()
            #expect(state.downgradeConfirmed)
            // The confirmation named nobody@; a postcard recipient added after
            // it is not covered (it was: the flag held for anyone added).
            state = try await reply.add([person("erin@example.com")], as: .cc)
            #expect(state.downgrade == ["nobody@example.org", "erin@example.com"] && !state.downgradeConfirmed)
            await #expect(throws: ComposeError(.downgrade(["erin@example.com"]))) { try await reply.send() }
            #expect(outbox.queued.isEmpty)
            state = try await reply.confirmDowngrade()
            #expect(state.downgradeConfirmed)
            try await reply.send()
            let postcard = try #require(outbox.queued.first?.copies.first { $0.kind == .postcard })
            #expect(try visibleText(try postcard.bytes).contains("launch window"), "confirmed: the postcard carries it")

            // Forwarded whole to a postcard recipient: refused until confirmed.
            let forward = try await ComposeSession.forward(original, to: [person("nobody@example.org")], asAttachment: true,
                                                           from: alice, gnupg: gnupg, outbox: HeldOutbox())
            #expect(await forward.state.draft.mail.subject == "Fwd: Falcon schedule")
            #expect(await forward.state.downgrade == ["nobody@example.org"])
            await #expect(throws: ComposeError(.downgrade(["nobody@example.org"]))) { try await forward.send() }
            // Even with the subject changed, the attached mail is still there.
            _ = try await forward.setSubject("Have a look")
            #expect(await forward.state.downgrade == ["nobody@example.org"])

            // Forwarded to a letter recipient: fine, and the letter carries the original.
            let letterOutbox = HeldOutbox()
            let toBob = try await ComposeSession.forward(original, to: [person("bob@example.org")], asAttachment: true,
                                                         from: alice, gnupg: gnupg, outbox: letterOutbox)
            let toBobState = await toBob.state
            #expect(toBobState.downgrade.isEmpty && toBobState.mailState == .letter)
            try await toBob.send()
            let copy = try #require(letterOutbox.queued.first?.copies.first)
            let read = try gpgOpen(try copy.bytes, as: "bob.sec.asc")
            #expect(read.contains("message/rfc822") && read.contains("launch window"))

            // Inline: the text and header lines in the body.
            let inline = try await ComposeSession.forward(original, to: [person("erin@example.com")], asAttachment: false,
                                                          from: alice, gnupg: gnupg, outbox: HeldOutbox())
            state = await inline.state
            #expect(state.mode == .forwardInline && state.draft.mail.text.contains("Subject: Falcon schedule"))
            #expect(state.downgrade == ["erin@example.com"])
        }
    }
}
