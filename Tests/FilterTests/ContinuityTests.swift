import Foundation
@testable import Filter
import OpenPGP
import Pipeline
import Policy
import Settings
import TestSupport
import Testing

@Suite("Key continuity in the filter", .serialized)
struct FilterContinuityTests {
    func config(_ home: TemporaryGnuPGHome, _ sendmail: SendmailStandIn, _ extra: (inout FilterConfig) -> Void = { _ in }) -> FilterConfig {
        var config = FilterConfig()
        config.gnupgHome = home.path
        config.journalDirectory = home.path + "/state/journal"
        config.reinjection = .sendmail([sendmail.script])
        config.log = .none
        extra(&config)
        return config
    }

    func mail(to: String) -> [UInt8] {
        Array("From: Alice <alice@example.org>\nTo: \(to)\nSubject: s\nMessage-ID: <kc.\(UUID())@example.org>\n\nhello\n".utf8)
    }

    @Test("a letter is remembered once handed on; the key gone, the mail is deferred naming whose; forgotten, a postcard")
    func vanished() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let sendmail = try SendmailStandIn()
            let filter = MailFilter(config: config(home, sendmail))
            let continuity = filter.config.continuity
            #expect(continuity.directory == home.path + "/state/continuity")
            // A letter that could not be handed on is not remembered.
            let broken = MailFilter(config: config(home, sendmail) { $0.reinjection = .sendmail(["/nonexistent/sendmail"]) })
            #expect(broken.run(mail(to: "bob@example.org"), sender: "alice@example.org", recipients: ["bob@example.org"]).status == 75)
            #expect(try continuity.fingerprint(of: "bob@example.org") == nil)

            #expect(filter.run(mail(to: "bob@example.org, carol@example.org"), sender: "alice@example.org",
                               recipients: ["bob@example.org", "carol@example.org"]).status == 0)
            let bob = try #require(try continuity.fingerprint(of: "BOB@example.org"))
            #expect(try GnuPG(home: home.path).lookup(["bob@example.org"]).first?.chosen?.fingerprint == bob)
            let files = try FileManager.default.contentsOfDirectory(atPath: continuity.directory)
            #expect(files.count == 2)
            #expect(try FileManager.default.attributesOfItem(atPath: continuity.directory)[.posixPermissions] as? Int == 0o700)
            for file in files {
                #expect(try FileManager.default.attributesOfItem(atPath: continuity.directory + "/" + file)[.posixPermissions] as? Int == 0o600)
            }

            #expect(try home.gpg(["--delete-key", bob]).status == 0)
            let before = sendmail.copies.count
            for rule in [KeyLossRule.defer, .postcard] {
                let strict = MailFilter(config: config(home, sendmail) { $0.policy.mail.onKeyLoss = rule })
                let held = strict.run(mail(to: "bob@example.org, nobody@example.org"), sender: "alice@example.org",
                                      recipients: ["bob@example.org", "nobody@example.org"])
                #expect(held.status == 75, "\(rule): \(held.errorLine ?? "")")
                #expect(held.errorLine?.contains("bob@example.org") == true && held.errorLine?.contains(bob) == true)
                #expect(held.errorLine?.contains("keys forget") == true)
                #expect(sendmail.copies.count == before, "nothing sent, not even nobody's postcard")
            }
            #expect(try continuity.forget("bob@example.org"))
            let after = filter.run(mail(to: "bob@example.org"), sender: "alice@example.org", recipients: ["bob@example.org"])
            #expect(after.status == 0, "\(after.errorLine ?? "")")
            #expect(sendmail.copies.contains { $0.recipients == ["bob@example.org"] && $0.bytes.contains("hello") },
                    "a postcard, on purpose now")
        }
    }

    @Test("a keyring cut exactly between two keys (no damage to see) still defers: continuity remembers the key")
    func cutAtBoundary() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let sendmail = try SendmailStandIn()
            let filter = MailFilter(config: config(home, sendmail))
            #expect(filter.run(mail(to: "carol@example.org"), sender: "alice@example.org", recipients: ["carol@example.org"]).status == 0)
            // Carol's key is the last blob: cut the keybox just before it.
            let path = home.path + "/pubring.kbx"
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            var offset = 0, starts: [Int] = []
            while offset + 4 <= bytes.count {
                starts.append(offset)
                offset += Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            }
            try Data(bytes[..<starts.last!]).write(to: URL(fileURLWithPath: path))
            #expect(try GnuPG(home: home.path).lookup(["carol@example.org"]).first?.candidates.isEmpty == true, "looks like no key")
            let held = filter.run(mail(to: "carol@example.org"), sender: "alice@example.org", recipients: ["carol@example.org"])
            #expect(held.status == 75, "\(held.errorLine ?? "")")
            #expect(held.errorLine?.contains("carol@example.org") == true)
        }
    }

    @Test("a remembered key now expired follows on_key_loss: defer holds the mail, postcard sends one with its reason")
    func lapsed() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "expired.pub.asc"]) { home throws in
            let sendmail = try SendmailStandIn()
            let expired = try #require(try GnuPG(home: home.path).lookup(["expired@example.org"]).first?.candidates.first?.key.fingerprint)
            let base = config(home, sendmail)
            // As if expired@ had got a letter while the key was valid.
            try base.continuity.record("expired@example.org", fingerprint: expired)
            let deferring = MailFilter(config: base)
            let held = deferring.run(mail(to: "expired@example.org"), sender: "alice@example.org", recipients: ["expired@example.org"])
            #expect(held.status == 75 && held.errorLine?.contains("expired") == true, "\(held.errorLine ?? "")")
            #expect(sendmail.copies.isEmpty)
            var lenient = base
            lenient.policy.mail.onKeyLoss = .postcard
            let sent = MailFilter(config: lenient).run(mail(to: "expired@example.org"), sender: "alice@example.org",
                                                      recipients: ["expired@example.org"])
            #expect(sent.status == 0, "\(sent.errorLine ?? "")")
            #expect(sendmail.copies.count == 1)
            #expect(try FilterConfig.parse("on_key_loss = \"postcard\"").policy.mail.onKeyLoss == .postcard)
            #expect(throws: (any Error).self) { try FilterConfig.parse("on_key_loss = \"bounce\"") }
        }
    }

    @Test("a continuity record that cannot be written after the letter went out defers; the retry sends nothing again and writes it")
    func recordAfterDelivery() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let sendmail = try SendmailStandIn()
            let bytes = mail(to: "bob@example.org, carol@example.org, nobody@example.org")
            let recipients = ["bob@example.org", "carol@example.org", "nobody@example.org"]
            // A folder that cannot be made: reading finds no record, writing fails.
            let broken = MailFilter(config: config(home, sendmail) { $0.continuityDirectory = "/proc/mailsec-continuity" })
            let first = broken.run(bytes, sender: "alice@example.org", recipients: recipients)
            #expect(first.status == 75, "\(first.errorLine ?? "")")
            #expect(first.errorLine?.contains("key continuity") == true, "\(first.errorLine ?? "")")
            #expect(sendmail.perRecipient == ["bob@example.org": 1, "carol@example.org": 1], "the letter went, then the record failed")
            for _ in 0..<2 {  // still broken: deferred again, nothing sent again
                #expect(broken.run(bytes, sender: "alice@example.org", recipients: recipients).status == 75)
            }
            #expect(sendmail.perRecipient == ["bob@example.org": 1, "carol@example.org": 1])

            let fixed = MailFilter(config: config(home, sendmail))
            let second = fixed.run(bytes, sender: "alice@example.org", recipients: recipients)
            #expect(second.status == 0, "\(second.errorLine ?? "")")
            #expect(sendmail.perRecipient == ["bob@example.org": 1, "carol@example.org": 1, "nobody@example.org": 1])
            let keys = try GnuPG(home: home.path).lookup(["bob@example.org", "carol@example.org"])
            for lookup in keys {
                #expect(try fixed.config.continuity.fingerprint(of: lookup.address) == lookup.chosen?.fingerprint,
                        "\(lookup.address) remembered by the retry")
            }
            #expect(try fixed.config.continuity.fingerprint(of: "nobody@example.org") == nil)
        }
    }

    @Test("a continuity record that cannot be read defers (75)")
    func unreadableRecord() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let sendmail = try SendmailStandIn()
            let base = config(home, sendmail)
            try base.continuity.record("bob@example.org", fingerprint: String(repeating: "A", count: 40))
            let file = try #require(try FileManager.default.contentsOfDirectory(atPath: base.continuity.directory).first)
            for damaged in ["", "bob@example.org\n", "eve@example.org " + String(repeating: "A", count: 40), "garbage garbage"] {
                try damaged.write(toFile: base.continuity.directory + "/" + file, atomically: true, encoding: .utf8)
                let result = MailFilter(config: base).run(mail(to: "bob@example.org"), sender: "alice@example.org", recipients: ["bob@example.org"])
                #expect(result.status == 75, "\(damaged.debugDescription): \(result.errorLine ?? "")")
            }
            #expect(sendmail.copies.isEmpty)
        }
    }
}
