import Foundation
@testable import Filter
import Pipeline
import Policy
import TestSupport
import Testing

/// The resident filter's per-mail work made cheaper (issue 24, row 1d) gives
/// what it gave before: each rewritten helper against the formulation it
/// replaced, on random inputs made of the bytes each one treats specially.
@Suite("Per-mail helpers, rewritten for cost, unchanged in result")
struct PerMailCostTests {
    @Test("the body a loop-prevention tag covers: CRs out, trailing line ends and blanks cut, as ArraySlice.filter did")
    func tagBody() {
        func before(_ bytes: [UInt8]) -> [UInt8] {
            var start = 0, index = 0
            while index < bytes.count {
                if bytes[index] == 10 && index + 1 < bytes.count && (bytes[index + 1] == 10 || (bytes[index + 1] == 13
                    && index + 2 < bytes.count && bytes[index + 2] == 10)) {
                    start = index + 1
                    break
                }
                index += 1
            }
            var body = bytes[start...].filter { $0 != 13 }
            while let last = body.last, last == 10 || last == 32 || last == 9 { body.removeLast() }
            return body
        }
        var random = SeededRandom(seed: 24)
        let alphabet: [UInt8] = [97, 10, 13, 32, 9, 0xC3]
        for _ in 0..<3_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            #expect(MailFilter.body(of: bytes) == before(bytes), "\(bytes)")
        }
    }

    @Test("Autocrypt key data folded at 72 base64 characters, as the String-index version folded it")
    func autocryptFolding() {
        var random = SeededRandom(seed: 1)
        for count in [0, 1, 53, 54, 55, 107, 108, 109, 500] + (0..<200).map({ _ in Int.random(in: 0...2_000, using: &random) }) {
            let keydata = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let base64 = Data(keydata).base64EncodedString()
            var chunks: [Substring] = []
            var index = base64.startIndex
            while index < base64.endIndex {
                let end = base64.index(index, offsetBy: 72, limitedBy: base64.endIndex) ?? base64.endIndex
                chunks.append(base64[index..<end])
                index = end
            }
            #expect(Autocrypt.header(address: "a@example.org", keydata: keydata)
                    == "addr=a@example.org; prefer-encrypt=mutual; keydata=\n " + chunks.joined(separator: "\n "))
        }
    }

    @Test("markup by the bytes of the subtype: wherever the characters say html or xml, and the same on ASCII")
    func markupSubtype() {
        var random = SeededRandom(seed: 3)
        let pieces = ["h", "t", "m", "l", "x", "-", "+", ".", "H", "é", "\u{301}", "html", "xml", "xhtml"]
        for _ in 0..<3_000 {
            let subtype = (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let byCharacters = subtype.contains("html") || subtype.contains("xml")
            let utf8 = Array(subtype.utf8)
            let byBytes = [Array("html".utf8), Array("xml".utf8)].contains { word in
                utf8.count >= word.count && (0...(utf8.count - word.count)).contains { Array(utf8[$0..<($0 + word.count)]) == word }
            }
            #expect(Redactor.isMarkup(type: "text", subtype: subtype) == byBytes, "\(subtype)")
            if byCharacters { #expect(Redactor.isMarkup(type: "text", subtype: subtype), "\(subtype)") }
        }
    }
}
