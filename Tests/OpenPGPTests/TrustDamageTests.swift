import Foundation
@testable import OpenPGP
import TestSupport
import Testing

/// The files besides the keyring that gpg reads for a key listing: the trust
/// database and `gpg.conf`. With `trustdb.gpg` garbled, cut or a folder, gpg
/// 2.2 stops after part of the listing (`Fatal: … invalid trustdb`, exit 2,
/// or `FAILURE gpg-exit` when it meets the damage half way), and GPGME ends
/// the listing in a plain EOF: Bob's key was simply not there. Each kind of
/// damage must throw KeyringError, never give a shorter answer.
@Suite("A damaged trust database or gpg.conf is never read as missing keys", .serialized)
struct TrustDamageTests {
    let addresses = ["alice@example.org", "bob@example.org", "carol@example.org", "nobody@example.org"]

    func answer(_ gnupg: GnuPG) throws -> [String: [String]] {
        Dictionary(uniqueKeysWithValues: try gnupg.lookup(addresses).map { ($0.address, $0.candidates.map(\.key.fingerprint).sorted()) })
    }

    /// Every way of damaging a trust database of `good`'s bytes that this suite tries, by name.
    static func damages(_ good: [UInt8], _ random: inout some RandomNumberGenerator) -> [(String, [UInt8]?)] {
        let records = good.count / 40
        var flipped = good
        let record = Int.random(in: 1..<records, using: &random)
        flipped[record * 40] = [2, 3, 99, 200].randomElement(using: &random)!
        var version = good
        version[Int.random(in: 0..<5, using: &random)] ^= 0x40
        return [
            ("garbled", (0..<good.count).map { _ in UInt8.random(in: 0...255, using: &random) }),
            ("a folder", nil),
            ("emptied", []),
            ("cut inside a record", Array(good.prefix(Int.random(in: 1..<(good.count / 40), using: &random) * 40 + Int.random(in: 1..<40, using: &random)))),
            ("cut after the hash table's first record", Array(good.prefix(80))),
            ("a record's type changed", flipped),
            ("the version record damaged", version),
            ("zeroed", [UInt8](repeating: 0, count: good.count)),
        ]
    }

    static func apply(_ damage: [UInt8]?, at path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        if let damage { try Data(damage).write(to: URL(fileURLWithPath: path)) } else {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        }
    }

    @Test("trustdb.gpg garbled, a folder, emptied, cut, a record's type changed, zeroed: KeyringError naming it; restored, the same answer")
    func damagedTrustDatabase() throws {
        try withGnuPGHome(importing: ["alice.pub.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let expected = try answer(gnupg)
            #expect(expected["bob@example.org"]?.count == 1)
            let path = home.path + "/trustdb.gpg"
            let good = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(good.count >= 80 && good.count % 40 == 0)
            var random = SystemRandomNumberGenerator()
            for (what, damage) in Self.damages(good, &random) {
                try Self.apply(damage, at: path)
                let error = try #require(throws: KeyringError.self, "\(what)") { try answer(gnupg) }
                #expect(error.description.contains("trustdb.gpg") || error.description.contains("did not end cleanly"), "\(what): \(error)")
                try Self.apply(good, at: path)
                #expect(try answer(gnupg) == expected, "\(what), restored")
            }
        }
    }

    @Test("gpg meeting damage half way (a status line FAILURE or ERROR) is KeyringError; a plain missing key is not")
    func statusLines() {
        let clean = ListingStatus()
        clean.record("KEY_CONSIDERED", "DDFCBE7B3A45253A89086F88A4AD77B74E927418 0")
        clean.record("ERROR", "keylist.getkey 9")
        clean.record("ERROR", "keylist.getkey 33554441")  // GPG_ERR_SOURCE_GPG << 24 | 9
        #expect(clean.failure == nil)
        for (keyword, arguments) in [("FAILURE", "gpg-exit 33554433"), ("ERROR", "keylist.getkey 58"), ("ERROR", "keydb_search 1")] {
            let status = ListingStatus()
            status.record(keyword, arguments)
            #expect(status.failure?.hasPrefix(keyword) == true, "\(keyword) \(arguments)")
        }
    }

    @Test("gpg.conf a folder (gpg loops on it for ever) or unreadable: KeyringError at once, before gpg starts")
    func damagedConfiguration() throws {
        try withGnuPGHome(importing: ["bob.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let path = home.path + "/gpg.conf"
            let original = FileManager.default.contents(atPath: path)
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            let error = try #require(throws: KeyringError.self) { try gnupg.lookup(["bob@example.org"]) }
            #expect(error.description.contains("gpg.conf"), "\(error)")
            try FileManager.default.removeItem(atPath: path)
            #expect(symlink(home.path + "/no-such-file", path) == 0)
            #expect(throws: KeyringError.self) { try gnupg.lookup(["bob@example.org"]) }
            unlink(path)
            try (original ?? Data("# a comment\n".utf8)).write(to: URL(fileURLWithPath: path))
            #expect(try gnupg.lookup(["bob@example.org"]).first?.chosen != nil)
        }
    }

    @Test("keyboxd's public-keys.d: a file in the folder's place, or a pubring.db that is not SQLite, is KeyringError")
    func damagedKeyboxd() throws {
        try withGnuPGHome(importing: ["bob.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let folder = home.path + "/public-keys.d"
            try "x".write(toFile: folder, atomically: true, encoding: .utf8)
            #expect(throws: KeyringError.self) { try gnupg.lookup(["bob@example.org"]) }
            unlink(folder)
            mkdir(folder, 0o700)
            try Data(repeating: 0, count: 4096).write(to: URL(fileURLWithPath: folder + "/pubring.db"))
            #expect(throws: KeyringError.self) { try gnupg.lookup(["bob@example.org"]) }
        }
    }
}
