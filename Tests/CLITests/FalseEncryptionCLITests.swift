import Foundation
import TestSupport
import Testing

/// A mail labelled encrypted whose content is not ciphertext (issue 21, rule
/// 5): a literal or compressed OpenPGP message, or anything else, dressed as
/// `multipart/encrypted`, `application/pgp-encrypted` or S/MIME
/// enveloped-data. Sent on unchanged it would pass as encrypted mail while any
/// reader opens it as plain content — a marked span inside it included, which
/// mailsec does not read (the adversarial harness's `openpgp-plain` class
/// found one going out that way). `redact`, `encrypt` and the filter refuse
/// it with 65 and one line; real ciphertext in the same dress goes out.
@Suite("A mail labelled encrypted that is not: refused by every path", .serialized)
struct FalseEncryptionCLITests {
    /// An OpenPGP packet with a new-format header (RFC 9580 §4.2).
    static func packet(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
        var header: [UInt8] = [0xC0 | tag]
        if body.count < 192 {
            header.append(UInt8(body.count))
        } else {
            header += [0xFF] + withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init)
        }
        return header + body
    }

    /// Content that is no ciphertext: a literal packet, one inside a
    /// compressed packet (algorithm 0, stored), text, or random bytes.
    static func payload(_ text: String, _ random: inout SeededRandom) -> [UInt8] {
        let literal = packet(11, [UInt8(ascii: "b"), 0, 0, 0, 0, 0] + Array(text.utf8))
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return literal
        case 1: return packet(8, [0] + literal)
        case 2: return Array(text.utf8)
        default: return (0..<Int.random(in: 1...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
    }

    static func armored(_ bytes: [UInt8]) -> String {
        "-----BEGIN PGP MESSAGE-----\n\n"
            + Data(bytes).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            + "\n-----END PGP MESSAGE-----\n"
    }

    /// `content` in one of the three dresses of encrypted mail.
    static func dressed(_ content: [UInt8], _ random: inout SeededRandom, armor: Bool) -> String {
        let head = "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nCc: Dora <dora@example.net>\nSubject: notes\n"
            + "Date: Wed, 25 Nov 2026 10:00:00 +0000\nMessage-ID: <false-encryption.\(UUID())@example.org>\nMIME-Version: 1.0\n"
        let kind = armor ? Int.random(in: 0..<2, using: &random) : Int.random(in: 0..<3, using: &random)
        switch kind {
        case 0:
            return head + "Content-Type: multipart/encrypted; protocol=\"application/pgp-encrypted\"; boundary=enc\n\n"
                + "--enc\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n\n"
                + "--enc\nContent-Type: application/octet-stream; name=encrypted.asc\n\n" + armored(content) + "--enc--\n"
        case 1:
            return head + "Content-Type: application/pgp-encrypted\n\n" + armored(content)
        default:
            return head + "Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m\n"
                + "Content-Transfer-Encoding: base64\n\n"
                + Data(content).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n"
        }
    }

    @Test("generated false ciphertext (literal, compressed, text, random; three dresses), with and without a marked span: 65, one line, nothing sent; real ciphertext goes out")
    func refused() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_25)
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            // A sendmail that fails: a mail the filter does not refuse would come back 75, not 65.
            let config = home.path + "/filter.toml"
            try """
                gnupg_home = "\(home.path)"
                log = "none"
                [reinject]
                method = "sendmail"
                sendmail = ["/bin/false"]
                [journal]
                directory = "\(home.path)/journal"
                """.write(toFile: config, atomically: true, encoding: .utf8)
            let filter = ["filter", "--config", config, "-f", "alice@example.org", "--", "bob@example.org", "dora@example.net"]
            for index in 0..<12 {
                let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
                let text = Bool.random(using: &random) ? "hello [[private]]\(secret)[[/private]] there\n" : "hello \(secret)\n"
                let mail = Array(Self.dressed(Self.payload(text, &random), &random, armor: false).utf8)
                let what = "mail \(index):\n\(String(decoding: mail, as: UTF8.self))"
                for arguments in [["redact", "-"], ["encrypt", "--out", home.path + "/out-\(index)", "-"], filter] {
                    let result = try mailsec(arguments, input: mail, home: home)
                    #expect(result.status == 65, "\(arguments[0]): \(result.status) \(result.errors)\n\(what)")
                    #expect(!result.output.contains(secret) && !result.errors.contains(secret), "\(arguments[0])")
                    expectOneLine(result)
                }
                #expect(!FileManager.default.fileExists(atPath: home.path + "/out-\(index)/manifest.json"))
            }
            // The control: real ciphertext in the OpenPGP dresses passes through redact unchanged.
            let ciphertext = try home.gpg(["--trust-model", "always", "-r", "bob@example.org", "--encrypt"],
                                          input: Array("hello [[private]]zqcontrol[[/private]]\n".utf8))
            try #require(ciphertext.status == 0, "\(ciphertext.errors)")
            for _ in 0..<2 {
                let mail = Array(Self.dressed(ciphertext.stdout, &random, armor: true).utf8)
                let result = try mailsec(["redact", "-"], input: mail, home: home)
                #expect(result.status == 0, "real ciphertext: \(result.errors)")
            }
        }
    }
}
