import Foundation
import MIME
import OpenPGP
import Pipeline
import TestSupport
import Testing

func sampleMail() -> MIMEMessage {
    let message = MIMEMessage(body: .multipart("alternative", [
        .text("Hello Bob,\nFrom Alice, with Grüße.\ntrailing \n"),
        .text("<p>Hello Bob</p>", subtype: "html"),
    ]))
    message.add([MailAddress(name: "Alice", address: "alice@example.org")], to: .from)
    message.add([MailAddress(name: "Bob", address: "bob@example.org")], to: .to)
    message.add([MailAddress(address: "secret-bcc@example.org")], to: .bcc)
    message.setSubject("Quarterly numbers")
    message.setHeader("Message-ID", "<letter.1@example.org>")
    return message
}

/// The bytes between `--boundary CRLF` and `CRLF --boundary` of the first
/// part of a CRLF multipart: what RFC 3156 says the signature covers.
func firstPartBytes(_ crlf: [UInt8], boundary: String) throws -> [UInt8] {
    let text = String(decoding: crlf, as: UTF8.self)
    let open = try #require(text.range(of: "--\(boundary)\r\n"))
    let close = try #require(text.range(of: "\r\n--\(boundary)", range: open.upperBound..<text.endIndex))
    return Array(text[open.upperBound..<close.lowerBound].utf8)
}

@Suite("Letters end to end with real gpg", .serialized)
struct LetterTests {
    @Test("a PGP/MIME letter built by the library decrypts and verifies with the gpg command line")
    func letterOpensWithGPG() throws {
        let (letterBytes, aliceFingerprint) = try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let alice = try #require(try gnupg.signingKeys(for: "alice@example.org").first)
            let bob = try #require(try gnupg.lookup(["bob@example.org"])[0].chosen)
            let letter = try Letter.seal(sampleMail(), to: [bob, alice], signer: alice, using: gnupg)
            return (letter.serialize(), alice.fingerprint)
        }
        let text = String(decoding: letterBytes, as: UTF8.self)
        #expect(!text.contains("Hello Bob"))
        #expect(!text.contains("secret-bcc"), "no copy carries Bcc")
        let letter = try MIMEMessage.parse(letterBytes)
        #expect(letter.addresses(.to).map(\.address) == ["bob@example.org"])
        #expect(letter.messageID == "letter.1@example.org")
        let body = try #require(letter.body)
        #expect(body.contentType.is("multipart", "encrypted"))
        let armored = try #require(PGPMIME.ciphertext(of: body))

        try withGnuPGHome(importing: ["bob.sec.asc", "alice.pub.asc"]) { home throws in
            let cli = try home.gpg(["--status-fd", "2", "--decrypt"], input: armored)
            #expect(cli.status == 0, "\(cli.errors)")
            #expect(cli.errors.contains("[GNUPG:] VALIDSIG \(aliceFingerprint)"))
            #expect(cli.errors.contains("GOODSIG"))
            // The plaintext is the MIME body, canonical: CRLF, 7-bit.
            let inner = try MIMEEntity.parse(cli.stdout).entity
            #expect(cli.stdout.allSatisfy { $0 < 0x80 })
            #expect(inner.contentType.is("multipart", "alternative"))
            #expect(inner.entity(at: [0])?.text?.replacingOccurrences(of: "\r\n", with: "\n")
                    == "Hello Bob,\nFrom Alice, with Grüße.\ntrailing \n")

            // And the library opens the same letter.
            let opened = try Letter.open(letter, using: GnuPG(home: home.path))
            #expect(opened.signatures.map(\.status) == [.good])
            #expect(opened.signatures.first?.fingerprint == aliceFingerprint)
            #expect(opened.body.entity(at: [1])?.text == "<p>Hello Bob</p>")
        }
    }

    @Test("a plain message is not a letter, and a letter without the key does not open")
    func openRefuses() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            #expect(throws: LetterError(.notEncrypted)) { try Letter.open(sampleMail(), using: gnupg) }
            let alice = try #require(try gnupg.signingKeys(for: "alice@example.org").first)
            let bob = try #require(try gnupg.lookup(["bob@example.org"])[0].chosen)
            #expect(throws: LetterError(.noRecipients)) { try Letter.seal(sampleMail(), to: [], signer: alice, using: gnupg) }
            let toBobOnly = try Letter.seal(sampleMail(), to: [bob], signer: alice, using: gnupg)
            #expect(throws: GPGMEError.self) { try Letter.open(toBobOnly, using: gnupg) }
        }
    }

    @Test("multipart/signed: gpg verifies the exact bytes between the boundaries, micalg matches")
    func signedVerifiesWithGPG() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let alice = try #require(try gnupg.signingKeys(for: "alice@example.org").first)
            let content = MIMEEntity.multipart("mixed", [
                .text("Signed text\nFrom a line start\ntrailing \nGrüße\n"),
                try .part([1, 2, 3], type: "application", subtype: "octet-stream", filename: "x.bin"),
            ])
            var usedHash = ""
            let signed = try PGPMIME.signed(content) { canonical in
                let signature = try gnupg.signDetached(canonical, signer: alice)
                usedHash = signature.hashAlgorithm
                return PGPMIME.Signature(armored: signature.armored, micalg: signature.micalg)
            }
            let message = MIMEMessage(body: signed)
            message.add([MailAddress(address: "alice@example.org")], to: .from)
            // Written with LF as on disk, read back, then put on the wire as CRLF.
            let stored = try MIMEMessage.parse(message.serialize(newline: .lf))
            let wire = stored.serialize(newline: .crlf)
            let body = try #require(stored.body)
            #expect(body.contentType.is("multipart", "signed"))
            #expect(body.contentType.parameters["protocol"] == "application/pgp-signature")
            #expect(body.contentType.parameters["micalg"] == "pgp-" + usedHash.lowercased())
            let boundary = try #require(body.contentType.parameters["boundary"])
            try Data(try firstPartBytes(wire, boundary: boundary)).write(to: URL(fileURLWithPath: home.path + "/signed"))
            try Data(try #require(body.entity(at: [1])?.content)).write(to: URL(fileURLWithPath: home.path + "/sig.asc"))
            let cli = try home.gpg(["--status-fd", "1", "--verify", home.path + "/sig.asc", home.path + "/signed"])
            #expect(cli.status == 0, "\(cli.errors)")
            #expect(cli.output.contains("[GNUPG:] VALIDSIG \(alice.fingerprint)"))

            // Tampering with one byte of the signed part breaks it.
            var tampered = try firstPartBytes(wire, boundary: boundary)
            tampered[tampered.count - 3] ^= 1
            try Data(tampered).write(to: URL(fileURLWithPath: home.path + "/signed"))
            let bad = try home.gpg(["--status-fd", "1", "--verify", home.path + "/sig.asc", home.path + "/signed"])
            #expect(bad.status != 0)
            #expect(bad.output.contains("BADSIG"))
        }
    }
}
