import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy
import TestSupport
import Testing

/// Non-ASCII text as people write it in names and subjects.
let nonASCIIWords = ["Grüße", "Jörg", "Zoë", "日本語", "Ελένη", "Дмитрий", "naïve café", "😀 party", "Åsa Ødegård", "ﬁnance"]

@Suite("Postcards never carry raw 8-bit header fields", .serialized)
struct PostcardHeaderTests {
    /// A mail with raw UTF-8 in the Subject and in display names (as many
    /// mail programs write it), to a recipient without a key.
    func rawMail(subject: String, from: String, to: String, cc: String, spans: Bool) -> [UInt8] {
        Array("""
            From: \(from) <alice@example.org>
            To: "\(to)" <nokey@example.net>
            Cc: \(cc) <other@example.net>
            Subject: \(subject)\(spans ? " [[private]]x[[/private]]" : "")
            Message-ID: <raw.\(UUID())@example.org>
            MIME-Version: 1.0
            Content-Type: text/plain; charset=utf-8

            Hello\(spans ? " [[private]]secret[[/private]]" : "").

            """.utf8)
    }

    @Test("a non-ASCII Subject and display names become RFC 2047 encoded-words; they decode to what was written")
    func encoded() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
            for round in 0..<8 {
                let pick = { nonASCIIWords.randomElement()! + (Bool.random() ? " " + nonASCIIWords.randomElement()! : "") }
                let (subject, from, to, cc) = (pick(), pick(), pick(), pick())
                let spans = round % 2 == 1
                let raw = rawMail(subject: subject, from: from, to: to, cc: cc, spans: spans)
                let (_, copies, _, _) = try pipeline.process(try MIMEMessage.parse(raw))
                let postcard = try #require(copies.first { $0.kind == .postcard })
                let bytes = try postcard.bytes
                let headerEnd = try #require(bytes.firstRange(of: Array("\n\n".utf8))?.lowerBound)
                #expect(bytes[..<headerEnd].allSatisfy { $0 < 0x80 }, "round \(round): raw 8-bit in the postcard's header")
                let message = try MIMEMessage.parse(bytes)
                #expect(message.subject?.hasPrefix(subject) == true && message.subject?.contains("[[") == false, "round \(round)")
                #expect(message.addresses(.from) == [MailAddress(name: from, address: "alice@example.org")])
                #expect(message.addresses(.to) == [MailAddress(name: to, address: "nokey@example.net")])
                #expect(message.addresses(.cc) == [MailAddress(name: cc, address: "other@example.net")])
            }
        }
    }

    @Test("mailsec's censored postcard of a mail with raw 8-bit fields is 7-bit in its header too")
    func censored() throws {
        let raw = rawMail(subject: "Grüße", from: "Jörg", to: "Zoë", cc: "日本語", spans: true)
        let postcard = try Postcard.censored(try MIMEMessage.parse(raw)).serialize()
        let headerEnd = try #require(postcard.firstRange(of: Array("\n\n".utf8))?.lowerBound)
        #expect(postcard[..<headerEnd].allSatisfy { $0 < 0x80 })
        #expect(try MIMEMessage.parse(postcard).addresses(.cc).first?.name == "日本語")
    }
}
