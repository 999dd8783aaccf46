import Foundation
@testable import Policy
import TestSupport
import Testing

/// fold and isInvisible answer ASCII and Latin-1 without Unicode's property
/// tables (a 100 MB attachment read as ISO-8859-1 is nothing else); for every
/// scalar they must give what the tables give.
@Suite("Marker folding's shortcuts agree with Unicode's properties")
struct ScalarShortcutTests {
    /// What ``fold(_:)`` must give: the scalar's NFKC form (Foundation's) where that is one scalar,
    /// İ and ı as i (issue 21's look-alikes), lower-cased where that gives one scalar. Scalars
    /// Unicode 14 (the generated table's, Python's unicodedata) did not have are taken as they
    /// are: Foundation may know a newer Unicode.
    static func lowered(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        var scalar = scalar
        if scalar.value == 0x130 || scalar.value == 0x131 { return "i" }
        if scalar.value >= 0x80, let age = scalar.properties.age, age.major < 14 || age.major == 14 && age.minor == 0 {
            let nfkc = String(scalar).precomposedStringWithCompatibilityMapping.unicodeScalars
            if nfkc.count == 1 { scalar = nfkc.first! }
        }
        guard scalar.properties.changesWhenLowercased else { return scalar }
        let lower = scalar.properties.lowercaseMapping.unicodeScalars
        return lower.count == 1 ? lower.first! : scalar
    }

    static func shownAsNothing(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x20 { return value != 0x09 && value != 0x0A && value != 0x0D }
        if (0x7F..<0xA0).contains(value) { return true }
        if (0xFFF9...0xFFFC).contains(value) || value == 0x2028 || value == 0x2029 { return true }
        return scalar.properties.isDefaultIgnorableCodePoint
    }

    @Test("every scalar up to U+10FFFF: fold is its one-scalar NFKC form's one-scalar lower case, isInvisible the rule on the tables")
    func everyScalar() {
        var mismatches: [String] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if fold(scalar) != Self.lowered(scalar) { mismatches.append("fold U+\(String(value, radix: 16))") }
            if isInvisible(scalar) != Self.shownAsNothing(scalar) { mismatches.append("isInvisible U+\(String(value, radix: 16))") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(20))")
    }
}

/// The page tables behind fold and isInvisible above Latin-1 are made lazily and
/// shared by threads (the resident filter's workers): tables made by threads racing
/// for the same pages give what Unicode's properties give, and only the pages asked for are made.
@Suite("Marker folding's page tables")
struct ScalarPageTests {
    @Test("threads racing to make the same pages of fresh tables all read what the properties say")
    func racingThreads() async {
        let pages = ScalarPages()
        #expect(pages.pagesMade == 0)
        // The pages random bytes read as UTF-8 or UTF-7 reach (U+FFFD's among them), and some far ones.
        let values: [UInt32] = Array(0x100..<0x3000) + Array(0xFF00...0xFFFF) + Array(0x1F300..<0x1F400) + Array(0xE0000..<0xE0100)
        let mismatches = await withTaskGroup(of: [UInt32].self) { group in
            for thread in 0..<8 {
                group.addTask {
                    // Each in its own order, so that threads meet on pages not yet made.
                    let order = thread % 2 == 0 ? values : values.reversed()
                    return order.compactMap { value -> UInt32? in
                        guard let scalar = Unicode.Scalar(value) else { return nil }
                        let entry = pages.entry(scalar)
                        let folded = Unicode.Scalar(entry & ScalarPages.scalarBits)
                        let invisible = entry & ScalarPages.invisibleBit != 0
                        return folded == ScalarShortcutTests.lowered(scalar) && invisible == ScalarShortcutTests.shownAsNothing(scalar) ? nil : value
                    }
                }
            }
            return await group.reduce(into: [UInt32]()) { $0 += $1 }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(20).map { String($0, radix: 16) })")
        let asked = Set(values.map { $0 >> 8 }).count
        // A page is made by each thread that finds it missing at most (a race's loser frees its copy).
        #expect(pages.pagesMade >= asked && pages.pagesMade <= 8 * asked, "\(pages.pagesMade) pages made for \(asked)")
    }

    @Test("a scalar asked for makes its page only")
    func lazily() {
        let pages = ScalarPages()
        _ = pages.entry("\u{FFFD}")
        _ = pages.entry("\u{FFFE}")
        _ = pages.entry("\u{200B}")
        #expect(pages.pagesMade == 2)
    }
}

/// scalarArray reads a String's UTF-8 by hand, where Array(text.unicodeScalars)
/// counted and then iterated: on random text of every UTF-8 length they agree.
@Suite("A text's scalars read from its UTF-8")
struct ScalarArrayTests {
    @Test("random texts of one- to four-byte scalars, the same scalars as the String's own view")
    func sameAsTheView() {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededRandom(seed: seed)
        let ranges: [ClosedRange<UInt32>] = [0...0x7F, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF]
        for round in 0..<2000 {
            var view = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0..<40, using: &random) {
                let range = ranges[Int.random(in: 0..<ranges.count, using: &random)]
                view.append(Unicode.Scalar(UInt32.random(in: range, using: &random))!)
            }
            let text = String(view)
            #expect(scalarArray(text) == Array(text.unicodeScalars), "seed \(seed) round \(round)")
        }
        // Every boundary of every length.
        let edges: [UInt32] = [0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]
        let all = String(String.UnicodeScalarView(edges.map { Unicode.Scalar($0)! }))
        #expect(scalarArray(all) == Array(all.unicodeScalars))
    }
}
