import Foundation
import OpenPGP
import TestSupport
import Testing

/// A rotation is taken by the filter only when the old key certified the new
/// one: the look-up lists signatures as gpg checked them (`--check-sigs`, in
/// the same one listing), so a certification that does not verify never counts.
@Suite("certifications in the key look-up", .serialized)
struct CertificationTests {
    /// The packets of binary OpenPGP data as (tag, header length, body range).
    static func packets(_ bytes: [UInt8]) -> [(tag: Int, body: Range<Int>)] {
        var found: [(Int, Range<Int>)] = [], offset = 0
        while offset < bytes.count {
            let ctb = Int(bytes[offset])
            var tag: Int, length: Int, header: Int
            if ctb & 0x40 != 0 {  // new format
                tag = ctb & 0x3F
                let first = Int(bytes[offset + 1])
                if first < 192 { length = first; header = 2 }
                else if first < 224 { length = ((first - 192) << 8) + Int(bytes[offset + 2]) + 192; header = 3 }
                else { length = (2...5).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }; header = 6 }
            } else {  // old format
                tag = (ctb >> 2) & 0x0F
                switch ctb & 3 {
                case 0: length = Int(bytes[offset + 1]); header = 2
                case 1: length = Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]); header = 3
                default: length = (1...4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }; header = 5
                }
            }
            found.append((tag, offset + header..<offset + header + length))
            offset += header + length
        }
        return found
    }

    @Test("a good certification by the old key counts; the same one with its signature damaged, a self-signature, another issuer do not")
    func certified() throws {
        let bob = try TemporaryGnuPGHome()
        defer { bob.close() }
        let old = try bob.makeKey("Bob <bob@example.org>", at: "20200101T000000")
        let other = try bob.makeKey("Other <other@example.org>", at: "20200101T000000")
        let new = try bob.makeKey("Bob <bob@example.org>", at: "20200201T000000")
        try bob.certify(new, by: old, at: "20200301T000000")
        let exported = try bob.export([new])

        var damaged = exported
        let certification = try #require(Self.packets(exported).first { $0.tag == 2 && exported[$0.body.lowerBound + 1] == 0x10 },
                                         "the export carries the certification")
        damaged[certification.body.upperBound - 3] ^= 0x55  // inside the signature value

        for (bytes, good) in [(exported, true), (damaged, false)] {
            try withGnuPGHome { home throws in
                try home.importKeys(try bob.export([old, other]))
                try home.importKeys(bytes)
                let key = try #require(try GnuPG(home: home.path).lookup(["bob@example.org"]).first?.candidates
                    .first { $0.key.fingerprint == new }?.key)
                let byOld = key.userIDs.flatMap(\.certifications).filter { $0.issuer == Key.keyID(of: old) }
                #expect(byOld.count == 1 && byOld[0].isGood == good, "listed, as gpg checked it: \(byOld)")
                #expect(key.isCertified(by: old, for: "bob@example.org") == good, "good: \(good)")
                #expect(!key.isCertified(by: new, for: "bob@example.org"), "its own self-signature is no certification")
                #expect(!key.isCertified(by: other, for: "bob@example.org"))
                #expect(!key.isCertified(by: old, for: "other@example.org"), "only a user ID for the address counts")
            }
        }
    }
}
