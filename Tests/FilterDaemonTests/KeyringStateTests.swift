import Foundation
import OpenPGP
import Pipeline
import TestSupport
import Testing

@Suite("What the key cache watches", .serialized)
struct KeyringStateTests {
    @Test("every way a keyring changes changes the state: import, delete, trust, gpg.conf, a file put back with its old time")
    func changes() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            var states = [KeyringState(home: home.path)]
            func changed(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
                let now = KeyringState(home: home.path)
                #expect(!states.contains(now), "\(what) went unseen", sourceLocation: sourceLocation)
                states.append(now)
            }
            #expect(KeyringState(home: home.path) == states[0], "nothing changed: the same state")
            try home.importFixtures(["bob.pub.asc"])
            changed("an import")
            let bob = try #require(home.gpg(["--with-colons", "--list-keys", "bob@example.org"]).output
                .split(separator: "\n").first { $0.hasPrefix("fpr:") }?.split(separator: ":").last.map(String.init))
            try home.gpg(["--import-ownertrust"], input: Array("\(bob):6:\n".utf8))
            changed("an ownertrust")
            try home.gpg(["--delete-key", bob])
            changed("a deletion")
            let conf = home.path + "/gpg.conf"
            try (String(contentsOfFile: conf, encoding: .utf8) + "trust-model always\n").write(toFile: conf, atomically: false, encoding: .utf8)
            changed("gpg.conf")
            // The keyring restored from a copy with its old modification time (rsync -t, cp -p).
            let ring = home.path + "/pubring.kbx"
            let attributes = try FileManager.default.attributesOfItem(atPath: ring)
            let saved = try Data(contentsOf: URL(fileURLWithPath: ring))
            try home.importFixtures(["carol.pub.asc"])
            changed("another import")
            try saved.write(to: URL(fileURLWithPath: ring))
            try FileManager.default.setAttributes([.modificationDate: attributes[.modificationDate]!], ofItemAtPath: ring)
            changed("a restored file (its status-change time moves)")
        }
    }

    /// A hostile review: with `keyring extra.kbx` in gpg.conf, a key copied into that
    /// keyring went unseen by the resident filter (postcards where a letter was due).
    @Test("a keyring gpg.conf names, and the trust database it names, count too")
    func keyringsNamedInGpgConf() throws {
        // A keybox holding Bob's key, made in a home of its own.
        let bobsRing = try withGnuPGHome(importing: ["bob.pub.asc"]) { source in
            try Data(contentsOf: URL(fileURLWithPath: source.path + "/pubring.kbx"))
        }
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let conf = home.path + "/gpg.conf"
            let before = (try? String(contentsOfFile: conf, encoding: .utf8)) ?? ""
            try (before + "keyring extra.kbx\nkeyring \"\(home.path)/second.kbx\"\ntrustdb-name other-trust.gpg\n")
                .write(toFile: conf, atomically: false, encoding: .utf8)
            var state = KeyringState(home: home.path)
            for ring in ["extra.kbx", "second.kbx"] {
                try bobsRing.write(to: URL(fileURLWithPath: home.path + "/" + ring))
                if ring == "extra.kbx" {
                    // The oracle: gpg itself now finds Bob's key, through gpg.conf alone.
                    #expect(try home.gpg(["--list-keys", "bob@example.org"]).output.contains("bob@example.org"), "gpg does not read \(ring)")
                }
                let now = KeyringState(home: home.path)
                #expect(now != state, "a key copied into \(ring), which gpg.conf names, went unseen")
                state = now
            }
            try Data("x".utf8).write(to: URL(fileURLWithPath: home.path + "/other-trust.gpg"))
            #expect(KeyringState(home: home.path) != state, "the trust database gpg.conf names went unseen")
        }
    }

    /// `keyring gnupg-ring:FILE` (and `gnupg-kbx:`) names the format before the file: the
    /// state looked at a file called `gnupg-ring:legacy.gpg`, which never exists, so a key
    /// put into that keyring went unseen by the key cache.
    @Test("a keyring gpg.conf names with its format (gnupg-ring:, gnupg-kbx:) counts too")
    func keyringsNamedWithTheirFormat() throws {
        let (bobsKeys, bobsBox) = try withGnuPGHome(importing: ["bob.pub.asc"]) { source in
            (try source.gpg(["--export", "bob@example.org"]).stdout,
             try Data(contentsOf: URL(fileURLWithPath: source.path + "/pubring.kbx")))
        }
        try #require(!bobsKeys.isEmpty, "gpg --export gave nothing")
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let conf = home.path + "/gpg.conf"
            let before = (try? String(contentsOfFile: conf, encoding: .utf8)) ?? ""
            try (before + "keyring gnupg-ring:legacy.gpg\nkeyring gnupg-kbx:\(home.path)/boxed.kbx\n")
                .write(toFile: conf, atomically: false, encoding: .utf8)
            for (ring, bytes) in [("legacy.gpg", Data(bobsKeys)), ("boxed.kbx", bobsBox)] {
                let state = KeyringState(home: home.path)
                try bytes.write(to: URL(fileURLWithPath: home.path + "/" + ring))
                // The oracle: gpg itself finds Bob's key in that keyring, through gpg.conf alone.
                #expect(try home.gpg(["--list-keys", "bob@example.org"]).output.contains("bob@example.org"), "gpg does not read \(ring)")
                #expect(KeyringState(home: home.path) != state, "a key put into \(ring), which gpg.conf names with its format, went unseen")
                try FileManager.default.removeItem(atPath: home.path + "/" + ring)
            }
        }
    }

    @Test("the cache answers a repeated look-up without gpg, and lists again after the keyring changed")
    func cache() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let cache = KeyCache()
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
            let wanted = KeyBook.Wanted(addresses: ["bob@example.org", "alice@example.org"])
            #expect(try cache.book(for: wanted, pipeline: pipeline).availability("bob@example.org") == .missing)
            #expect(try cache.book(for: wanted, pipeline: pipeline).availability("bob@example.org") == .missing)
            #expect(cache.statistics.listings == 1 && cache.statistics.hits == 1)
            try home.importFixtures(["bob.pub.asc"])
            let book = try cache.book(for: wanted, pipeline: pipeline)
            #expect(book.lookup("bob@example.org")?.chosen != nil, "imported: found at once")
            #expect(cache.statistics.listings == 2)
        }
    }

    @Test("a kept Autocrypt export follows the key as gpg judges it now: an encryption subkey past its expiry is not carried on")
    func exportAfterSubkeyExpiry() throws {
        try withGnuPGHome { home throws in
            let base = ["--passphrase", "", "--pinentry-mode", "loopback"]
            let now = Int(Date().timeIntervalSince1970)
            let made = try home.gpg(base + ["--faked-system-time", "\(now - 7200)", "--status-fd", "1",
                                            "--quick-gen-key", "Dora <dora@example.org>", "ed25519", "cert,sign", "never"])
            let fingerprint = try #require(made.output.split(separator: "\n").first { $0.contains("KEY_CREATED") }?
                .split(separator: " ").last.map(String.init), "\(made.errors)")
            let older = try home.gpg(base + ["--faked-system-time", "\(now - 3600)", "--quick-add-key", fingerprint, "cv25519", "encr", "never"])
            try #require(older.status == 0, "\(older.errors)")
            // The newest encryption subkey, which Autocrypt carries, expires a few seconds from now.
            let lifetime = Int.random(in: 4...6)
            let newer = try home.gpg(base + ["--quick-add-key", fingerprint, "cv25519", "encr", "seconds=\(lifetime)"])
            try #require(newer.status == 0, "\(newer.errors)")
            let expires = Date().addingTimeInterval(TimeInterval(lifetime))
            let gnupg = GnuPG(home: home.path), address = "dora@example.org"
            func wanted() throws -> [(key: Key, address: String)] {
                [(try #require(gnupg.lookup([], fingerprints: [fingerprint]).keys.first), address)]
            }
            let cache = KeyCache()
            let before = try cache.autocryptKeydata(wanted(), gnupg: gnupg)
            #expect(try before == gnupg.autocryptKeydata(wanted()), "kept: the same bytes as a fresh export")
            #expect(try cache.autocryptKeydata(wanted(), gnupg: gnupg) == before)
            let state = KeyringState(home: home.path)
            while Date() < expires.addingTimeInterval(1.5) { usleep(100_000) }
            let fresh = try gnupg.autocryptKeydata(wanted())
            #expect(fresh != before, "a fresh export now carries the older subkey")
            #expect(try cache.autocryptKeydata(wanted(), gnupg: gnupg) == fresh)
            #expect(KeyringState(home: home.path) == state, "time alone changed the export, not the keyring")
        }
    }
}
