import Foundation
import Incoming
import MIME
import OpenPGP
import TestSupport
import Testing

/// The header-protection test vectors and the Autocrypt examples from
/// ../shared/corpora/public, with their own keys.
@Suite("Protected headers and Autocrypt from the public corpus", .serialized)
struct CorpusReadingTests {
    func corpus(_ path: String) throws -> URL {
        try #require(Paths.publicCorpus).appendingPathComponent(path)
    }

    @Test("protected-headers vectors: signed mails verify; encrypted ones decrypt, verify and restore the Subject",
          .enabled(if: Paths.publicCorpus != nil, "../shared/corpora/public is absent: protected headers NOT tested"))
    func protectedHeaders() throws {
        let folder = try corpus("protected-headers")
        try withGnuPGHome { home throws in
            for key in ["alice@openpgp.example.pub.asc", "bob@openpgp.example.sec.asc"] {
                _ = try GnuPG(home: home.path).importKeys(Array(try Data(contentsOf: folder.appendingPathComponent(key))))
            }
            let gnupg = GnuPG(home: home.path)
            let signed = try MailVerifier(gnupg: gnupg).verify(Array(try Data(contentsOf: folder.appendingPathComponent("pgpmime-signed.eml"))))
            #expect(signed.verified && signed.from == "alice@openpgp.example", "\(signed.reason ?? "")")
            for name in ["pgpmime-sign+enc.eml", "pgpmime-sign+enc+legacy-disp.eml", "pgpmime-layered.eml",
                         "pgpmime-layered+legacy-disp.eml", "unfortunately-complex.eml", "pgpmime-enc+legacy-disp.eml"] {
                let raw = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
                let outer = try MIMEMessage.parse(raw)
                #expect(outer.subject == "...", "\(name) hides its Subject outside")
                let (message, report) = try MailDecryptor(gnupg: gnupg).decrypt(raw)
                #expect(report.decrypted && report.protectedHeaders, "\(name)")
                #expect(message.subject == "BarCorp contract signed, let's go!", "\(name)")
                if name != "pgpmime-enc+legacy-disp.eml" {
                    #expect(report.signature?.verified == true, "\(name): \(report.signature?.reason ?? "no signature")")
                }
            }
        }
    }

    @Test("Autocrypt examples: the sender's key is imported; gossip inside the encryption for the recipients",
          .enabled(if: Paths.publicCorpus != nil, "../shared/corpora/public is absent: Autocrypt examples NOT tested"))
    func autocrypt() throws {
        let folder = try corpus("autocrypt/doc/appendix")
        try withGnuPGHome { home throws in
            let gnupg = GnuPG(home: home.path)
            let simple = try AutocryptImporter(gnupg: gnupg).importKeys(
                from: Array(try Data(contentsOf: folder.appendingPathComponent("example-simple-autocrypt.eml"))))
            #expect(simple.count == 1 && simple[0].addr == "alice@autocrypt.example" && simple[0].imported != nil)
            // The example keys have expired by now: imported, listed, not usable.
            #expect(try gnupg.lookup(["alice@autocrypt.example"]).first?.candidates.isEmpty == false)

            // Gossip: Bob reads the encrypted mail and learns Carol's key.
            _ = try gnupg.importKeys(Array(try Data(contentsOf: folder.appendingPathComponent("bob@autocrypt.example.sec.asc"))))
            let gossip = try AutocryptImporter(gnupg: gnupg).importKeys(
                from: Array(try Data(contentsOf: folder.appendingPathComponent("example-gossip.eml"))))
            let carol = gossip.first { $0.header == "Autocrypt-Gossip" && $0.addr == "carol@autocrypt.example" }
            #expect(carol?.imported != nil, "\(gossip)")
            #expect(try gnupg.lookup(["carol@autocrypt.example"]).first?.candidates.isEmpty == false)
        }
    }
}

@Suite("Autocrypt headers that must not import", .serialized)
struct AutocryptRefusalTests {
    func header(_ addr: String, key: String, extra: String = "") throws -> String {
        let keydata = try String(contentsOf: Paths.key(key), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("-----") && !$0.contains(":") && !$0.hasPrefix("=") && !$0.isEmpty }
            .joined()
        return "Autocrypt: addr=\(addr);\(extra) keydata=\(keydata)\n"
    }

    @Test("addr must be From; the key must carry that address; unknown critical attributes and doubles are ignored")
    func refusals() throws {
        try withGnuPGHome { home throws in
            let importer = AutocryptImporter(gnupg: GnuPG(home: home.path))
            func run(_ headers: String, from: String = "Alice <alice@example.org>") throws -> [AutocryptImportResult] {
                try importer.importKeys(from: Array("From: \(from)\nTo: bob@example.org\nSubject: s\n\(headers)\nhello\n".utf8))
            }
            let notFrom = try run(try header("bob@example.org", key: "bob.pub.asc"))
            #expect(notFrom.first?.imported == nil && notFrom.first?.reason?.contains("is not the From address") == true)
            let wrongKey = try run(try header("alice@example.org", key: "bob.pub.asc"))
            #expect(wrongKey.first?.imported == nil && wrongKey.first?.reason?.contains("user ID") == true, "\(wrongKey)")
            let critical = try run(try header("alice@example.org", key: "alice.pub.asc", extra: " future=1;"))
            #expect(critical.first?.reason?.contains("unknown critical attribute") == true)
            let twice = try run(try header("alice@example.org", key: "alice.pub.asc") + (try header("alice@example.org", key: "alice.pub.asc")))
            #expect(twice.allSatisfy { $0.imported == nil })
            #expect(try GnuPG(home: home.path).lookup(["alice@example.org", "bob@example.org"]).allSatisfy { $0.candidates.isEmpty },
                    "nothing was imported")
            let fine = try run(try header("alice@example.org", key: "alice.pub.asc", extra: " _ignored=yes;"))
            #expect(fine.first?.imported != nil, "\(fine)")
        }
    }
}
