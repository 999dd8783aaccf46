import Foundation
import MIME
import TestSupport
import Testing

@Suite("Header folding keeps the text")
struct HeaderFoldingTests {
    /// A field value of random tokens (1 to 120 octets) between random runs
    /// of spaces and tabs, with whitespace at the ends now and then.
    static func value(_ random: inout SeededRandom) -> String {
        var text = Bool.random(using: &random) ? "" : String(repeating: " ", count: Int.random(in: 1...3, using: &random))
        for _ in 0..<Int.random(in: 1...Int.random(in: 1...200, using: &random), using: &random) {
            let long = Int.random(in: 0..<12, using: &random) == 0
            text += String(repeating: "abc<>@,;\"x".randomElement(using: &random)!,
                           count: Int.random(in: 1...(long ? 120 : 10), using: &random))
            text += String((0..<Int.random(in: 1...3, using: &random)).map { _ in Bool.random(using: &random) ? " " : "\t" })
        }
        return Int.random(in: 0..<4, using: &random) == 0 ? text : String(text.dropLast())
    }

    @Test("random long fields: folded only before whitespace, lines at most 78 where they can be, the unfolded text unchanged, no line of whitespace alone")
    func randomFields() throws {
        var random = SeededRandom(seed: UInt64.random(in: 1...UInt64.max))
        let seed = random.state
        for round in 0..<200 {
            let fields = (0..<3).map { "X-F\($0):" + Self.value(&random) }
            let header = "From: a@example.org\n" + fields.joined(separator: "\n") + "\n"
            let message = try MIMEMessage.parse(Array((header + "\nbody\n").utf8))
            let folded = message.foldLongHeaders()
            let bytes = message.serialize()
            let end = try #require(bytes.firstRange(of: Array("\n\n".utf8))?.lowerBound)
            let written = String(decoding: bytes[..<end], as: UTF8.self) + "\n"
            let unfolded = written.replacingOccurrences(of: "\n ", with: " ").replacingOccurrences(of: "\n\t", with: "\t")
            #expect(unfolded == header, "seed \(seed) round \(round)")
            let long = fields.enumerated().filter { $0.element.utf8.count > 78 }.map { "X-F\($0.offset)" }
            #expect(Set(folded).isSubset(of: long), "seed \(seed) round \(round): \(folded)")
            for line in written.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                #expect(line.contains { $0 != " " && $0 != "\t" }, "seed \(seed) round \(round): a line of whitespace alone")
                guard line.utf8.count > 78 else { continue }
                var rest = Substring(line).drop { $0 == " " || $0 == "\t" }
                if line.first != " " && line.first != "\t", let colon = rest.firstIndex(of: ":") { rest = rest[rest.index(after: colon)...] }
                // Only one word: no whitespace with text on both sides.
                let words = rest.split(whereSeparator: { $0 == " " || $0 == "\t" })
                #expect(words.count <= 1, "seed \(seed) round \(round): \(line.utf8.count) octets with room to fold")
            }
        }
    }
}
