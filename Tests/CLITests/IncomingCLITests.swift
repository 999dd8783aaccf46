import Foundation
import TestSupport
import Testing

@Suite("mailsec verify, decrypt and autocrypt import", .serialized)
struct IncomingCLITests {
    @Test("verify: 0 only for a whole, good signature by From; 1 with the reason otherwise; --json")
    func verify() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let clear = try home.gpg(["--clearsign", "--local-user", "alice@example.org"], input: Array("Pay Bob 10 EUR.\n".utf8))
            let good = Array("From: Alice <alice@example.org>\nSubject: s\n\n\(clear.output)".utf8)
            let ok = try mailsec(["verify", "-"], input: good, home: home)
            #expect(ok.status == 0 && ok.output.contains("signature: good") && ok.output.contains("coverage: whole"), "\(ok.errors)")
            let spoof = Array("From: Bob <bob@example.org>\nSubject: s\n\n\(clear.output)".utf8)
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
            #expect(legacy.status == 69 && legacy.output.contains("\"refused\" : \"the message is not integrity protected"))
            #expect(!legacy.output.contains("zqsecret") && !legacy.errors.contains("zqsecret"))
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
