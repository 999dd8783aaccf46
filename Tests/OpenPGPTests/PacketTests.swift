import Foundation
@testable import OpenPGP
import Platform
import TestSupport
import Testing

@Suite("OpenPGP packets read far enough to judge integrity and choose key packets")
struct PacketTests {
    /// A new-format packet with `tag` and `body`.
    func packet(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] { [0xC0 | tag, UInt8(body.count)] + body }

    @Test("the first encrypted data packet says how the content is protected: SED, SEIPD v1 (MDC), SEIPD v2 and OCB (AEAD)")
    func dataKinds() {
        let pkesk = packet(1, [3] + Array(repeating: 7, count: 20))
        #expect(Packets.encryptedDataKind(pkesk + packet(9, [1, 2, 3])) == .unprotected)
        #expect(Packets.encryptedDataKind(pkesk + packet(18, [1, 2, 3])) == .mdc)
        #expect(Packets.encryptedDataKind(pkesk + packet(18, [2, 9, 2])) == .aead)
        #expect(Packets.encryptedDataKind(pkesk + packet(20, [1, 9, 2])) == .aead)
        // Old-format header (tag 9 in bits 5-2), and a partial length (0xE0 | power) for tag 18.
        #expect(Packets.encryptedDataKind(pkesk + [0x80 | (9 << 2), 3, 1, 2, 3]) == .unprotected)
        #expect(Packets.encryptedDataKind(pkesk + [0xC0 | 18, 0xE9, 1] + Array(repeating: 0, count: 600)) == .mdc)
        let armored = Array(Armor.armor(pkesk + packet(9, [1, 2, 3]), type: "MESSAGE").utf8)
        #expect(Packets.encryptedDataKind(armored) == .unprotected, "armored too")
        #expect(Packets.encryptedDataKind(Array("not OpenPGP".utf8)) == nil)
    }

    @Test("gpg's status lines decide: GOODMDC and DECRYPTION_OKAY, or the reason it is refused")
    func statusLines() {
        func judge(_ lines: [(String, String)], failed: Bool = false, packets: EncryptedDataKind? = nil) -> IntegrityError.Reason? {
            let status = DecryptionStatus()
            for (keyword, arguments) in lines { status.record(keyword, arguments) }
            return status.refusal(failed: failed, packets: packets)?.reason
        }
        #expect(judge([("DECRYPTION_INFO", "2 9 0"), ("DECRYPTION_OKAY", ""), ("GOODMDC", "")]) == nil)
        // With ignore-mdc-error gpg 2.2 says DECRYPTION_OKAY without GOODMDC for a bad MDC.
        #expect(judge([("DECRYPTION_INFO", "2 9 0"), ("DECRYPTION_OKAY", "")]) == .checkFailed)
        #expect(judge([("DECRYPTION_INFO", "0 9 0"), ("DECRYPTION_OKAY", "")]) == .noProtection)
        #expect(judge([("DECRYPTION_INFO", "2 9 0"), ("BADMDC", ""), ("DECRYPTION_FAILED", "")], failed: true) == .checkFailed)
        // GnuPG 2.4 with AEAD: DECRYPTION_INFO names the AEAD algorithm; a bad tag is BADMDC.
        #expect(judge([("DECRYPTION_INFO", "0 9 2"), ("DECRYPTION_OKAY", ""), ("GOODMDC", "")]) == nil)
        #expect(judge([("DECRYPTION_INFO", "0 9 2"), ("BADMDC", ""), ("DECRYPTION_FAILED", "")], failed: true) == .aeadTagFailed)
        // gpg 2.2 with GnuPG's AEAD packet (tag 20, from rnp): `0 9 0` as for no MDC; the packets tell.
        let ok = [("DECRYPTION_INFO", "0 9 0"), ("DECRYPTION_OKAY", ""), ("GOODMDC", "")]
        #expect(judge(ok, packets: .aead) == nil)
        #expect(judge(ok, failed: true, packets: .aead) == .aeadTagFailed, "a bad tag: gpg 2.2 still says OKAY and GOODMDC, and fails")
        #expect(judge(ok) == .noProtection, "without the packets, `0 9 0` is no protection")
        #expect(judge(ok, packets: .mdc) == .noProtection)
        #expect(judge([("DECRYPTION_INFO", "0 9 0"), ("DECRYPTION_OKAY", "")], packets: .aead) == .aeadTagFailed)
        // No session key: nothing to judge, the operation's own error stands.
        #expect(judge([("DECRYPTION_FAILED", "")], failed: true) == nil)
    }

    @Test("v4 fingerprints computed from the packets are GnuPG's")
    func fingerprints() throws {
        let armored = try String(contentsOf: Paths.key("bob.pub.asc"), encoding: .utf8)
        let binary = try #require(Packets.binary(Array(armored.utf8)))
        let keys = Packets.list(binary).filter { $0.tag == 6 || $0.tag == 14 }.compactMap(Packets.fingerprint(of:))
        try withGnuPGHome(importing: ["bob.pub.asc"]) { home throws in
            let listed = try home.gpg(["--with-colons", "--with-subkey-fingerprints", "--list-keys"]).output
            let gpgFingerprints = listed.split(separator: "\n").filter { $0.hasPrefix("fpr:") }.map { String($0.split(separator: ":", omittingEmptySubsequences: false)[9]) }
            #expect(keys == gpgFingerprints && keys.count == 2)
        }
        #expect(Digest.hex(Digest.sha1(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }
}
