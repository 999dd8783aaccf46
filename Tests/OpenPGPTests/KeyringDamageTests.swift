import Foundation
@testable import OpenPGP
import Platform
import TestSupport
import Testing

/// What GnuPG 2.2 does with a damaged keyring, found by trying: it lists the
/// keys before the damage, says `keydb_search failed` on stderr only, and
/// GPGME ends the listing with a plain EOF. These tests damage a real
/// keyring in every way we know and require the look-up either to throw
/// KeyringError or to give exactly the answer of the undamaged keyring.
@Suite("A damaged keyring is never read as missing keys", .serialized)
struct KeyringDamageTests {
    let addresses = ["alice@example.org", "bob@example.org", "carol@example.org", "nobody@example.org"]

    /// The look-up in a form that compares: address → fingerprints of the candidates.
    func answer(_ gnupg: GnuPG) throws -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: try gnupg.lookup(addresses).map { ($0.address, $0.candidates.map(\.key.fingerprint).sorted()) })
    }

    func withKeyring(_ body: (TemporaryGnuPGHome, [UInt8], [String: [String]]) throws -> Void) throws {
        try withGnuPGHome(importing: ["alice.pub.asc", "bob.pub.asc", "carol.pub.asc", "dave-older.pub.asc"]) { home throws in
            let good = Array(try Data(contentsOf: URL(fileURLWithPath: home.path + "/pubring.kbx")))
            let expected = try answer(GnuPG(home: home.path))
            #expect(expected["carol@example.org"]?.count == 1)
            try body(home, good, expected)
        }
    }

    /// Where each blob of a keybox starts, and the end.
    func boundaries(_ bytes: [UInt8]) -> Set<Int> {
        var offsets: Set<Int> = [0]
        var offset = 0
        while offset + 4 <= bytes.count {
            let length = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length > 0 else { break }
            offset += length
            offsets.insert(offset)
        }
        return offsets
    }

    func write(_ bytes: [UInt8], _ home: TemporaryGnuPGHome, name: String = "pubring.kbx") throws {
        let path = home.path + "/" + name
        try? FileManager.default.removeItem(atPath: path)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    @Test("an empty file, a folder or a socket in the keyring's place is damage, not an empty keyring")
    func notAKeyring() throws {
        try withKeyring { home, _, _ in
            let gnupg = GnuPG(home: home.path)
            try write([], home)
            #expect(throws: KeyringError.self) { try gnupg.lookup(addresses) }
            try FileManager.default.removeItem(atPath: home.path + "/pubring.kbx")
            try FileManager.default.createDirectory(atPath: home.path + "/pubring.kbx", withIntermediateDirectories: false)
            #expect(throws: KeyringError.self) { try gnupg.lookup(addresses) }
            let error = try #require(throws: KeyringError.self) { try gnupg.lookup(addresses) }
            #expect(error.description.contains("pubring.kbx") && error.description.contains("damaged"))
        }
    }

    @Test("truncated at any offset inside a blob: KeyringError; at a blob boundary the keyring is valid and the rest is for key continuity")
    func truncated() throws {
        try withKeyring { home, good, expected in
            let gnupg = GnuPG(home: home.path)
            let edges = boundaries(good)
            var generator = SystemRandomNumberGenerator()
            // Every blob's first bytes, its middle and its last byte, and random offsets.
            var offsets: Set<Int> = [1, 4, 31, 33, good.count - 1]
            for edge in edges where edge > 0 && edge < good.count { offsets.formUnion([edge - 1, edge + 1, edge + 4, edge + 30]) }
            for _ in 0..<12 { offsets.insert(Int.random(in: 1..<good.count, using: &generator)) }
            for offset in offsets.sorted() where !edges.contains(offset) {
                try write(Array(good[..<offset]), home)
                #expect(throws: KeyringError.self, "cut at \(offset) of \(good.count)") { try gnupg.lookup(addresses) }
            }
            try write(good, home)
            #expect(try answer(gnupg) == expected)
        }
    }

    @Test("a flipped bit anywhere: KeyringError, or the very answer of the whole keyring")
    func bitFlips() throws {
        try withKeyring { home, good, expected in
            let gnupg = GnuPG(home: home.path)
            var generator = SystemRandomNumberGenerator()
            var offsets = Set((0..<40).map { _ in Int.random(in: 0..<good.count, using: &generator) })
            offsets.formUnion([0, 3, 4, 5, 8, 10, 11, 32, 35, 36, 40])  // lengths, types and magic
            var caught = 0
            for offset in offsets.sorted() {
                var damaged = good
                damaged[offset] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                try write(damaged, home)
                do {
                    let got = try answer(gnupg)
                    // The one flip that cannot be told from a deletion: a blob's type byte set to 0
                    // (gpg --delete-key does exactly that). Key continuity covers it.
                    let deletion = boundaries(good).contains(offset - 4) && damaged[offset] == 0
                    #expect(got == expected || deletion, "a flip at \(offset) changed the answer without an error")
                } catch is KeyringError {
                    caught += 1
                }
            }
            #expect(caught > offsets.count / 2, "most flips land in checksummed blobs")
        }
    }

    @Test("a legacy pubring.gpg cut short is damage too")
    func legacyKeyring() throws {
        try withKeyring { home, _, expected in
            let exported = try home.gpg(["--export"]).stdout
            try FileManager.default.removeItem(atPath: home.path + "/pubring.kbx")
            try write(exported, home, name: "pubring.gpg")
            let gnupg = GnuPG(home: home.path)
            #expect(try answer(gnupg) == expected, "gpg reads a legacy keyring when there is no keybox")
            // The format has no checksums: a cut inside a packet is found, a cut
            // exactly between packets is left to key continuity.
            for offset in [1, 2, 3, 10, exported.count - 1] {
                try write(Array(exported[..<offset]), home, name: "pubring.gpg")
                #expect(throws: KeyringError.self, "cut at \(offset)") { try gnupg.lookup(addresses) }
            }
            try write(Array(exported[..<(exported.count / 2)]) + [0x99, 0x01], home, name: "pubring.gpg")
            #expect(throws: KeyringError.self) { try gnupg.lookup(addresses) }
            try write([], home, name: "pubring.gpg")
            #expect(throws: KeyringError.self) { try gnupg.lookup(addresses) }
        }
    }

    @Test("a key deleted with gpg (its blob marked deleted in place) is no damage: the rest is read as before")
    func deletedKey() throws {
        try withKeyring { home, _, expected in
            let bob = try #require(expected["bob@example.org"]?.first)
            #expect(try home.gpg(["--delete-key", bob]).status == 0)
            var without = expected
            without["bob@example.org"] = []
            #expect(try answer(GnuPG(home: home.path)) == without)
        }
    }

    @Test("checked beside the listing: on a damaged keyring a listing's result or error never passes; on a sound one it does")
    func checkedBesideTheListing() throws {
        struct ListingFailed: Error {}
        try withKeyring { home, good, _ in
            var generator = SystemRandomNumberGenerator()
            let edges = boundaries(good)
            for _ in 0..<16 {
                // Cut inside a blob, or one bit flipped in a blob's length or checksum: damage the check sees.
                var damaged = good
                if Bool.random(using: &generator) {
                    var cut = Int.random(in: 1..<good.count, using: &generator)
                    while edges.contains(cut) { cut = Int.random(in: 1..<good.count, using: &generator) }
                    damaged = Array(good[..<cut])
                } else {
                    let blob = edges.filter { $0 >= 32 && $0 < good.count }.randomElement(using: &generator)!
                    let end = edges.filter { $0 > blob }.min()!
                    let at = Bool.random(using: &generator) ? Int.random(in: blob..<(blob + 4), using: &generator)
                        : Int.random(in: (end - 20)..<end, using: &generator)
                    damaged[at] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                }
                try write(damaged, home)
                #expect(throws: KeyringError.self) { try KeyringCheck.checking(home: home.path) { 42 } }
                #expect(throws: KeyringError.self) { try KeyringCheck.checking(home: home.path) { () throws -> Int in throw ListingFailed() } }
                #expect(throws: KeyringError.self) { try GnuPG(home: home.path).lookup(addresses) }
            }
            try write(good, home)
            #expect(try KeyringCheck.checking(home: home.path) { 42 } == 42)
            #expect(throws: ListingFailed.self) { try KeyringCheck.checking(home: home.path) { () throws -> Int in throw ListingFailed() } }
        }
    }

    @Test("each blob's checksum, hashed where it lies, agrees with hashing a copy (random flips, every type byte)")
    func checksumInPlace() throws {
        try withKeyring { home, _, expected in
            // A deleted key too: its blob's type is 0 and its checksum the one made with type 2.
            let bob = try #require(expected["bob@example.org"]?.first)
            #expect(try home.gpg(["--delete-key", bob]).status == 0)
            let good = Array(try Data(contentsOf: URL(fileURLWithPath: home.path + "/pubring.kbx")))
            let edges = boundaries(good).sorted().filter { $0 >= 32 }
            var generator = SystemRandomNumberGenerator()
            /// The rule written out plainly, with OpenPGP's own SHA-1 over a copy.
            func reference(_ bytes: [UInt8], _ offset: Int, _ length: Int) -> Bool {
                let sum = Array(bytes[(offset + length - 20)..<(offset + length)])
                guard sum.contains(where: { $0 != 0 }) && sum.prefix(4).contains(where: { $0 != 0 }) else { return true }
                var content = Array(bytes[offset..<(offset + length - 20)])
                return (content[4] == 0 ? [2, 3] : [content[4]]).contains { type in
                    content[4] = type
                    return Digest.sha1(content) == sum
                }
            }
            var held = 0, failed = 0
            for (start, end) in zip(edges, edges.dropFirst()) {
                #expect(KeyringCheck.blobChecksumHolds(good, at: start, length: end - start), "blob at \(start) of the sound keyring")
                for round in 0..<24 {
                    var bytes = good
                    if round < 3 {
                        bytes[start + 4] = [0, 2, 3][round]
                    } else {
                        bytes[Int.random(in: start..<end, using: &generator)] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                    }
                    let holds = KeyringCheck.blobChecksumHolds(bytes, at: start, length: end - start)
                    #expect(holds == reference(bytes, start, end - start), "blob at \(start), round \(round)")
                    if holds { held += 1 } else { failed += 1 }
                }
            }
            #expect(held > 0 && failed > 0, "both outcomes were tried")
        }
    }

    @Test("a home with no keyring file at all is a new, empty home: no keys, no error")
    func newHome() throws {
        try withGnuPGHome { home throws in
            let result = try GnuPG(home: home.path).lookup(["alice@example.org"])
            #expect(result.first?.candidates.isEmpty == true)
        }
    }
}
