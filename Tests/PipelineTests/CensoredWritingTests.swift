import Foundation
import MIME
import Pipeline
import Redaction
import TestSupport
import Testing

@Suite("The censored postcard written as its check read it, and a text's signature found in pieces")
struct CensoredWritingTests {
    /// Mails with and without spans: text in each transfer encoding, HTML beside it, a Bcc.
    static func randomMail(_ random: inout SeededRandom, round: Int) -> [UInt8] {
        let lines = ["plain words", "[[private]]secret \(round)[[/private]]", "trailing blank ", "a=b", "é€", "From here",
                     ".", String(repeating: "long ", count: 40)]
        var text = ""
        for _ in 0..<Int.random(in: 1...30, using: &random) { text += lines.randomElement(using: &random)! + "\n" }
        let encoding = ["8bit", "quoted-printable", "base64"].randomElement(using: &random)!
        let body: String = switch encoding {
        case "base64": Data(text.utf8).base64EncodedString(options: .lineLength76Characters) + "\n"
        case "quoted-printable": quotedPrintable(Array(text.utf8))
        default: text
        }
        let head = "From: a@example.org\nTo: b@example.org\nBcc: c@example.org\nSubject: round \(round)\nMIME-Version: 1.0\n"
        if round % 3 == 0 {
            return Array((head + "Content-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain; charset=utf-8\n"
                + "Content-Transfer-Encoding: \(encoding)\n\n\(body)\n--b\nContent-Type: text/html; charset=utf-8\n\n<p>"
                + text.replacingOccurrences(of: "\n", with: "<br>") + "</p>\n--b--\n").utf8)
        }
        return Array((head + "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: \(encoding)\n\n" + body).utf8)
    }

    /// GMime's random boundaries, made one: two rebuilds of a multipart differ in nothing else.
    static func sameBoundaries(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "=-[A-Za-z0-9+/]{20}", with: "=-B", options: .regularExpression)
    }

    @Test("writeCensored writes what censored's message serialises to: 120 random mails, with spans and without")
    func writtenAsCensored() throws {
        var random = SeededRandom(seed: 2026_11_27_5)
        for round in 0..<120 {
            let mail = Self.randomMail(&random, round: round)
            let expected = try Postcard.censored(try MIMEMessage.parse(mail)).serialize()
            var written: [UInt8] = []
            try Postcard.writeCensored(try MIMEMessage.parse(mail)) { written += $0 }
            #expect(Self.sameBoundaries(written) == Self.sameBoundaries(expected), "round \(round)")
        }
    }

    @Test("a text part's clear-signing line is found in pieces as in the whole: 400 random contents")
    func cleartextSignedInPieces() throws {
        var random = SeededRandom(seed: 2026_11_27_9)
        let header = "-----BEGIN PGP SIGNED MESSAGE-----"
        let pieces = [header, String(header.dropLast()), "-----BEGIN PGP", "x" + header, " " + header, "\n", "\r\n", "words",
                      String(repeating: "y", count: 5000), "-"]
        var signed = 0
        for round in 0..<400 {
            var text = ""
            for _ in 0..<Int.random(in: 0...12, using: &random) { text += pieces.randomElement(using: &random)! }
            let mail = "From: a@example.org\nMIME-Version: 1.0\nContent-Type: text/plain\n\n" + text
            let part = try #require(try MIMEMessage.parse(Array(mail.utf8)).body)
            let whole = EncryptedAlready.isCleartextSigned(try #require(part.content))
            if whole { signed += 1 }
            #expect(EncryptedAlready.isCleartextSigned(part) == whole, "round \(round): \(Array(text.utf8).prefix(300))")
        }
        #expect(signed > 50 && signed < 350)
    }
}
