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

    @Test("RTF: a reversed marker lines after its override, with bare line ends between, across windows")
    func overrideAcrossRTFLines() {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_23)
        for round in 0..<4 {
            // An RTF reader ignores bare line ends: the override runs on to the marker.
            var filler: [UInt8] = []
            let size = Int.random(in: 70_000...2_200_000, using: &random)
            while filler.count < size { filler += Array(String(repeating: "x", count: Int.random(in: 1...200, using: &random)).utf8) + [10] }
            let rtf = round % 2 == 0 ? "{\\rtf1\\ansi " : "{\\RTF1 "
            let bytes = Array((rtf + "hi \u{202E}").utf8) + filler + Array("]]etavirp/[[terces]]etavirp[[\u{202C}\\par}".utf8)
            let found = Self.search(bytes, piece: [4096, 65536, 1 << 20, 777][round])
            #expect(found, "round \(round): \(filler.count) bytes of lines after the override")
            // Without RTF's signature no reader joins those lines: each is ordered on its own.
            let foundWithout = Self.search(Array(bytes[rtf.utf8.count...]), piece: 65536)
            #expect(!foundWithout, "round \(round): not RTF")
        }
    }

    @Test("a control written as an escape, any distance before its reversed marker (a hostile review's finding)")
    func escapedOverrideFarBefore() {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_26)
        // (document's start, the override as its format escapes it, the text between, the end)
        let forms: [(String, String, String, String)] = [
            ("{\\rtf1\\ansi hi ", "\\u8238?", "\\b0 ", "\\u8236?\\par}"),          // Word writes this
            ("{\\rtf1\\ansi hi ", "\\u8238?", "\n", "\\par}"),                        // RTF: bare line ends show nothing
            ("<p>", "&#x202E;", "<b>", "</b></p>"), ("<p>", "&#8238;", "<i>", "</i></p>"),
            ("{\"a\":\"", "\\u202E", "abc", "\"}"), ("{\"a\":\"", "\\u202e", "abc", "\"}"),
            ("p::after{content:\"", "\\202E ", "abc", "\"}"), ("x=", "%E2%80%AE", "abc", ""),
        ]
        for round in 0..<24 {
            let (head, control, between, tail) = forms[round % forms.count]
            let gap = Int.random(in: 10...3000, using: &random)
            var middle = ""
            while middle.utf8.count < gap { middle += between == "\n" ? String(repeating: "y", count: Int.random(in: 1...80, using: &random)) + "\n" : between }
            let bytes = Array((String(repeating: "filler words. ", count: Int.random(in: 0...5000, using: &random)) + head + control + middle
                + "[[etavirp/]]terces[[etavirp]]" + tail).utf8)
            let found = Self.search(bytes, piece: [4096, 65536, 777][round % 3])
            #expect(found, "round \(round): \(control) \(gap) bytes before the reversed marker")
            // The same without the override: nothing reversed, nothing shown.
            let plain = Self.search(Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: control, with: "x").utf8), piece: 65536)
            #expect(!plain, "round \(round): no override")
        }
    }

    static func search(_ bytes: [UInt8], piece: Int) -> Bool {
        var search = Redactor.MarkerSearch(.standard, encodings: true)
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + piece)
            bytes[at..<end].withUnsafeBytes { search.feed($0) }
            at = end
        }
        return search.finish()
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

    @Test("near misses with right-to-left overrides: the work stays about the same a byte, whatever the size")
    func regionsDecodedOnce() {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_13)
        var decodedPerByte: [Double] = [], examinedPerByte: [Double] = []
        for size in [60_000, 240_000, 960_000] {
            let bytes = Self.nearMisses(size, &random)
            var search = Redactor.MarkerSearch(.standard, encodings: true)
            bytes.withUnsafeBytes { search.feed($0) }
            let found = search.finish()
            #expect(!found, "no marker in any reading of \(bytes.count) bytes of near misses")
            decodedPerByte.append(Double(search.decodedBytes) / Double(bytes.count))
            examinedPerByte.append(Double(search.examinedScalars) / Double(bytes.count))
        }
        print("escape regions: decoded a byte \(decodedPerByte), scalars examined a byte \(examinedPerByte)")
        // A region is decoded about once or twice: a visual order to its line's end once,
        // a logical reading live at its end doubled (each doubling decodes the region so far,
        // so at most twice in all). Decoded from its start again and again, it grew with the size.
        #expect(decodedPerByte.allSatisfy { $0 <= 2 }, "bytes decoded a byte scanned: \(decodedPerByte)")
        #expect(examinedPerByte.allSatisfy { $0 <= 32 }, "scalars examined a byte scanned: \(examinedPerByte)")
        #expect(examinedPerByte[2] <= 2 * examinedPerByte[0], "scalars examined a byte scanned: \(examinedPerByte)")
    }

    @Test("random bytes (a compressed or encrypted attachment): the readings of their escape regions hold about a scalar a byte")
    func randomBytesReadOnce() {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_22)
        // Random bytes hold a right-to-left or other control (E2 80 AA-AE, E2 81 A6-A9)
        // every 1.8 MB or so, on a line of about 256 bytes. RTF's reading of the rest of the
        // window was decoded at many (RTF's lines run on past bare line ends), and kept from
        // one window to the next, doubling (a random 100 MB attachment took 70 s and 3.7 GiB);
        // bytes without RTF's signature are not read as RTF, and a visual order is its line's alone.
        let size = 8 << 20
        var bytes = [UInt8](repeating: 0, count: size)
        for index in stride(from: 0, to: size, by: 8) {
            withUnsafeBytes(of: random.next()) { word in for k in 0..<8 { bytes[index + k] = word[k] } }
        }
        // More of them, as random bytes may hold anywhere: one every 16 KiB or so.
        for _ in 0..<(size >> 14) {
            let at = Int.random(in: 0..<(size - 3), using: &random)
            bytes[at] = 0xE2
            (bytes[at + 1], bytes[at + 2]) = Bool.random(using: &random) ? (0x80, UInt8.random(in: 0xAA...0xAE, using: &random))
                : (0x81, UInt8.random(in: 0xA6...0xA9, using: &random))
        }
        var controls = 0
        for index in 0..<(size - 2) where bytes[index] == 0xE2
            && (bytes[index + 1] == 0x80 && (0xAA...0xAE).contains(bytes[index + 2]) || bytes[index + 1] == 0x81 && (0xA6...0xA9).contains(bytes[index + 2])) {
            controls += 1
        }
        var search = Redactor.MarkerSearch(.standard, encodings: true)
        var at = 0
        while at < size {
            let end = min(size, at + 65536)
            bytes[at..<end].withUnsafeBytes { search.feed($0) }
            at = end
        }
        let found = search.finish()
        #expect(!found, "no marker in random bytes")
        let perByte = Double(search.examinedScalars) / Double(size)
        print("random bytes: \(controls) controls, \(search.examinedScalars) scalars examined, \(perByte) a byte")
        #expect(controls > 0, "the bytes hold a control: the case is exercised")
        #expect(perByte < 2, "scalars examined a byte: \(perByte)")
    }
}
