import Foundation
import OpenPGP
import TestSupport
import Testing

/// A home holding Alice's secret key (the sender) and Bob's public key.
func withSenderHome<R>(_ body: (TemporaryGnuPGHome, GnuPG) throws -> R) throws -> R {
    try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
        try body(home, GnuPG(home: home.path))
    }
}

func chosenKey(_ gnupg: GnuPG, _ address: String) throws -> Key {
    try #require(try gnupg.lookup([address])[0].chosen)
}

func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

@Suite("Sign, encrypt, decrypt and verify against real gpg", .serialized)
struct CryptoTests {
    let plaintext = Array("Dear Bob,\r\nthe launch code is 0000.\r\n".utf8)

    @Test("a detached signature verifies with the gpg command line and in the library")
    func detachedSignature() throws {
        try withSenderHome { home, gnupg throws in
            let alice = try #require(try gnupg.signingKeys(for: "alice@example.org").first)
            let signature = try gnupg.signDetached(plaintext, signer: alice)
            #expect(String(decoding: signature.armored, as: UTF8.self).hasPrefix("-----BEGIN PGP SIGNATURE-----"))
            #expect(signature.micalg.hasPrefix("pgp-sha"))
            try writeFile(home.path + "/data", plaintext)
            try writeFile(home.path + "/data.asc", signature.armored)
            let cli = try home.gpg(["--status-fd", "1", "--verify", home.path + "/data.asc", home.path + "/data"])
            #expect(cli.status == 0)
            #expect(cli.output.contains("[GNUPG:] VALIDSIG \(alice.fingerprint)") || cli.output.contains("VALIDSIG"))
            #expect(cli.output.contains("GOODSIG"))

            let good = try gnupg.verifyDetached(signature: signature.armored, signedData: plaintext)
            #expect(good.map(\.status) == [.good])
            #expect(good.first?.fingerprint == alice.fingerprint)
            #expect(good.first?.hashAlgorithm.lowercased() == signature.micalg.dropFirst(4).lowercased())

            var tampered = plaintext
            tampered[5] ^= 0x20
            let bad = try gnupg.verifyDetached(signature: signature.armored, signedData: tampered)
            #expect(bad.map(\.status) == [.bad])
        }
    }

    @Test("encrypted and signed by the library, decrypted and verified by gpg")
    func libraryToCommandLine() throws {
        let ciphertext = try withSenderHome { _, gnupg throws in
            let alice = try #require(try gnupg.signingKeys(for: "alice@example.org").first)
            let bob = try chosenKey(gnupg, "bob@example.org")
            return try gnupg.encrypt(plaintext, to: [bob, alice], signer: alice)
        }
        #expect(String(decoding: ciphertext, as: UTF8.self).hasPrefix("-----BEGIN PGP MESSAGE-----"))
        try withGnuPGHome(importing: ["bob.sec.asc", "alice.pub.asc"]) { home throws in
            let cli = try home.gpg(["--status-fd", "2", "--decrypt"], input: ciphertext)
            #expect(cli.status == 0, "\(cli.errors)")
            #expect(cli.stdout == plaintext)
            #expect(cli.errors.contains("GOODSIG"))
            #expect(cli.errors.contains("DECRYPTION_OKAY"))
        }
    }

    @Test("encrypted and signed by gpg, decrypted and verified by the library")
    func commandLineToLibrary() throws {
        let (ciphertext, aliceFingerprint) = try withSenderHome { home, gnupg throws in
            try writeFile(home.path + "/plain", plaintext)
            let cli = try home.gpg(["--armor", "--trust-model", "always", "--local-user", "alice@example.org",
                                    "--recipient", "bob@example.org", "--sign", "--encrypt", "--output", "-",
                                    home.path + "/plain"])
            #expect(cli.status == 0, "\(cli.errors)")
            return (cli.stdout, try chosenKey(gnupg, "alice@example.org").fingerprint)
        }
        try withGnuPGHome(importing: ["bob.sec.asc", "alice.pub.asc"]) { home throws in
            let decrypted = try GnuPG(home: home.path).decrypt(ciphertext)
            #expect(decrypted.plaintext == plaintext)
            #expect(decrypted.info.signatures.map(\.status) == [.good])
            #expect(decrypted.info.signatures.first?.fingerprint == aliceFingerprint)
            #expect(decrypted.info.recipientKeyIDs.count == 1)
        }
    }

    @Test("hidden recipients leave no key id in the message")
    func hiddenRecipients() throws {
        try withSenderHome { home, gnupg throws in
            let bob = try chosenKey(gnupg, "bob@example.org")
            let shown = try gnupg.encrypt(plaintext, to: [bob])
            let hidden = try gnupg.encrypt(plaintext, to: [bob], hideRecipients: true)
            func packets(_ bytes: [UInt8]) throws -> String {
                try home.gpg(["--list-packets", "--list-only"], input: bytes).output
            }
            let bobKeyIDs = bob.subkeys.map { String($0.fingerprint.suffix(16)) }
            #expect(bobKeyIDs.contains { try! packets(shown).contains($0) })
            #expect(!bobKeyIDs.contains { try! packets(hidden).contains($0) })
            #expect(try packets(hidden).contains("keyid 0000000000000000"))
        }
    }

    @Test("large data streams through file descriptors")
    func streaming() throws {
        try withGnuPGHome(importing: ["bob.sec.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let bob = try chosenKey(gnupg, "bob@example.org")
            let random = try #require(FileHandle(forReadingAtPath: "/dev/urandom"))
            let big = Array(random.readData(ofLength: 8 << 20))
            try random.close()
            try writeFile(home.path + "/big", big)
            let input = open(home.path + "/big", O_RDONLY)
            let output = open(home.path + "/big.asc", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            try gnupg.encrypt(from: input, to: output, recipients: [bob])
            close(input); close(output)
            let cipherIn = open(home.path + "/big.asc", O_RDONLY)
            let plainOut = open(home.path + "/big.out", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            let info = try gnupg.decrypt(from: cipherIn, to: plainOut)
            close(cipherIn); close(plainOut)
            #expect(info.signatures.isEmpty)
            let back = try Data(contentsOf: URL(fileURLWithPath: home.path + "/big.out"))
            #expect(back == Data(big))
        }
    }

    @Test("import, export and minimal export")
    func importExport() throws {
        let exported: (full: [UInt8], minimal: [UInt8]) = try withGnuPGHome { home throws in
            let gnupg = GnuPG(home: home.path)
            let bytes = Array(try Data(contentsOf: Paths.key("alice.pub.asc")))
            let summary = try gnupg.importKeys(bytes)
            #expect(summary.considered == 1 && summary.imported == 1)
            let again = try gnupg.importKeys(bytes)
            #expect(again.unchanged == 1 && again.imported == 0)
            let alice = try chosenKey(gnupg, "alice@example.org")
            #expect(summary.fingerprints == [alice.fingerprint])
            let full = try gnupg.exportKeys([alice])
            let minimal = try gnupg.exportKeys([alice], armored: false, minimal: true)
            #expect(String(decoding: full, as: UTF8.self).hasPrefix("-----BEGIN PGP PUBLIC KEY BLOCK-----"))
            #expect(minimal.first.map { $0 & 0x80 != 0 } == true, "binary OpenPGP packets")
            return (full, minimal)
        }
        try withGnuPGHome { home throws in
            let gnupg = GnuPG(home: home.path)
            #expect(try gnupg.importKeys(exported.minimal).imported == 1)
            #expect(try gnupg.lookup(["alice@example.org"])[0].chosen != nil)
        }
    }

    @Test("a key that only gains something on import (its revocation) is taken, not refused; deleteKey removes a public key, refuses one with its secret")
    func importRevocationAndDelete() throws {
        let maker = try TemporaryGnuPGHome()
        defer { maker.close() }
        let fingerprint = try maker.makeKey("Rob <rob@example.org>")
        let before = try maker.export([fingerprint])
        try maker.revokeKey(of: "rob@example.org")
        let revoked = try maker.export([fingerprint])
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            #expect(try gnupg.importKeys(before).imported == 1)
            let merged = try gnupg.importKeys(revoked)
            #expect(merged.imported == 0 && merged.unchanged == 0 && merged.fingerprints == [fingerprint])
            #expect(try gnupg.lookup(["rob@example.org"])[0].candidates.first?.key.isRevoked == true)
            #expect(try gnupg.deleteKey(fingerprint))
            #expect(try gnupg.lookup(["rob@example.org"])[0].candidates.isEmpty)
            #expect(try !gnupg.deleteKey(fingerprint), "a key not there is no deletion")
            let alice = try chosenKey(gnupg, "alice@example.org")
            #expect(throws: GPGMEError.self) { _ = try gnupg.deleteKey(alice.fingerprint) }
            #expect(try gnupg.lookup(["alice@example.org"])[0].chosen != nil, "a key with its secret was deleted")
            #expect(throws: InvalidAddressError.self) { _ = try gnupg.deleteKey("ABCD") }
        }
    }

    @Test("errors carry the GPGME code and never the data")
    func errors() throws {
        try withSenderHome { _, gnupg throws in
            let secret = "the launch code is 0000"
            do {
                _ = try gnupg.decrypt(Array("not OpenPGP at all: \(secret)".utf8))
                Issue.record("decrypting garbage must throw")
            } catch GPGMEError.Code.noData {
            } catch {
                Issue.record("unexpected \(error)")
            }
            let bob = try chosenKey(gnupg, "bob@example.org")
            let ciphertext = try gnupg.encrypt(Array(secret.utf8), to: [bob])
            do {
                _ = try gnupg.decrypt(ciphertext)  // only Bob's public key is here
                Issue.record("decrypting without the secret key must throw")
            } catch let error as GPGMEError {
                #expect(error.code == .noSecretKey || error.code == .decryptFailed)
                #expect(!error.description.contains(secret))
                #expect(error.description.hasPrefix("decryption failed: "))
            }
            #expect(throws: GPGMEError.self) { try gnupg.encrypt(Array(secret.utf8), to: []) }
            #expect(throws: GPGMEError.self) { try gnupg.importKeys(Array("no key here".utf8)) }
            #expect(throws: GPGMEError.self) {
                try gnupg.verifyDetached(signature: Array("garbage".utf8), signedData: Array(secret.utf8))
            }
        }
    }
}
