import Foundation
@testable import MIME
import TestSupport
import Testing

@Suite("The text of a part declared UTF-8, read without GMime's conversion")
struct UTF8TextTests {
    /// Content of valid and invalid UTF-8 (lone lead and continuation bytes, surrogates, overlong
    /// forms, past U+10FFFF), NULs, a byte order mark, noncharacters.
    static func randomContent(_ random: inout SeededRandom) -> [UInt8] {
        let pieces: [[UInt8]] = [Array("plain words ".utf8), Array("é€日本😀".utf8), [10], [13, 10], [0], [0xEF, 0xBB, 0xBF],
                                 [0xEF, 0xBF, 0xBE], [0xFF], [0xC3], [0x80], [0xED, 0xA0, 0x80], [0xC0, 0x80], [0xF4, 0x90, 0x80, 0x80],
                                 [0xE2, 0x82], Array("[[private]]x[[/private]]".utf8), [0x7F, 1, 27]]
        var bytes: [UInt8] = []
        let valid = Int.random(in: 0..<3, using: &random) != 0
        for _ in 0..<Int.random(in: 0...40, using: &random) {
            let piece = pieces.randomElement(using: &random)!
            if valid && String(validating: piece, as: UTF8.self) == nil { continue }
            bytes += piece
        }
        return bytes
    }

    @Test("the same text as GMime's: 500 random contents, charset spelled three ways, three transfer encodings")
    func sameAsGMime() throws {
        var random = SeededRandom(seed: 2026_11_27_8)
        var differing = 0
        for round in 0..<500 {
            let content = Self.randomContent(&random)
            let charset = ["utf-8", "UTF8", "Utf-8"].randomElement(using: &random)!
            let encoding = ["8bit", "base64", "quoted-printable"].randomElement(using: &random)!
            let body: [UInt8] = switch encoding {
            case "base64": Array(Data(content).base64EncodedString(options: .lineLength76Characters).utf8) + [10]
            case "quoted-printable": Array(quotedPrintable(content).utf8)
            default: content
            }
            let head = "From: a@example.org\nMIME-Version: 1.0\nContent-Type: text/plain; charset=\(charset)\n"
                + "Content-Transfer-Encoding: \(encoding)\n\n"
            let message = try MIMEMessage.parse(Array(head.utf8) + body, options: .unlimited)
            let part = try #require(message.body)
            if part.text != part.gmimeText {
                differing += 1
                Issue.record("round \(round) (\(charset), \(encoding)): \(content)")
            }
        }
        #expect(differing == 0)
    }
}
