import Foundation
import MIME
import OpenPGP
@testable import Pipeline
import TestSupport
import Testing

/// A mail from Alice to Bob with an attachment of `size` random bytes.
func mailWithAttachment(_ size: Int) throws -> (MIMEMessage, [UInt8]) {
    var generator = SystemRandomNumberGenerator()
    let data = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
    let message = MIMEMessage(body: .multipart("mixed", [
        .text("The data is attached.\n"),
        try MIMEEntity.part(data, type: "application", subtype: "octet-stream", filename: "data.bin"),
    ]))
    message.add([MailAddress(name: "Alice", address: "alice@example.org")], to: .from)
    message.add([MailAddress(name: "Bob", address: "bob@example.org")], to: .to)
    message.setSubject("the data")
    return (message, data)
}

@Suite("Large letters stream", .serialized)
struct LargeLetterTests {
    @Test("a letter past the spool size waits in a spool file; written out piece by piece it is the whole letter, and Bob opens it")
    func spooled() throws {
        let (message, data) = try mailWithAttachment(3 << 20)
        let copies = try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            var options = PipelineOptions()
            options.spoolAbove = 1 << 20
            return try MailPipeline(gnupg: GnuPG(home: home.path), options: options).process(message).copies
        }
        let letter = try #require(copies.first)
        guard case .spooled = letter.content else { Issue.record("not spooled"); return }
        var pieces: [UInt8] = []
        try letter.forEachPiece { pieces += $0 }
        let whole = try letter.bytes
        #expect(pieces == whole)
        #expect(letter.size == whole.count)
        #expect(try MIMEMessage.parse(whole).subject == "...")
        let opened = try gpgOpen(whole, as: "bob.sec.asc")
        #expect(opened.status == 0, "\(opened.errors)")
        #expect(opened.errors.contains("GOODSIG"))
        let inner = try MIMEEntity.parse(opened.stdout).entity
        #expect(inner.entity(at: [1])?.content == data, "the attachment arrives whole")
        #expect(inner.header("Subject") == "the data")
    }

    @Test("a spooled ciphertext is written as 7bit only when it is: 7-bit bytes, no lone CR, lines of at most 998 bytes")
    func sevenBitCheck() throws {
        func spool(_ bytes: [UInt8]) throws -> Spool {
            let spool = try Spool()
            #expect(bytes.withUnsafeBytes { write(spool.fd, $0.baseAddress, $0.count) } == bytes.count)
            return spool
        }
        let armor = Array(("-----BEGIN PGP MESSAGE-----\n\n" + String(repeating: "hQEMA0abc+/=\n", count: 5000)
                           + "-----END PGP MESSAGE-----\n").utf8)
        #expect(try MailPipeline.isShortLineASCII(spool(armor)))
        #expect(try MailPipeline.isShortLineASCII(spool(Array("a\r\nb\r\n".utf8))))
        #expect(!(try MailPipeline.isShortLineASCII(spool(armor + Array("Comment: Grüße\n".utf8)))))
        #expect(try MailPipeline.isShortLineASCII(spool(armor + [UInt8](repeating: 65, count: 998) + [13, 10])))
        #expect(!(try MailPipeline.isShortLineASCII(spool(armor + [UInt8](repeating: 65, count: 999) + [10]))))
        #expect(!(try MailPipeline.isShortLineASCII(spool(Array("a\rb\n".utf8)))))
        #expect(!(try MailPipeline.isShortLineASCII(spool([65, 0, 10]))))
        #expect(!(try MailPipeline.isShortLineASCII(spool(armor + [13]))), "a CR as the very last byte")
    }

    @Test("a small letter stays in memory")
    func small() throws {
        let (message, _) = try mailWithAttachment(10_000)
        let copies = try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            try MailPipeline(gnupg: GnuPG(home: home.path)).process(message).copies
        }
        guard case .memory = try #require(copies.first).content else { Issue.record("spooled"); return }
    }

    @Test("a key gpg refuses ends the streamed encryption with an error while the body (larger than a pipe holds) is still being written: no hang")
    func refusedMidStream() throws {
        let (message, _) = try mailWithAttachment(2 << 20)
        try withGnuPGHome(importing: ["alice.sec.asc", "carol-expired.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let alice = try #require(try gnupg.signingKeys(for: "alice@example.org").first)
            let expired = try #require(try gnupg.lookup(["carol@example.org"])[0].candidates.first?.key)
            let spool = try Spool()
            let draft = try Letter.draft(message)
            #expect(throws: GPGMEError.self) {
                try Letter.encrypt(draft, to: [expired], signer: alice, using: gnupg, into: spool.fd)
            }
        }
    }
}
