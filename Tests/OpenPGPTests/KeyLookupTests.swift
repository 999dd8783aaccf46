import Foundation
import OpenPGP
import TestSupport
import Testing

/// Every public fixture key, imported into one home for the look-up tests.
let allPublicFixtures = [
    "alice.pub.asc", "bob.pub.asc", "malice.pub.asc", "alice-evil.pub.asc", "expired.pub.asc",
    "signonly.pub.asc", "revoked.pub.asc", "carol-expired.pub.asc", "carol.pub.asc",
    "dave-older.pub.asc", "dave-newer.pub.asc",
]

/// Imports the invalid-key fixture, which GnuPG takes only with this option.
func importInvalidKey(_ home: TemporaryGnuPGHome) throws {
    try home.importFixtures(["invalid.pub.gpg"], extra: ["--allow-non-selfsigned-uid"])
}

func problem(_ lookup: KeyLookup) -> KeyProblem? { lookup.problems.first }

@Suite("Key look-up against real gpg", .serialized)
struct KeyLookupTests {
    @Test("each address gets the verdict GnuPG's key state calls for")
    func verdicts() throws {
        try withGnuPGHome(importing: allPublicFixtures) { home throws in
            try importInvalidKey(home)
            let gnupg = GnuPG(home: home.path)
            let results = try gnupg.lookup([
                "alice@example.org", "expired@example.org", "revoked@example.org",
                "signonly@example.org", "invalid@example.org", "nobody@example.org",
            ])
            let byAddress = Dictionary(uniqueKeysWithValues: results.map { ($0.address, $0) })
            #expect(results.map(\.address) == ["alice@example.org", "expired@example.org", "revoked@example.org",
                                               "signonly@example.org", "invalid@example.org", "nobody@example.org"])
            #expect(byAddress["alice@example.org"]?.chosen != nil)
            #expect(byAddress["alice@example.org"]?.chosen?.subkeys.map(\.algorithm) == ["ed25519", "cv25519"])
            #expect(problem(byAddress["expired@example.org"]!) == .expired)
            #expect(problem(byAddress["revoked@example.org"]!) == .revoked)
            #expect(problem(byAddress["signonly@example.org"]!) == .noEncryptionSubkey)
            #expect(problem(byAddress["invalid@example.org"]!) == .invalid)
            let nobody = try #require(byAddress["nobody@example.org"])
            #expect(nobody.chosen == nil && nobody.candidates.isEmpty && nobody.problems.isEmpty)
            for address in ["expired@example.org", "revoked@example.org", "signonly@example.org", "invalid@example.org"] {
                #expect(byAddress[address]?.chosen == nil, "\(address) must have no usable key")
            }
        }
    }

    @Test("a disabled key is not usable")
    func disabled() throws {
        try withGnuPGHome(importing: ["bob.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            #expect(try gnupg.lookup(["bob@example.org"])[0].chosen != nil)
            let edit = try home.gpg(["--command-fd", "0", "--edit-key", "bob@example.org", "disable", "save"])
            #expect(edit.status == 0, "\(edit.errors)")
            let after = try gnupg.lookup(["bob@example.org"])[0]
            #expect(after.chosen == nil)
            #expect(problem(after) == .disabled)
        }
    }

    @Test("validity below the required minimum is refused; ultimate trust passes")
    func validityThreshold() throws {
        try withGnuPGHome(importing: ["alice.pub.asc", "bob.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let alice = try #require(try gnupg.lookup(["alice@example.org"])[0].chosen)
            let trust = try home.gpg(["--import-ownertrust"], input: Array("\(alice.fingerprint):6:\n".utf8))
            #expect(trust.status == 0, "\(trust.errors)")
            let results = try gnupg.lookup(["alice@example.org", "bob@example.org"],
                                           requirements: KeyRequirements(minimumValidity: .full))
            #expect(results[0].chosen == alice)
            #expect(results[1].chosen == nil)
            #expect(problem(results[1]) == .validityTooLow(actual: .unknown, required: .full))
            // Without a requirement the same key is usable.
            #expect(try gnupg.lookup(["bob@example.org"])[0].chosen != nil)
        }
    }

    @Test("look-alike addresses never match; case does not matter")
    func exactAddressMatch() throws {
        try withGnuPGHome(importing: ["alice.pub.asc", "malice.pub.asc", "alice-evil.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let results = try gnupg.lookup(["alice@example.org", "ALICE@Example.ORG", "malice@example.org",
                                            "alice@example.org.evil", "lice@example.org", "example.org@alice"])
            // The second spelling is the same address, so it is asked for once.
            #expect(results.map(\.address) == ["alice@example.org", "malice@example.org",
                                               "alice@example.org.evil", "lice@example.org", "example.org@alice"])
            let alice = try #require(results[0].chosen)
            #expect(results[0].candidates.count == 1)
            #expect(alice.userIDs.map(\.address) == ["alice@example.org"])
            let upper = try gnupg.lookup(["ALICE@EXAMPLE.ORG"])[0]
            #expect(upper.chosen == alice)
            #expect(results[1].candidates.map(\.key.userIDs.first?.address) == ["malice@example.org"])
            #expect(results[2].candidates.map(\.key.userIDs.first?.address) == ["alice@example.org.evil"])
            #expect(results[3].candidates.isEmpty && results[4].candidates.isEmpty)
            #expect(Set([results[0].chosen, results[1].chosen, results[2].chosen]).count == 3)
        }
    }

    @Test("of two keys for one address the expired one is refused and the other chosen")
    func twoKeysOneExpired() throws {
        try withGnuPGHome(importing: ["carol-expired.pub.asc", "carol.pub.asc"]) { home throws in
            let carol = try GnuPG(home: home.path).lookup(["carol@example.org"])[0]
            #expect(carol.candidates.count == 2)
            #expect(carol.candidates.filter { $0.verdict == .unusable(.expired) }.count == 1)
            let chosen = try #require(carol.chosen)
            #expect(!chosen.isExpired)
        }
    }

    @Test("of two usable keys the newest is chosen")
    func newestUsable() throws {
        try withGnuPGHome(importing: ["dave-older.pub.asc", "dave-newer.pub.asc"]) { home throws in
            let dave = try GnuPG(home: home.path).lookup(["dave@example.org"])[0]
            #expect(dave.candidates.count == 2)
            #expect(dave.candidates.allSatisfy { $0.verdict == .usable })
            let newest = dave.candidates.map(\.key).max { $0.created! < $1.created! }
            #expect(dave.chosen == newest)
            #expect(dave.chosen?.subkeys.first?.algorithm == "ed25519")
        }
    }

    @Test("many addresses are looked up with one gpg listing process")
    func oneListingOperation() throws {
        try withGnuPGHome(importing: allPublicFixtures) { home throws in
            let log = home.path + "/calls.log"
            let wrapper = home.path + "/gpg-wrapper"
            let gpgPath = try #require(try run("sh", ["-c", "command -v gpg"]).output
                .trimmingCharacters(in: .whitespacesAndNewlines).nilIfEmpty)
            try "#!/bin/sh\necho \"$*\" >> '\(log)'\nexec '\(gpgPath)' \"$@\"\n"
                .write(toFile: wrapper, atomically: true, encoding: .utf8)
            chmod(wrapper, 0o700)
            let gnupg = GnuPG(home: home.path, executable: wrapper)
            let addresses = ["alice@example.org", "bob@example.org", "carol@example.org", "dave@example.org",
                             "expired@example.org", "revoked@example.org", "nobody@example.org"]
            let results = try gnupg.lookup(addresses)
            #expect(results.count == addresses.count)
            let calls = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            let listings = calls.filter { $0.contains("--list-keys") || $0.contains("--check-sigs") || $0.contains("--list-secret-keys") }
            #expect(listings.count == 1, "gpg calls: \(calls)")
            // Patterns name the addresses, never the whole keyring.
            #expect(listings.first.map { $0.contains("<alice@example.org>") } == true)
        }
    }

    @Test("a string that is not a plain address is refused before gpg runs")
    func invalidAddress() throws {
        try withGnuPGHome { home throws in
            let gnupg = GnuPG(home: home.path)
            for bad in ["alice", "@example.org", "alice@", "a b@example.org", "<alice@example.org>", "a@b@c", ""] {
                #expect(throws: InvalidAddressError.self) { try gnupg.lookup([bad]) }
            }
            #expect(try gnupg.lookup([]).isEmpty)
        }
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
