import Foundation
import MIME
import Platform
import TestSupport
import Testing

func makeSample() throws -> MIMEMessage {
    let inner = MIMEMessage(body: .text("forwarded text"))
    inner.add([MailAddress(address: "old@example.org")], to: .from)
    inner.setSubject("Earlier mail")
    let body = MIMEEntity.multipart("mixed", [
        .multipart("alternative", [
            .text("Grüße, plain\nFrom the start of a line\ntrailing space \n"),
            .text("<p>Grüße, <b>html</b></p>", subtype: "html"),
        ]),
        try .part([0, 1, 2, 255, 10, 13], type: "application", subtype: "octet-stream", filename: "data é.bin"),
        .message(inner),
    ])
    let message = MIMEMessage(body: body)
    message.add([MailAddress(name: "Jörg Müller", address: "joerg@example.org")], to: .from)
    message.add([MailAddress(name: "Alice", address: "alice@example.org")], to: .to)
    message.add([MailAddress(address: "hidden@example.org")], to: .bcc)
    message.setSubject("Grüße — test")
    message.setHeader("Message-ID", "<built.1@example.org>")
    message.setHeader("Date", "Sat, 21 Nov 2026 09:00:00 +0000")
    return message
}

@Suite("Building and writing messages with GMime")
struct BuildingTests {
    @Test("a built message with alternative, attachment and message/rfc822 reads back the same")
    func roundTrip() throws {
        let bytes = try makeSample().serialize()
        let back = try MIMEMessage.parse(bytes)
        #expect(back.parseIssues.isEmpty)
        #expect(back.subject == "Grüße — test")
        #expect(back.addresses(.from).first?.name == "Jörg Müller")
        #expect(back.messageID == "built.1@example.org")
        let body = try #require(back.body)
        #expect(body.walk().map { "\($0.path):\($0.entity.contentType)" } == [
            "[]:multipart/mixed", "[0]:multipart/alternative", "[0, 0]:text/plain", "[0, 1]:text/html",
            "[1]:application/octet-stream", "[2]:message/rfc822", "[2, 0]:text/plain",
        ])
        #expect(body.entity(at: [0, 0])?.text == "Grüße, plain\nFrom the start of a line\ntrailing space \n")
        #expect(body.entity(at: [0, 1])?.text == "<p>Grüße, <b>html</b></p>")
        #expect(body.entity(at: [1])?.content == [0, 1, 2, 255, 10, 13])
        #expect(body.entity(at: [1])?.filename == "data é.bin")
        #expect(body.entity(at: [2])?.embeddedMessage?.subject == "Earlier mail")
        // GMime ends an embedded message with a line break before the boundary.
        #expect(body.entity(at: [2, 0])?.text?.trimmingCharacters(in: .newlines) == "forwarded text")
        // Written 7-bit clean: every byte ASCII, non-ASCII only in encodings.
        #expect(bytes.allSatisfy { $0 < 0x80 })
    }

    @Test("LF and CRLF output, and hidden headers")
    func newlinesAndHiding() throws {
        let message = try makeSample()
        let lf = message.serialize(newline: .lf)
        let crlf = message.serialize(newline: .crlf)
        #expect(!lf.contains(13))
        let lfCount = lf.filter { $0 == 10 }.count
        #expect(crlf.filter { $0 == 10 }.count == lfCount)
        #expect(crlf.filter { $0 == 13 }.count >= lfCount)
        for index in crlf.indices where crlf[index] == 10 { #expect(index > 0 && crlf[index - 1] == 13) }
        #expect(String(decoding: lf, as: UTF8.self).contains("\nBcc: hidden@example.org\n"))
        let hidden = String(decoding: message.serialize(hiding: ["Bcc"]), as: UTF8.self)
        #expect(!hidden.contains("hidden@example.org"))
        #expect(hidden.contains("To: Alice <alice@example.org>"))
    }

    @Test("the canonical form is 7-bit and CRLF, with trailing space and From lines protected")
    func canonicalForm() throws {
        let part = MIMEEntity.text("Grüße\nFrom here\ntrailing \n")
        let canonical = String(decoding: part.canonicalBytes(), as: UTF8.self)
        #expect(canonical.utf8.allSatisfy { $0 < 0x80 })
        #expect(!canonical.contains("\nFrom here"))
        #expect(!canonical.contains(" \r\n"))
        #expect(!canonical.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        let (back, _) = try MIMEEntity.parse(Array(canonical.utf8))
        #expect(back.text?.replacingOccurrences(of: "\r\n", with: "\n") == "Grüße\nFrom here\ntrailing \n")

        // Plain ASCII with white space at line ends must not stay 7bit (RFC 3156 §3).
        for text in ["a   \nb", "tab\t\nend", "last line \n"] {
            let ascii = String(decoding: MIMEEntity.text(text).canonicalBytes(), as: UTF8.self)
            #expect(!ascii.contains(" \r\n") && !ascii.contains("\t\r\n"), "\(ascii)")
            #expect(try MIMEEntity.parse(Array(ascii.utf8)).entity.text?.replacingOccurrences(of: "\r\n", with: "\n") == text)
        }
    }

    @Test("multipart/encrypted has the RFC 3156 shape")
    func encryptedShape() throws {
        let armored = Array("-----BEGIN PGP MESSAGE-----\n\nhQEMA\n-----END PGP MESSAGE-----\n".utf8)
        let entity = try PGPMIME.encrypted(armoredCiphertext: armored)
        let message = MIMEMessage(body: entity)
        let back = try #require(try MIMEMessage.parse(message.serialize()).body)
        #expect(back.contentType.is("multipart", "encrypted"))
        #expect(back.contentType.parameters["protocol"] == "application/pgp-encrypted")
        #expect(back.children.map(\.contentType.description) == ["application/pgp-encrypted", "application/octet-stream"])
        #expect(back.children[0].content.map { String(decoding: $0, as: UTF8.self) } == "Version: 1\n")
        #expect(PGPMIME.ciphertext(of: back) == armored)
        #expect(PGPMIME.ciphertext(of: .text("plain")) == nil)
    }
}

@Suite("Digests")
struct DigestTests {
    @Test("SHA-256 and HMAC-SHA-256 give the published test vectors")
    func vectors() {
        #expect(Digest.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // RFC 4231, test case 2
        #expect(Digest.hmacSHA256Hex(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
