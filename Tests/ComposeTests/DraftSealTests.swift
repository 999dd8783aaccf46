import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline
import TestSupport
import Testing

@Suite("Drafts sealed to the sender's key", .serialized)
struct DraftSealTests {
    /// Words that must not be readable in a sealed draft, with random parts
    /// so no fixed string can pass by luck.
    static func secretDraft() -> (ComposeDraft, [String]) {
        let tag = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        let subject = "Zanzibar budget \(tag)", body = "Quokka migration plans \(tag)", file = "quokka-\(tag).xlsx"
        let to = "zed\(tag)@example.net", bcc = "yara\(tag)@example.com"
        let draft = ComposeDraft(Composition(
            from: alice, to: [MailAddress(name: "Zed", address: to)], bcc: [MailAddress(address: bcc)], subject: subject,
            text: body, attachments: [.init(filename: file, contentType: "application/octet-stream", data: Array("cells".utf8))]))
        return (draft, [subject, body, file, to, bcc, tag])
    }

    @Test("a sealed draft opens as it was; none of its subject, recipients, words or file names is in the sealed bytes")
    func roundTrip() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let gnupg = GnuPG(home: home.path)
            let key = try DraftSeal.ownKey("alice@example.org", gnupg: gnupg)
            let (draft, secrets) = Self.secretDraft()
            let sealed = try DraftSeal.seal(draft, key: key, gnupg: gnupg)
            let text = String(decoding: sealed, as: UTF8.self)
            for secret in secrets { #expect(!text.localizedCaseInsensitiveContains(secret)) }
            #expect(try DraftSeal.open(sealed, key: key, gnupg: gnupg) == draft)
        }
    }

    @Test("without the secret key a draft does not open; a draft not signed by the sender is refused")
    func refusals() throws {
        let (draft, _) = Self.secretDraft()
        let sealed = try withGnuPGHome(importing: senderFixtures) { home throws in
            let gnupg = GnuPG(home: home.path)
            return try DraftSeal.seal(draft, key: try DraftSeal.ownKey("alice@example.org", gnupg: gnupg), gnupg: gnupg)
        }
        try withGnuPGHome(importing: ["alice.pub.asc", "bob.sec.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let alicePublic = try #require(try gnupg.lookup(["alice@example.org"]).first?.chosen)
            #expect(throws: (any Error).self) { try DraftSeal.open(sealed, key: alicePublic, gnupg: gnupg) }
            #expect(throws: DraftSeal.Failure.self) { try DraftSeal.ownKey("alice@example.org", gnupg: gnupg) }
            // Bob (anyone with Alice's public key) plants a draft: encrypted to her, signed by him.
            let bob = try DraftSeal.ownKey("bob@example.org", gnupg: gnupg)
            let planted = try gnupg.encrypt(Array(try JSONEncoder().encode(draft)), to: [alicePublic], signer: bob)
            try withGnuPGHome(importing: senderFixtures) { aliceHome throws in
                let aliceGPG = GnuPG(home: aliceHome.path)
                let key = try DraftSeal.ownKey("alice@example.org", gnupg: aliceGPG)
                #expect(throws: DraftSeal.Failure.self) { try DraftSeal.open(planted, key: key, gnupg: aliceGPG) }
                #expect(try DraftSeal.open(sealed, key: key, gnupg: aliceGPG) == draft)
            }
        }
    }
}
