import Foundation
@testable import MIME
import TestSupport
import Testing

/// ``Inflation/Markup``, the text of a document (an office file's XML, an HTML part joined with
/// its neighbours): tags, comments and quoted attributes out, references decoded. Its references
/// are read from their bytes (issue 24: the table and Strings made at each one were a quarter of
/// reading a random-byte HTML part); each generated document says what it must read as.
@Suite("Markup text: tags out, references decoded")
struct MarkupTextTests {
    @Test("random documents of text, tags with quoted '>', comments and references (decimal, hex in either case, the five names, unknown names, out of range, unterminated) read as written")
    func references() {
        var random = SeededRandom(seed: 2026_11_27_18)
        for round in 0..<400 {
            var document = "", expected = ""
            for _ in 0..<Int.random(in: 1...30, using: &random) {
                switch Int.random(in: 0..<8, using: &random) {
                case 0:
                    let word = String((0..<Int.random(in: 1...6, using: &random)).map { _ in "ab[]/zé".randomElement(using: &random)! })
                    document += word
                    expected += word
                case 1:
                    document += ["<b>", "<span title=\"a>b\">", "<p class='x>y'>", "</i>", "<br/>"].randomElement(using: &random)!
                case 2:
                    document += "<!-- [[private]] > -->"
                case 3:
                    let value = [UInt32(0x5B), 0x41, 0xE9, 0x4E2D, 0x1F600, UInt32.random(in: 0x20...0xD7FF, using: &random)].randomElement(using: &random)!
                    let written = [String(value), "x" + String(value, radix: 16), "X" + String(value, radix: 16, uppercase: true),
                                   "x0" + String(value, radix: 16)].randomElement(using: &random)!
                    document += "&#" + written + ";"
                    expected += String(Character(Unicode.Scalar(value)!))
                case 4:
                    let (name, scalar) = [("amp", "&"), ("lt", "<"), ("gt", ">"), ("quot", "\""), ("apos", "'")].randomElement(using: &random)!
                    document += "&" + name + ";"
                    expected += scalar
                case 5:
                    // Kept as written: unknown names, out of range, surrogates, empty.
                    let kept = ["&nbsp;", "&#x110000;", "&#xD800;", "&#;", "&#x;", "&#12a;", "&lsqb;"].randomElement(using: &random)!
                    document += kept
                    expected += kept
                case 6:
                    // An ampersand not followed by a reference's end: kept, and what follows read on.
                    document += "& b"
                    expected += "& b"
                default:
                    document += "x"
                    expected += "x"
                }
            }
            var markup = Inflation.Markup()
            Array(document.utf8).withUnsafeBytes { markup.feed($0) }
            #expect(String(decoding: markup.text, as: UTF8.self) == expected, "round \(round): \(document.debugDescription)")
        }
    }
}
