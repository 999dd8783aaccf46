import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy
import TestSupport
import Testing

/// Gives `home` a secret key for Alice with a second user ID (another
/// address) and three subkeys: an older and a newer encryption subkey and a
/// signing subkey. Returns the fingerprints of the key and of the newer encryption subkey.
func makeCrowdedAliceKey(in home: TemporaryGnuPGHome) throws -> (key: String, encryptionSubkey: String) {
    let now = Int(Date().timeIntervalSince1970)
    let base = ["--passphrase", "", "--pinentry-mode", "loopback"]
    let made = try home.gpg(base + ["--faked-system-time", "\(now - 7200)", "--status-fd", "1",
                                    "--quick-gen-key", "Alice <alice@example.org>", "ed25519", "cert,sign", "never"])
    let fingerprint = try #require(made.output.split(separator: "\n").first { $0.contains("KEY_CREATED") }?
        .split(separator: " ").last.map(String.init), "\(made.errors)")
    for (time, algo, usage) in [(now - 3600, "cv25519", "encr"), (now - 1800, "ed25519", "sign"), (now - 60, "cv25519", "encr")] {
        let added = try home.gpg(base + ["--faked-system-time", "\(time)", "--quick-add-key", fingerprint, algo, usage, "never"])
        try #require(added.status == 0, "\(added.errors)")
    }
    try #require(try home.gpg(base + ["--quick-add-uid", fingerprint, "Alice at home <alice@home.example>"]).status == 0)
    let listing = try home.gpg(["--with-colons", "--with-subkey-fingerprints", "--list-keys", fingerprint]).output
    // The newest encryption subkey: the last "sub" with usage e, its fpr line after it.
    let lines = listing.split(separator: "\n").map { $0.split(separator: ":", omittingEmptySubsequences: false) }
    var newest: String?
    for (index, fields) in lines.enumerated() where fields.first == "sub" && fields[11].contains("e") {
        newest = lines[index + 1][9].description
    }
    return (fingerprint, try #require(newest))
}

/// The packets of binary OpenPGP data as `gpg --list-packets` shows them: one tag per packet.
func packetTags(_ keydata: [UInt8]) throws -> [Int] {
    try withGnuPGHome { home throws in
        let listed = try home.gpg(["--list-packets"], input: keydata)
        return listed.output.split(separator: "\n").filter { $0.hasPrefix("# off=") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("tag=") }.flatMap { Int($0.dropFirst(4)) }
        }
    }
}

/// The keydata of an Autocrypt or Autocrypt-Gossip header value.
func keydata(_ value: String) throws -> [UInt8] {
    let base64 = String(try #require(value.components(separatedBy: "keydata=").last)).filter { !$0.isWhitespace }
    return Array(try #require(Data(base64Encoded: base64)))
}

@Suite("Autocrypt: minimal keydata, gossip inside letters to several recipients", .serialized)
struct AutocryptTests {
    let mail = """
        From: Alice <alice@example.org>
        To: Bob <bob@example.org>
        Cc: carol@example.org
        Bcc: dave@example.org
        Subject: Gossip
        Message-ID: <gossip.1@example.org>
        MIME-Version: 1.0
        Content-Type: text/plain; charset=utf-8

        Hello all.

        """

    @Test("the Autocrypt header holds the primary key, the From's user ID, the newest encryption subkey and their self-signatures")
    func minimalKeydata() throws {
        try withGnuPGHome(importing: ["bob.pub.asc", "carol.pub.asc", "dave-newer.pub.asc"]) { home throws in
            let alice = try makeCrowdedAliceKey(in: home)
            let full = try packetTags(try home.gpg(["--export", alice.key]).stdout)
            #expect(full.count >= 11, "the key is crowded: \(full)")
            let gnupg = GnuPG(home: home.path)
            let (_, copies, _, _) = try MailPipeline(gnupg: gnupg).process(try parse(mail))
            let letters = copies.filter { $0.kind == .letter }
            #expect(letters.count == 2)
            for letter in letters {
                let outer = try MIMEMessage.parse(letter.bytes)
                let value = try #require(outer.header("Autocrypt"))
                #expect(!value.contains("home.example"))
                let data = try keydata(value)
                #expect(try packetTags(data) == [6, 13, 2, 14, 2], "primary, user ID, its signature, subkey, its binding")
                #expect(!String(decoding: data, as: UTF8.self).contains("alice@home.example"))
                // The subkey is the one the letter is encrypted to.
                try withGnuPGHome { reader throws in
                    #expect(try reader.gpg(["--import"], input: data).status == 0)
                    let listed = try reader.gpg(["--with-colons", "--with-subkey-fingerprints", "--list-keys"]).output
                    #expect(listed.contains(alice.encryptionSubkey) && listed.contains("alice@example.org"))
                    #expect(!listed.contains("alice@home.example"))
                }
            }
        }
    }

    @Test("a letter to several recipients carries Autocrypt-Gossip for each inside; a Bcc letter carries none")
    func gossip() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc", "dave-newer.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let (_, copies, _, _) = try MailPipeline(gnupg: gnupg).process(try parse(mail))
            #expect(copies.map(\.recipients) == [["bob@example.org", "carol@example.org"], ["dave@example.org"]])
            // Alice can open both: letters are encrypted to the sender too.
            let shared = try Letter.open(try MIMEMessage.parse(copies[0].bytes), using: gnupg)
            let gossip = shared.body.headers.filter { $0.name == "Autocrypt-Gossip" }
            #expect(gossip.map { $0.value.components(separatedBy: ";").first ?? "" } == ["addr=bob@example.org", "addr=carol@example.org"])
            #expect(!String(decoding: try copies[0].bytes, as: UTF8.self).contains("Autocrypt-Gossip"), "inside only")
            for header in gossip {
                #expect(!header.value.contains("prefer-encrypt"))
                #expect(try packetTags(try keydata(header.value)) == [6, 13, 2, 14, 2])
            }
            let lookups = try gnupg.lookup(["bob@example.org", "carol@example.org"])
            for (header, lookup) in zip(gossip, lookups) {
                try withGnuPGHome { reader throws in
                    #expect(try reader.gpg(["--import"], input: try keydata(header.value)).status == 0)
                    #expect(try reader.gpg(["--with-colons", "--list-keys"]).output.contains(try #require(lookup.chosen).fingerprint))
                }
            }
            let bcc = try Letter.open(try MIMEMessage.parse(copies[1].bytes), using: gnupg)
            #expect(!bcc.body.headers.contains { $0.name == "Autocrypt-Gossip" })
            #expect(!shared.body.headers.contains { $0.value.contains("dave") }, "the Bcc recipient is named nowhere in the shared letter")
        }
    }

    @Test("the protected part is marked for both readers: hp=\"cipher\" and protected-headers=\"v1\"")
    func markers() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let gnupg = GnuPG(home: home.path)
            let (_, copies, _, _) = try MailPipeline(gnupg: gnupg).process(try parse(mail.replacingOccurrences(of: "Cc: carol@example.org\nBcc: dave@example.org\n", with: "")))
            let opened = try Letter.open(try MIMEMessage.parse(copies[0].bytes), using: gnupg)
            #expect(opened.body.contentType.parameters["hp"] == "cipher")
            #expect(opened.body.contentType.parameters["protected-headers"] == "v1")
            #expect(!opened.body.headers.contains { $0.name == "Autocrypt-Gossip" }, "one recipient: no gossip")
        }
    }
}
