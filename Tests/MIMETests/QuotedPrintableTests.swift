import Foundation
@testable import MIME
import TestSupport
import Testing

@Suite("Quoted-printable text encoded by mailsec, as GMime's filter encodes it")
struct QuotedPrintableTests {
    // No test of line lengths: GMime's encoder never breaks a run of `=0D` (a CR not before LF, or a
    // blank before one), so its lines may pass 76, and what it writes is what is kept.

    /// Random text of the pieces where quoted-printable has rules: blanks before line ends and
    /// at the end, `=`, CR LF, lone CRs, long lines (soft breaks before and inside `=XX`), dots and
    /// "From " at line starts, controls, NUL, DEL and non-ASCII.
    static func randomText(_ random: inout SeededRandom) -> String {
        let pieces = ["a", "word ", " ", "  ", "\t", " \t", "=", "==", "=3D", "\n", "\r\n", "\r", ".", "..", "From ",
                      "é", "€", "日本", "😀", "\u{0}", "\u{7F}", "\u{1}", "\u{A0}", "\u{202E}", "-- ", "x=\n"]
        var text = ""
        for _ in 0..<Int.random(in: 0...60, using: &random) {
            if Int.random(in: 0..<6, using: &random) == 0 {
                // A long run that crosses the soft break at any column.
                let letter = ["b", "é", "=", " ", "\t"].randomElement(using: &random)!
                text += String(repeating: letter, count: Int.random(in: 60...200, using: &random))
            } else {
                text += pieces.randomElement(using: &random)!
            }
        }
        return text
    }

    @Test("byte for byte what GMime's filter writes: 600 random texts, LF and CRLF, plain and HTML")
    func sameAsGMime() {
        var random = SeededRandom(seed: 2026_11_27_24)
        var texts = (0..<600).map { _ in Self.randomText(&random) }
        texts += ["", " ", "\t", "\r", "\n", "=", "a \n", "a\t\r\n", String(repeating: "x", count: 75) + " ",
                  String(repeating: "x", count: 73) + "é", String(repeating: "x", count: 76) + "\n"]
        var differing = 0
        for (index, text) in texts.enumerated() {
            for newline in [Newline.lf, .crlf] {
                let subtype = index % 5 == 0 ? "html" : "plain"
                let mine = MIMEEntity.quotedPrintableText(text, subtype: subtype).serialize(newline: newline)
                let gmime = MIMEEntity.quotedPrintableText(text, subtype: subtype, encodedHere: false).serialize(newline: newline)
                if mine != gmime {
                    differing += 1
                    Issue.record("text \(index) (\(newline)): \(Array(text.utf8))")
                }
            }
        }
        #expect(differing == 0)
    }

    @Test("a text of several megabytes, encoded a megabyte at a time, as GMime's filter writes it")
    func piecesAsGMime() {
        var random = SeededRandom(seed: 2026_11_27_10)
        // Pieces end anywhere: inside a held blank, a CR before its LF, a line about to break.
        var text = ""
        while text.utf8.count < 3 << 20 { text += Self.randomText(&random) }
        let mine = MIMEEntity.quotedPrintableText(text).serialize()
        let gmime = MIMEEntity.quotedPrintableText(text, encodedHere: false).serialize()
        let first = (0..<min(mine.count, gmime.count)).first { mine[$0] != gmime[$0] } ?? min(mine.count, gmime.count)
        #expect(mine.count == gmime.count && first == mine.count, "\(mine.count) bytes against \(gmime.count), first difference at \(first)")
    }

    @Test("Python's quopri decodes it to the text, CR LF as LF: 400 random texts")
    func pythonDecodes() throws {
        var random = SeededRandom(seed: 2026_11_27_76)
        let texts = (0..<400).map { _ in Self.randomText(&random) }
        let encoded = texts.map { QuotedPrintable.encoded(Array($0.utf8)) }
        // One Python run: each encoding in hex on a line, each decoding back the same way.
        let input = encoded.map { $0.map { String(format: "%02x", $0) }.joined() }.joined(separator: "\n")
        let script = """
            import sys, quopri
            for line in sys.stdin.read().split("\\n"):
                print(quopri.decodestring(bytes.fromhex(line)).hex())
            """
        let decoded = try run("/usr/bin/python3", ["-c", script], input: Array(input.utf8))
        try #require(decoded.status == 0, "\(decoded.errors)")
        let lines = String(decoding: decoded.stdout, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        for (index, text) in texts.enumerated() {
            let expected = Array(text.replacingOccurrences(of: "\r\n", with: "\n").utf8).map { String(format: "%02x", $0) }.joined()
            #expect(String(lines[index]) == expected, "text \(index): \(Array(text.utf8))")
        }
    }
}
