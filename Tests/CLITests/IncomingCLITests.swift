import Foundation
import TestSupport
import Testing

/// Runs `body` in a home with Alice's secret key, with `text` clear-signed by her.
func withAliceClearsigned(_ text: String, _ body: (TemporaryGnuPGHome, String) throws -> Void) throws {
    try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
        let clear = try home.gpg(["--clearsign", "--local-user", "alice@example.org"], input: Array(text.utf8))
        try body(home, clear.output)
    }
}

@Suite("mailsec verify, decrypt and autocrypt import", .serialized)
struct IncomingCLITests {
    @Test("verify: 0 only for a whole, good signature by From; 1 with the reason otherwise; --json")
    func verify() throws {
        try withAliceClearsigned("Pay Bob 10 EUR.\n") { home, clear throws in
            let good = Array("From: Alice <alice@example.org>\nSubject: s\n\n\(clear)".utf8)
            let ok = try mailsec(["verify", "-"], input: good, home: home)
            #expect(ok.status == 0 && ok.output.contains("signature: good") && ok.output.contains("coverage: whole"), "\(ok.errors)")
            let spoof = Array("From: Bob <bob@example.org>\nSubject: s\n\n\(clear)".utf8)
            let refused = try mailsec(["verify", "--json", "-"], input: spoof, home: home)
            #expect(refused.status == 1)
            expectOneLine(refused)
            #expect(refused.errors.contains("not verified: the signer's key has no user ID with the From address bob@example.org"))
            let json = try JSONSerialization.jsonObject(with: Data(refused.stdout)) as? [String: Any]
            #expect(json?["verified"] as? Bool == false && json?["status"] as? String == "good" && json?["fromMatches"] as? Bool == false)
        }
    }

    @Test("decrypt: refusals exit 69 with one line and no plaintext; --json reports")
    func decryptRefusals() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.sec.asc"]) { home throws in
            let armored = try home.gpg(["--armor", "--trust-model", "always", "-r", "bob@example.org", "--encrypt"],
                                       input: Array("zqsecret\n".utf8)).output
            let quoted = Array("From: Alice <alice@example.org>\nSubject: s\n\nLook:\n\(armored)\n".utf8)
            let result = try mailsec(["decrypt", "-"], input: quoted, home: home)
            #expect(result.status == 69 && !result.output.contains("zqsecret"))
            expectOneLine(result)
            let nomdc = try home.gpg(["--armor", "--trust-model", "always", "--rfc2440", "--cipher-algo", "CAST5",
                                      "-r", "bob@example.org", "--encrypt"], input: Array("zqsecret\n".utf8)).output
            let legacy = try mailsec(["decrypt", "--json", "-"], input: Array("From: a@example.org\n\n\(nomdc)".utf8), home: home)
            #expect(legacy.status == 69 && legacy.output.contains("\"refused\" : \"no integrity protection"))
            #expect(!legacy.output.contains("zqsecret") && !legacy.errors.contains("zqsecret"))
        }
    }

    @Test("decrypt: a changed MDC and a missing MDC are 69 with the reason named, also with ignore-mdc-error in gpg.conf")
    func integrity() throws {
        for ignoring in [false, true] {
            try withGnuPGHome(importing: ["alice.sec.asc", "bob.sec.asc"]) { home throws in
                if ignoring { try "pinentry-mode loopback\nignore-mdc-error\n".write(toFile: home.path + "/gpg.conf", atomically: true, encoding: .utf8) }
                let good = try home.gpg(["--trust-model", "always", "-r", "bob@example.org", "--encrypt"], input: Array("zqsecret\n".utf8)).stdout
                var changed = good
                changed[changed.count - 1] ^= 0x5A
                let none = try home.gpg(["--trust-model", "always", "--rfc2440", "--cipher-algo", "AES256", "-r", "bob@example.org",
                                         "--encrypt"], input: Array("zqsecret\n".utf8)).stdout
                for (ciphertext, reason) in [(changed, "integrity check failed"), (none, "no integrity protection")] {
                    let armored = try home.gpg(["--enarmor"], input: ciphertext).output
                        .replacingOccurrences(of: "ARMORED FILE", with: "MESSAGE")
                    let letter = Array(("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: s\nMIME-Version: 1.0\n"
                        + "Content-Type: multipart/encrypted; boundary=\"b\"; protocol=\"application/pgp-encrypted\"\n\n--b\n"
                        + "Content-Type: application/pgp-encrypted\n\nVersion: 1\n\n--b\nContent-Type: application/octet-stream\n\n"
                        + armored + "\n--b--\n").utf8)
                    let out = home.path + "/out.eml"
                    let result = try mailsec(["decrypt", "-o", out, "-"], input: letter, home: home)
                    #expect(result.status == 69, "\(reason), ignore-mdc-error \(ignoring): \(result.errors)")
                    expectOneLine(result)
                    #expect(result.errors.hasPrefix("mailsec: \(reason)"), "\(result.errors)")
                    #expect(!result.output.contains("zqsecret") && !FileManager.default.fileExists(atPath: out))
                    let json = try mailsec(["decrypt", "--json", "-"], input: letter, home: home)
                    #expect(json.status == 69 && json.output.contains("\"refused\" : \"\(reason)"), "\(json.output)")
                }
            }
        }
    }

    @Test("verify: a display name not on the key is a warning line (exit 0), --strict makes it exit 1; Sender is shown")
    func displayName() throws {
        try withAliceClearsigned("Approved.\n") { home, clear throws in
            let manager = Array("From: The Manager <alice@example.org>\nSender: relay@example.net\nSubject: s\n\n\(clear)".utf8)
            let plain = try mailsec(["verify", "-"], input: manager, home: home)
            #expect(plain.status == 0 && plain.output.contains("sender: relay@example.net"), "\(plain.errors)")
            #expect(plain.errors.contains("warning: the From display name \"The Manager\" is not a name on the signer's key (Alice <alice@example.org>)"))
            let strict = try mailsec(["verify", "--strict", "--json", "-"], input: manager, home: home)
            #expect(strict.status == 1 && strict.errors.contains("mailsec: not verified (--strict)"), "\(strict.errors)")
            let json = try JSONSerialization.jsonObject(with: Data(strict.stdout)) as? [String: Any]
            #expect(json?["displayNameMatches"] as? Bool == false && json?["verified"] as? Bool == true)
            #expect(json?["sender"] as? String == "relay@example.net" && (json?["warnings"] as? [String])?.count == 2)
            let alice = Array("From: Alice <alice@example.org>\nSubject: s\n\n\(clear)".utf8)
            let clean = try mailsec(["verify", "--strict", "-"], input: alice, home: home)
            #expect(clean.status == 0 && clean.errors.isEmpty, "\(clean.errors)")
        }
    }

    @Test("S/MIME: 'S/MIME is not supported' from decrypt (69, with --json) and verify, never 'No data'")
    func smime() throws {
        try withGnuPGHome(importing: ["bob.sec.asc"]) { home throws in
            let enveloped = Array(("From: a@example.org\nSubject: s\nMIME-Version: 1.0\n"
                + "Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m\n"
                + "Content-Transfer-Encoding: base64\n\nMIAGCSqGSIb3DQEHA6CAMIACAQAxggE=\n").utf8)
            let decrypt = try mailsec(["decrypt", "--json", "-"], input: enveloped, home: home)
            #expect(decrypt.status == 69 && decrypt.errors == "mailsec: S/MIME is not supported\n", "\(decrypt.errors)")
            #expect(decrypt.output.contains("\"refused\" : \"S/MIME is not supported\""))
            let signed = Array(("From: a@example.org\nSubject: s\nMIME-Version: 1.0\n"
                + "Content-Type: multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256; boundary=\"s\"\n\n"
                + "--s\nContent-Type: text/plain\n\nHello\n--s\nContent-Type: application/pkcs7-signature\n"
                + "Content-Transfer-Encoding: base64\n\nMIAGCSqGSIb3DQEHAqCAMIACAQE=\n--s--\n").utf8)
            let verify = try mailsec(["verify", "-"], input: signed, home: home)
            #expect(verify.status == 1 && verify.errors.contains("S/MIME is not supported") && !verify.errors.contains("No data"))
        }
    }

    @Test("autocrypt import: Bob imports Carol's key from the gossip inside mailsec's letter to both, nothing else")
    func gossipRoundTrip() throws {
        let mail = Array(("From: Alice <alice@example.org>\nTo: bob@example.org\nCc: carol@example.org\nSubject: s\n"
            + "Message-ID: <gossip.cli@example.org>\nMIME-Version: 1.0\nContent-Type: text/plain\n\nHi both.\n").utf8)
        let letter = try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { sender throws -> [UInt8] in
            let written = try mailsec(["encrypt", "--out", sender.path + "/out", "-"], input: mail, home: sender)
            try #require(written.status == 0, "\(written.errors)")
            return Array(try Data(contentsOf: URL(fileURLWithPath: sender.path + "/out/1-letter.eml")))
        }
        try withGnuPGHome(importing: ["bob.sec.asc"]) { bob throws in
            let imported = try mailsec(["autocrypt", "import", "--json", "-"], input: letter, home: bob)
            #expect(imported.status == 0, "\(imported.errors)")
            let results = try JSONSerialization.jsonObject(with: Data(imported.stdout)) as? [[String: Any]] ?? []
            let byAddress = Dictionary(results.compactMap { result in (result["addr"] as? String).map { ($0, result) } }) { first, _ in first }
            #expect(byAddress["alice@example.org"]?["imported"] is String, "the Autocrypt header")
            #expect(byAddress["carol@example.org"]?["imported"] is String, "Carol's gossip: \(imported.output)")
            let listed = try bob.gpg(["--with-colons", "--list-keys"]).output
            #expect(listed.contains("carol@example.org") && listed.contains("alice@example.org"))
        }
    }

    @Test("autocrypt import: the From address's key is imported, exit 0; nothing imported, exit 1")
    func autocrypt() throws {
        let keydata = try String(contentsOf: Paths.key("alice.pub.asc"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("-----") && !$0.contains(":") && !$0.hasPrefix("=") && !$0.isEmpty }.joined()
        let offered = Array("From: Alice <alice@example.org>\nTo: bob@example.org\nAutocrypt: addr=alice@example.org; keydata=\(keydata)\n\nhi\n".utf8)
        try withGnuPGHome { home throws in
            let imported = try mailsec(["autocrypt", "import", "-"], input: offered, home: home)
            #expect(imported.status == 0 && imported.output.hasPrefix("imported Autocrypt alice@example.org "), "\(imported.errors)")
            let none = try mailsec(["autocrypt", "import", "-"], input: Array("From: a@example.org\n\nhi\n".utf8), home: home)
            #expect(none.status == 1)
            expectOneLine(none)
        }
    }
}
