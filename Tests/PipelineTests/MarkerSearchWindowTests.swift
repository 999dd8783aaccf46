import Foundation
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21, the byte search's window: an attachment is searched 1 MiB at a
/// time, and the old search kept only 26 bytes from one window to the next,
/// so an escaped marker (`\N{LEFT SQUARE BRACKET}` is 23 bytes a scalar), or
/// a plain one with invisible characters inside, that crossed the cut was
/// missed. Python's string literals show each of these as a marker. The
/// bytes come in random pieces, the marker at a random place near the cut.
@Suite("The attachment search across its windows")
struct MarkerSearchWindowTests {
    @Test("escaped or padded markers across the 1 MiB cut are found, at any piece size and offset")
    func acrossTheCut() {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_04)
        let redactor = Redactor.standard
        for round in 0..<12 {
            let piece = [4096, 65536, 1 << 20, Int.random(in: 1000...9000, using: &random)][round % 4]
            let marker: String
            switch round % 3 {
            case 0: marker = "\\N{LEFT SQUARE BRACKET}\\N{left square bracket}private\\N{RIGHT SQUARE BRACKET}\\x5d"
            case 1: marker = "\\x5b" + String(repeating: "\\u200b", count: Int.random(in: 1...400, using: &random)) + "\\133private]]"
            default: marker = "[" + String(repeating: "\u{200B}", count: Int.random(in: 20...3000, using: &random)) + "[private]]"
            }
            // The first scan is at the first piece boundary at or past 1 MiB and 26 bytes.
            let cut = ((1 << 20) + 26 + piece - 1) / piece * piece - 26
            let start = cut - Int.random(in: 1..<marker.utf8.count, using: &random)
            var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: start)
            for index in stride(from: 70, to: start, by: 71) { bytes[index] = 10 }
            bytes += Array(marker.utf8) + Array(" secret\n".utf8) + [UInt8](repeating: UInt8(ascii: "b"), count: 5000)
            var search = Redactor.MarkerSearch(redactor, encodings: true)
            var at = 0
            while at < bytes.count {
                let end = min(bytes.count, at + piece)
                bytes[at..<end].withUnsafeBytes { search.feed($0) }
                at = end
            }
            let found = search.finish()
            #expect(found, "round \(round): pieces of \(piece), marker of \(marker.utf8.count) bytes from \(start)")
        }
    }

    @Test("a reversed marker any distance after its override on the same line, across windows")
    func farOverride() {
        var random = SeededRandom(seed: 2026_11_26_05)
        for round in 0..<4 {
            let filler = [UInt8](repeating: UInt8(ascii: "x"), count: Int.random(in: 70_000...2_200_000, using: &random))
            let bytes = Array("hi \u{202E}".utf8) + filler + Array("]]etavirp/[[terces]]etavirp[[\u{202C}\n".utf8)
            var search = Redactor.MarkerSearch(.standard, encodings: true)
            var at = 0
            while at < bytes.count {
                let end = min(bytes.count, at + 4096)
                bytes[at..<end].withUnsafeBytes { search.feed($0) }
                at = end
            }
            let found = search.finish()
            #expect(found, "round \(round): \(filler.count) bytes after the override")
        }
    }

    /// Bytes like `scripts/hostile-mail escape-starts`: near misses of the escape search
    /// (`\u00ad` and `\0` runs, escaped brackets before invisibles, `\x5b\x5b` before long
    /// runs of letters, `[` and invisibles before `[privat.`) and right-to-left overrides on
    /// long lines, in random order, about `size` bytes; no marker in any reading.
    static func nearMisses(_ size: Int, _ random: inout SeededRandom) -> [UInt8] {
        var out: [UInt8] = []
        while out.count < size {
            let unit: String
            switch Int.random(in: 0..<6, using: &random) {
            case 0: unit = String(repeating: "\\u00ad", count: Int.random(in: 20..<200, using: &random)) + "x "
            case 1: unit = String(repeating: "\\0", count: Int.random(in: 20..<200, using: &random)) + "y "
            case 2: unit = "\\x5b" + String(repeating: "\\u200b", count: Int.random(in: 5..<60, using: &random)) + "q "
            case 3: unit = "\\x5b\\x5b" + String(repeating: "abcdefgh ", count: Int.random(in: 5..<200, using: &random)) + ".\n"
            case 4: unit = "\u{202E}" + String(repeating: "abc ", count: Int.random(in: 10..<400, using: &random)) + "\n"
            default: unit = "[" + String(repeating: "\u{200B}", count: Int.random(in: 5..<100, using: &random)) + "[privat. "
            }
            out += Array(unit.utf8)
        }
        return out
    }

    @Test("near misses with right-to-left overrides: each region decoded about once, whatever the size (it was doubled from its start)")
    func regionsDecodedOnce() {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_13)
        var perByte: [Double] = []
        for size in [60_000, 240_000] {
            let bytes = Self.nearMisses(size, &random)
            var search = Redactor.MarkerSearch(.standard, encodings: true)
            bytes.withUnsafeBytes { search.feed($0) }
            let found = search.finish()
            #expect(!found, "no marker in any reading of \(bytes.count) bytes of near misses")
            perByte.append(Double(search.decodedBytes) / Double(bytes.count))
        }
        print("escape regions: decoded a byte \(perByte)")
        // A region under a right-to-left override is live to the window's end (RTF's reading
        // joins its lines): taken there at once it is decoded about once more; doubled
        // from its start, it was decoded two to three times, more at some sizes than others.
        #expect(perByte.allSatisfy { $0 <= 1.5 }, "bytes decoded a byte scanned: \(perByte)")
        #expect(perByte[1] <= 1.2 * perByte[0], "bytes decoded a byte scanned: \(perByte)")
    }
}
