import Redaction
import TestSupport
import Testing

/// Whether a large attachment is ciphertext is first decided from its first
/// bytes (``EncryptedAlready/mayBeArmoredMessage(_:)``), so that it is not held
/// whole only to learn it is no armor: that must never say no to what the whole
/// check (``EncryptedAlready/isOnlyArmoredMessage(_:)``) says yes to.
@Suite("Ciphertext told from its first bytes")
struct EncryptedAlreadyPrefixTests {
    @Test("the prefix check never refuses an armored message, at any cut, with any blanks before it")
    func prefixNeverRefusesArmor() {
        var random = SeededRandom(seed: 2026_11_26_24)
        let blanks: [UInt8] = [32, 9, 10, 13]
        for _ in 0..<500 {
            var bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in blanks[Int.random(in: 0..<4, using: &random)] }
            bytes += Array("-----BEGIN PGP MESSAGE-----\n\nhQEMA0+body\n-----END PGP MESSAGE-----\n".utf8)
            let whole = EncryptedAlready.isOnlyArmoredMessage(bytes)
            #expect(whole, "the whole check takes it")
            for cut in [0, 1, Int.random(in: 0...bytes.count, using: &random), bytes.count] {
                let prefix = Array(bytes.prefix(cut))
                #expect(EncryptedAlready.mayBeArmoredMessage(prefix), "cut at \(cut)")
            }
        }
    }

    @Test("other first bytes are told apart at once: random bytes, text, another armor")
    func otherContentRefused() {
        var random = SeededRandom(seed: 2026_11_26_25)
        for _ in 0..<500 {
            var bytes = (0..<64).map { _ in UInt8.random(in: 0...255, using: &random) }
            if [32, 9, 10, 13, UInt8(ascii: "-")].contains(bytes[0]) { bytes[0] = UInt8(ascii: "x") }
            #expect(!EncryptedAlready.mayBeArmoredMessage(bytes))
        }
        #expect(!EncryptedAlready.mayBeArmoredMessage(Array("  -----BEGIN PGP SIGNATURE-----\n".utf8)))
        #expect(!EncryptedAlready.mayBeArmoredMessage(Array("Hello,\n-----BEGIN PGP MESSAGE-----\n".utf8)))
    }
}
