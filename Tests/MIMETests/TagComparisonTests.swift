@testable import MIME
import Platform
import Testing

@Suite("Tag comparison")
struct TagComparisonTests {
    @Test("constantTimeEqual agrees with == on random tags, on a change at every position and on every length")
    func constantTimeEqual() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let data = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let tag = "v2 " + Digest.hmacSHA256Hex(key: key, data: data)
            #expect(Digest.constantTimeEqual(tag, tag))
            var forged = Array(tag.utf8)
            let position = Int.random(in: 0..<forged.count, using: &generator)
            forged[position] = forged[position] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            #expect(!Digest.constantTimeEqual(String(decoding: forged, as: UTF8.self), tag), "changed at \(position)")
            #expect(!Digest.constantTimeEqual(String(tag.dropLast()), tag))
            #expect(!Digest.constantTimeEqual(tag + "0", tag))
            let other = "v2 " + Digest.hmacSHA256Hex(key: key, data: data + [1])
            #expect(Digest.constantTimeEqual(other, tag) == (other == tag))
        }
        #expect(Digest.constantTimeEqual("", ""))
        #expect(!Digest.constantTimeEqual("", "a"))
    }
}
