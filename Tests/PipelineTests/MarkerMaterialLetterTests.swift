@testable import Redaction
import Testing

/// The styled-material count's letter test answers ASCII and U+FFFD without Unicode's
/// property tables (a random-byte HTML part is nearly all U+FFFD): for those it must give
/// what the tables give, and the tables still answer the rest.
@Suite("Marker material's letter shortcut agrees with Unicode's properties")
struct MarkerMaterialLetterTests {
    @Test("ASCII, Latin-1, U+FFFD and a sample above: alphabetic or numeric, as the tables say")
    func letters() {
        var values = Array(UInt32(0)...0x3FF) + [0xFFFD, 0xFFFC, 0xFFFE, 0x2160, 0x0660, 0x4E00, 0x1F600, 0x10FFFF]
        values += stride(from: UInt32(0x400), to: 0x11_0000, by: 97).map { $0 }
        var mismatches: [String] = []
        for value in values {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let tables = scalar.properties.isAlphabetic || scalar.properties.numericType != nil
            if HTMLRebuild.MarkerMaterial.isLetter(scalar) != tables { mismatches.append("U+" + String(value, radix: 16)) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }
}
