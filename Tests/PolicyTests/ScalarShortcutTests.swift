@testable import Policy
import Testing

/// fold and isInvisible answer ASCII and Latin-1 without Unicode's property
/// tables (a 100 MB attachment read as ISO-8859-1 is nothing else); for every
/// scalar they must give what the tables give.
@Suite("Marker folding's shortcuts agree with Unicode's properties")
struct ScalarShortcutTests {
    static func lowered(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
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

    @Test("every scalar up to U+10FFFF: fold is its one-scalar lower case, isInvisible the rule on the tables")
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
