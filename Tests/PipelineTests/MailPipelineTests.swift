import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

@Suite("Letters and postcards through the pipeline, with real gpg", .serialized)
struct MailPipelineTests {
    @Test("a mixed mail: plan, one letter for To/Cc, one per Bcc, one censored postcard")
    func mixedMail() throws {
        let (plan, copies, aliceFingerprint, carolKeyIDs) = try withGnuPGHome(importing: senderFixtures) { home throws in
            let gnupg = GnuPG(home: home.path)
            let (plan, copies, _, _) = try MailPipeline(gnupg: gnupg).process(try parse(mixedMailText))
            let alice = try #require(try gnupg.lookup(["alice@example.org"])[0].chosen)
            let carol = try #require(try gnupg.lookup(["carol@example.org"])[0].chosen)
            return (plan, copies, alice.fingerprint, carol.subkeys.map { String($0.fingerprint.suffix(16)) })
        }
        #expect(plan.recipientState == .mixed)
        #expect(plan.mailState == .extendedPostcard(.censored))
        #expect(copies.map(\.kind) == [.letter, .letter, .postcard])
        #expect(copies.map(\.recipients) == [["bob@example.org"], ["carol@example.org"], ["nobody@example.org"]])
        #expect(copies.allSatisfy { $0.envelopeSender == "alice@example.org" })
        #expect(copies[0].fingerprints.last == aliceFingerprint, "letters are encrypted to the sender too")

        for copy in copies {
            let message = try MIMEMessage.parse(copy.bytes)
            #expect(message.header("Bcc") == nil)
            #expect(message.addresses(.from).map(\.address) == ["alice@example.org"])
            #expect(message.addresses(.to).map(\.address) == ["bob@example.org"])
            #expect(message.addresses(.cc).map(\.address) == ["nobody@example.org"])
            #expect(message.messageID == "mixed.1@example.org")
            #expect(message.header("In-Reply-To") == "<earlier.1@example.org>")
            #expect(message.header("References") == "<earlier.1@example.org>")
            #expect(message.header("Date") == "Sat, 21 Nov 2026 10:00:00 +0100")
        }

        // Letters: gpg decrypts each for its recipient, signed by Alice; the
        // real Subject is inside only.
        for (copy, secret) in [(copies[0], "bob.sec.asc"), (copies[1], "carol.sec.asc")] {
            let outer = try MIMEMessage.parse(copy.bytes)
            #expect(outer.subject == "...")
            #expect(!String(decoding: (try copy.bytes), as: UTF8.self).contains("Falcon"))
            let autocrypt = try #require(outer.header("Autocrypt"))
            try expectAutocryptKey(autocrypt, fingerprint: aliceFingerprint)
            #expect(outer.headers.first { $0.name == "Autocrypt" }?.rawValue.contains("=?") == false, "not RFC 2047-encoded")
            let opened = try gpgOpen(copy.bytes, as: secret)
            #expect(opened.status == 0, "\(opened.errors)")
            #expect(opened.errors.contains("[GNUPG:] VALIDSIG \(aliceFingerprint)"))
            let inner = try MIMEEntity.parse(opened.stdout).entity
            #expect(inner.header("Subject") == "Plan Falcon review")
            #expect(inner.contentType.parameters["hp"] == "cipher")
            #expect(inner.headers.contains { $0.name == "HP-Outer" && $0.value == "Subject: ..." })
            #expect(inner.header("Bcc") == nil)
            let text = try #require(inner.entity(at: [0])?.text)
            #expect(text.contains("The launch code is 4711.") && !text.contains("[[private]]"))
            #expect(inner.entity(at: [1])?.text?.contains("<b>4711</b>") == true)
        }

        // Bcc: Carol's address and key ids are in no other copy.
        for copy in [copies[0], copies[2]] {
            let text = String(decoding: (try copy.bytes), as: UTF8.self)
            #expect(!text.contains("carol@example.org"))
            for keyID in carolKeyIDs { #expect(!text.uppercased().contains(keyID)) }
        }
        try withGnuPGHome { home throws in
            let armored = try #require(try MIMEMessage.parse(copies[0].bytes).body.flatMap { PGPMIME.ciphertext(of: $0) })
            let packets = try home.gpg(["--list-packets", "--list-only"], input: armored).output.uppercased()
            for keyID in carolKeyIDs { #expect(!packets.contains(keyID)) }
        }
        #expect(try gpgOpen(copies[0].bytes, as: "carol.sec.asc").status != 0, "Carol cannot read the To/Cc letter")

        // The postcard: censored everywhere, decoded or not.
        let postcard = try MIMEMessage.parse(copies[2].bytes)
        #expect(postcard.subject == "Plan █████ review")
        for visible in try everythingVisible(copies[2].bytes) {
            #expect(!visible.contains("Falcon") && !visible.contains("4711") && !visible.contains("launch"))
        }
        #expect(postcard.body?.entity(at: [0])?.text?.contains("█████") == true)
        #expect(postcard.header("Autocrypt") == nil)
    }

    @Test("requireLetter with a keyless recipient refuses the mail and writes nothing")
    func requireLetterRefuses() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path),
                                        options: PipelineOptions(mail: MailOptions(requireLetter: true)))
            let prepared = try pipeline.prepare(try parse(mixedMailText))
            #expect(prepared.plan.isRefused)
            #expect(prepared.plan.refused.map(\.recipient.address) == ["nobody@example.org"])
            #expect(throws: PipelineError(.refused, addresses: ["nobody@example.org"])) { try pipeline.write(prepared) }
            // The code matches in a catch clause, and no other code does.
            var caught = false
            do { _ = try pipeline.write(prepared) } catch PipelineError.Code.noSigningKey {
                Issue.record("matched the wrong code")
            } catch PipelineError.Code.refused {
                caught = true
            }
            #expect(caught)
        }
    }

    @Test("enforcePostcard: one censored postcard for all, no key used")
    func enforcePostcard() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path),
                                        options: PipelineOptions(mail: MailOptions(enforcePostcard: true)))
            let (plan, copies, _, _) = try pipeline.process(try parse(mixedMailText))
            #expect(plan.recipientState == .mixed)
            #expect(copies.map(\.kind) == [.postcard])
            #expect(copies[0].recipients == ["bob@example.org", "nobody@example.org", "carol@example.org"])
            #expect(!String(decoding: (try copies[0].bytes), as: UTF8.self).contains("carol@example.org"))
        }
    }

    @Test("mail that is encrypted already goes out unchanged, Bcc header dropped")
    func alreadyEncrypted() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
            let letter = try pipeline.process(try parse(mixedMailText)).copies[0].bytes
            var input = String(decoding: letter, as: UTF8.self)
            input = input.replacingOccurrences(of: "Cc: nobody@example.org\n", with: "Cc: nobody@example.org\nBcc: carol@example.org\n")
            let (plan, copies, _, _) = try pipeline.process(try parse(input))
            #expect(plan.decisions.allSatisfy { $0.decision == .unchanged })
            #expect(copies.map(\.kind) == [.unchanged])
            #expect(copies[0].recipients == ["bob@example.org", "nobody@example.org", "carol@example.org"])
            #expect((try copies[0].bytes) == letter)
        }
    }

    @Test("invite: the postcard carries an invitation, the sender's key and an Autocrypt header")
    func invite() throws {
        let postcard = try withGnuPGHome(importing: senderFixtures) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path), options: PipelineOptions(mail: MailOptions(invite: true)))
            return try pipeline.process(try parse(mixedMailText)).copies.last!
        }
        #expect(postcard.kind == .postcard)
        let message = try MIMEMessage.parse(postcard.bytes)
        try expectAutocryptKey(try #require(message.header("Autocrypt")), fingerprint: nil)
        let body = try #require(message.body)
        #expect(body.children.map(\.contentType.description) == ["multipart/alternative", "text/plain", "application/pgp-keys"])
        #expect(body.entity(at: [1])?.text?.contains("can send you encrypted mail") == true)
        let key = try #require(body.entity(at: [2])?.content)
        try withGnuPGHome { home throws in
            let imported = try home.gpg(["--import"], input: key)
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(try GnuPG(home: home.path).lookup(["alice@example.org"])[0].chosen != nil)
        }
        try expectGolden(skeleton(message), "postcard-invite")
    }

    @Test("a signed mail with marked spans is refused; without spans its signature survives")
    func signedMail() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let gnupg = GnuPG(home: home.path)
            let alice = try #require(try gnupg.lookup(["alice@example.org"])[0].chosen)
            func signedMail(_ text: String) throws -> MIMEMessage {
                let signed = try PGPMIME.signed(.text(text)) { canonical in
                    let signature = try gnupg.signDetached(canonical, signer: alice)
                    return PGPMIME.Signature(armored: signature.armored, micalg: signature.micalg)
                }
                let message = MIMEMessage(body: signed)
                message.add([MailAddress(address: "alice@example.org")], to: .from)
                message.add([MailAddress(address: "nobody@example.org")], to: .to)
                message.setSubject("signed")
                return message
            }
            let pipeline = MailPipeline(gnupg: gnupg)
            #expect(throws: PipelineError(.signedMailNeedsRedaction)) {
                try pipeline.process(try signedMail("a [[private]]secret[[/private]] b"))
            }
            let plain = try pipeline.process(try signedMail("nothing to hide\n")).copies
            #expect(plain.map(\.kind) == [.postcard])
            let body = try #require(try MIMEMessage.parse(plain[0].bytes).body)
            let wire = String(decoding: try MIMEMessage.parse(plain[0].bytes).serialize(newline: .crlf), as: UTF8.self)
            let boundary = try #require(body.contentType.parameters["boundary"])
            let open = try #require(wire.range(of: "--\(boundary)\r\n"))
            let close = try #require(wire.range(of: "\r\n--\(boundary)", range: open.upperBound..<wire.endIndex))
            try Data(wire[open.upperBound..<close.lowerBound].utf8).write(to: URL(fileURLWithPath: home.path + "/signed"))
            try Data(try #require(body.entity(at: [1])?.content)).write(to: URL(fileURLWithPath: home.path + "/sig.asc"))
            let verify = try home.gpg(["--verify", home.path + "/sig.asc", home.path + "/signed"])
            #expect(verify.status == 0, "\(verify.errors)")
        }
    }

    @Test("gpg processes: one key listing per mail, one export, one encryption per letter")
    func processCount() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let log = home.path + "/calls.log"
            let wrapper = home.path + "/gpg-wrapper"
            try "#!/bin/sh\necho \"$*\" >> '\(log)'\nexec gpg \"$@\"\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
            chmod(wrapper, 0o700)
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path, executable: wrapper))
            let copies = try pipeline.process(try parse(mixedMailText)).copies
            let calls = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            let listings = calls.filter { $0.contains("--list-keys") || $0.contains("--check-sigs") || $0.contains("--list-secret-keys") }
            let exports = calls.filter { $0.contains("--export") }
            let encryptions = calls.filter { $0.contains("--encrypt") }
            #expect(listings.count == 1, "\(calls)")
            #expect(exports.count == 1)
            #expect(encryptions.count == copies.filter { $0.kind == .letter }.count)
        }
    }

    @Test("golden structures of a letter (outside and inside) and a censored postcard")
    func goldenStructures() throws {
        let copies = try withGnuPGHome(importing: senderFixtures) { home throws in
            try MailPipeline(gnupg: GnuPG(home: home.path)).process(try parse(mixedMailText)).copies
        }
        try expectGolden(skeleton(try MIMEMessage.parse(copies[0].bytes)), "letter-outer")
        let opened = try gpgOpen(copies[0].bytes, as: "bob.sec.asc")
        let inner = try MIMEEntity.parse(opened.stdout).entity
        try expectGolden("headers: " + inner.headers.map { $0.name }.joined(separator: ", ") + "\n"
                         + skeleton(inner).joined(separator: "\n") + "\n", "letter-inner")
        try expectGolden(skeleton(try MIMEMessage.parse(copies[2].bytes)), "postcard-censored")
    }
}

@Suite("Mails composed in code", .serialized)
struct CompositionTests {
    @Test("a composition becomes a proper message and goes through the pipeline")
    func composition() throws {
        let composition = Composition(
            from: MailAddress(name: "Alice", address: "alice@example.org"),
            to: [MailAddress(name: "Bob", address: "bob@example.org")],
            cc: [MailAddress(address: "nobody@example.org")],
            subject: "Numbers [[private]]Q3zqxv[[/private]]",
            text: "Totals: [[private]]1.2M[[/private]]\n",
            html: "<p>Totals: [[private]]<b>1.2M</b>[[/private]]</p>",
            attachments: [.init(filename: "notes.txt", contentType: "text/plain", data: Array("see you\n".utf8))],
            inReplyTo: "q2@example.org", references: ["q1@example.org", "q2@example.org"],
            messageID: "q3@example.org")
        let message = try composition.message()
        #expect(message.header("References") == "<q1@example.org> <q2@example.org>")
        #expect(message.body?.walk().map { $0.entity.contentType.description }
                == ["multipart/mixed", "multipart/alternative", "text/plain", "text/html", "text/plain"])
        let copies = try withGnuPGHome(importing: senderFixtures) { home throws in
            try MailPipeline(gnupg: GnuPG(home: home.path)).process(message).copies
        }
        #expect(copies.map(\.kind) == [.letter, .postcard])
        let postcard = try MIMEMessage.parse(copies[1].bytes)
        #expect(postcard.subject == "Numbers █████")
        #expect(postcard.messageID == "q3@example.org")
        // Secrets long enough not to turn up by chance in a random boundary or base64 text.
        for visible in try everythingVisible(copies[1].bytes) { #expect(!visible.contains("1.2M") && !visible.contains("Q3zqxv")) }
        let opened = try gpgOpen(copies[0].bytes, as: "bob.sec.asc")
        #expect(String(decoding: opened.stdout, as: UTF8.self).contains("Subject: Numbers Q3zqxv"))
    }
}

@Suite("Odd senders", .serialized)
struct OddSenderTests {
    @Test("a From without a domain (MAILER-DAEMON): postcards go out, letters are refused for want of a signing key")
    func mailerDaemon() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
            let postcardOnly = try parse("From: MAILER-DAEMON\nTo: nobody@example.org\nSubject: x\n\nhello\n")
            #expect(try pipeline.process(postcardOnly, envelopeSender: "").copies.map(\.kind) == [.postcard])
            let needsLetter = try parse("From: MAILER-DAEMON\nTo: bob@example.org\nSubject: x\n\nhello\n")
            #expect(throws: PipelineError(.noSigningKey, detail: "MAILER-DAEMON")) { try pipeline.process(needsLetter, envelopeSender: "") }
        }
    }
}

@Suite("What the review found", .serialized)
struct ReviewFindingTests {
    @Test("a letter's outside shows only routing fields, and no span even in a display name")
    func outerHeaders() throws {
        let text = """
            From: Alice <alice@example.org>
            To: "Bob [[private]]Codename[[/private]]" <bob@example.org>
            Cc: nobody@example.org
            Subject: s
            X-Note: [[private]]OUTERSECRET[[/private]]
            Thread-Topic: Merger with Initech
            Message-ID: <outer.1@example.org>

            body
            """
        let copies = try withGnuPGHome(importing: senderFixtures) { home throws in
            try MailPipeline(gnupg: GnuPG(home: home.path)).process(try parse(text)).copies
        }
        let outside = String(decoding: (try copies[0].bytes), as: UTF8.self)
        for secret in ["OUTERSECRET", "Merger", "Codename", "X-Note", "Thread-Topic"] {
            #expect(!outside.contains(secret), "\(secret) is outside the letter")
        }
        let inner = String(decoding: try gpgOpen(copies[0].bytes, as: "bob.sec.asc").stdout, as: UTF8.self)
        #expect(inner.contains("X-Note: OUTERSECRET") && inner.contains("Thread-Topic: Merger with Initech"))
        for visible in try everythingVisible(copies[1].bytes) { #expect(!visible.contains("OUTERSECRET") && !visible.contains("Codename")) }
    }

    @Test("only a body that is nothing but ciphertext counts as encrypted already")
    func encryptedAlready() throws {
        let armoredInProse = try parse("From: a@example.org\nTo: b@example.org\n\nsee below\n-----BEGIN PGP MESSAGE-----\nx\n-----END PGP MESSAGE-----\n")
        #expect(!MailPipeline.isEncrypted(armoredInProse))
        let armoredOnly = try parse("From: a@example.org\nTo: b@example.org\n\n-----BEGIN PGP MESSAGE-----\n\n\(exactCiphertext)\n-----END PGP MESSAGE-----\n")
        #expect(MailPipeline.isEncrypted(armoredOnly))
        let smimeSigned = try parse("From: a@example.org\nContent-Type: application/pkcs7-mime; smime-type=signed-data\n\nAAAA\n")
        #expect(!MailPipeline.isEncrypted(smimeSigned))
        // Encrypted already is read from the content (issue 21): a CMS ContentInfo of enveloped-data.
        let smimeEnveloped = try parse("From: a@example.org\nContent-Type: application/pkcs7-mime; smime-type=enveloped-data\n"
                                       + "Content-Transfer-Encoding: base64\n\nMAsGCSqGSIb3DQEHAw==\n")
        #expect(MailPipeline.isEncrypted(smimeEnveloped))
    }

    @Test("spans in part headers, names and preambles are censored; where they cannot be, the mail is refused")
    func redactionReach() throws {
        let reachable = """
            From: Alice <alice@example.org>
            To: nobody@example.org
            Subject: s
            MIME-Version: 1.0
            Content-Type: multipart/mixed; boundary="b"

            preamble [[private]]PREAMBLESECRET[[/private]]
            --b
            Content-Type: text/plain
            Content-Description: [[private]]DESCSECRET[[/private]]
            X-Part: [[private]]XPARTSECRET[[/private]]

            hello
            --b
            Content-Type: application/octet-stream; name="[[private]]NAMESECRET[[/private]].bin"
            Content-Disposition: attachment; filename="other.bin"
            Content-Transfer-Encoding: base64

            AAEC
            --b--
            epilogue [[private]]EPILOGUESECRET[[/private]]
            """
        let censored = try Postcard.censored(try parse(reachable)).serialize()
        for visible in try everythingVisible(censored) {
            for secret in ["PREAMBLESECRET", "DESCSECRET", "XPARTSECRET", "NAMESECRET", "EPILOGUESECRET"] {
                #expect(!visible.contains(secret), "\(secret) left in the postcard")
            }
        }
        let xhtml = "From: a@example.org\nTo: nobody@example.org\nContent-Type: application/xhtml+xml\n\n<p>[[private]]XSECRET[[/private]]</p>\n"
        let utf16 = Array("From: a@example.org\nTo: nobody@example.org\nContent-Type: text/html\nContent-Transfer-Encoding: base64\n\n".utf8)
            + Array((Data([0xFF, 0xFE]) + "<p>[[private]]U16SECRET[[/private]]</p>".data(using: .utf16LittleEndian)!).base64EncodedString().utf8)
        // XHTML, and UTF-16 found by its byte order mark, are read and censored.
        for mail in [try parse(xhtml), try MIMEMessage.parse(utf16)] {
            for visible in try everythingVisible(try Postcard.censored(mail).serialize()) {
                #expect(!visible.contains("XSECRET") && !visible.contains("U16SECRET"))
            }
        }
    }

    // (A quoted local part with a space in it is refused since issue 12: see FilterFaultTests.)
    @Test("an envelope address gpg cannot look up is a recipient without a key, not a bad mail")
    func oddEnvelopeAddress() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let mail = try parse("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: s\n\nhi\n")
            let (plan, copies, _, _) = try MailPipeline(gnupg: GnuPG(home: home.path))
                .process(mail, envelopeSender: "alice@example.org", envelopeRecipients: ["bob@example.org", "\"john.doe\"@example.net"])
            #expect(copies.map(\.kind) == [.letter, .postcard])
            #expect(plan.decisions.last?.decision == .postcard(.noKey))
        }
    }

    @Test("Resent-Bcc is gone from every copy")
    func resentBcc() throws {
        let copies = try withGnuPGHome(importing: senderFixtures) { home throws in
            try MailPipeline(gnupg: GnuPG(home: home.path))
                .process(try parse("From: Alice <alice@example.org>\nTo: bob@example.org, nobody@example.org\nResent-Bcc: hidden@example.org\nSubject: s\n\nhi\n")).copies
        }
        for copy in copies { #expect(!String(decoding: (try copy.bytes), as: UTF8.self).contains("hidden@example.org")) }
        #expect(String(decoding: MailPipeline.withoutBcc(Array("Bcc : x\nResent-Bcc: y\nTo: z\n\nb\n".utf8)), as: UTF8.self) == "To: z\n\nb\n")
    }
}

@Suite("Unchanged copies", .serialized)
struct UnchangedCopyTests {
    @Test("an encrypted mail with a marked span in its outer Subject: the plan reports the span, and the copy has it censored")
    func markerOutsideTheCiphertext() throws {
        let secret = "Operation \(UUID().uuidString.prefix(8))"
        for shape in ["[[private]]\(secret)[[/private]]", "=?utf-8?b?\(Data("[[private]]\(secret)[[/private]]".utf8).base64EncodedString())?="] {
            let text = "From: alice@example.org\nTo: bob@example.org\nSubject: re \(shape)\n"
                + "Content-Type: multipart/encrypted; protocol=\"application/pgp-encrypted\"; boundary=b\n\n"
                + "--b\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n--b\nContent-Type: application/octet-stream\n\n"
                + "-----BEGIN PGP MESSAGE-----\n\n\(exactCiphertext)\n-----END PGP MESSAGE-----\n--b--\n"
            try withGnuPGHome(importing: senderFixtures) { home throws in
                let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
                let prepared = try pipeline.prepare(try MIMEMessage.parse(Array(text.utf8)), original: Array(text.utf8))
                #expect(prepared.plan.hasMarkedSpans, "the plan must not say 'no spans' for a copy it censors")
                #expect(PlanReport(prepared.plan).hasMarkedSpans)
                #expect(prepared.plan.copies.map(\.kind) == [.unchanged])
                let copies = try pipeline.write(prepared).copies
                let written = String(decoding: try copies[0].bytes, as: UTF8.self)
                let subject = try MIMEMessage.parse(try copies[0].bytes).subject ?? ""
                #expect(!written.contains(secret) && !subject.contains(secret) && written.contains("-----BEGIN PGP MESSAGE-----"))
            }
        }
    }

    @Test("given the original bytes, an encrypted mail goes out as exactly those bytes, Bcc aside")
    func exactBytes() throws {
        // No line break after the closing boundary: GMime writes that back differently.
        let text = "From:alice@example.org\nTo:   bob@example.org\nBcc: carol@example.org\nSubject:\tsealed\n"
            + "Content-Type: multipart/encrypted;\n    protocol=\"application/pgp-encrypted\";  boundary=b\n\n"
            + "This is an OpenPGP/MIME encrypted message (RFC 4880 and 3156)\n\n\n--b\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n--b\nContent-Type: application/octet-stream\n\n"
            + "-----BEGIN PGP MESSAGE-----\n\n\(exactCiphertext)\n-----END PGP MESSAGE-----\n--b--"
        let bytes = Array(text.utf8)
        let expected = Array(text.replacingOccurrences(of: "Bcc: carol@example.org\n", with: "").utf8)
        let message = try MIMEMessage.parse(bytes)
        #expect(String(decoding: message.serialize(hiding: ["Bcc"]), as: UTF8.self) != text.replacingOccurrences(
            of: "Bcc: carol@example.org\n", with: ""), "GMime writes this mail differently")
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
            let copies = try pipeline.write(try pipeline.prepare(message, original: bytes)).copies
            #expect(copies.map(\.kind) == [.unchanged])
            #expect(String(decoding: (try copies[0].bytes), as: UTF8.self) == String(decoding: expected, as: UTF8.self))
        }
    }
}
