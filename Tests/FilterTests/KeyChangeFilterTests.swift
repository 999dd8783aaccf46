import Foundation
@testable import Filter
import OpenPGP
import Pipeline
import Policy
import Settings
import TestSupport
import Testing

/// Keys never change silently, in the pipe filter: `on_key_change` decides
/// what happens to a recipient whose key is not the one they last got a
/// letter with (default `accept-certified`).
@Suite("key changes in the filter", .serialized)
struct KeyChangeFilterTests {
    func config(_ home: TemporaryGnuPGHome, _ sendmail: SendmailStandIn, _ rule: KeyChangeRule? = nil) -> FilterConfig {
        var config = FilterConfig()
        config.gnupgHome = home.path
        config.journalDirectory = home.path + "/state/journal"
        config.reinjection = .sendmail([sendmail.script])
        config.log = .none
        if let rule { config.policy.mail.onKeyChange = rule }
        return config
    }

    func mail() -> [UInt8] {
        Array("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: s\nMessage-ID: <kc.\(UUID())@example.org>\n\nhello\n".utf8)
    }

    /// The key the letter to Bob went to, as the continuity record now holds it.
    func remembered(_ filter: MailFilter) throws -> String? { try filter.config.continuity.fingerprint(of: "bob@example.org") }

    @Test("filter.toml: on_key_change defaults to accept-certified; every value parses; another one is one error line without the value")
    func configuration() throws {
        #expect(FilterConfig().policy.mail.onKeyChange == .acceptCertified)
        #expect(try FilterConfig.parse("").policy.mail.onKeyChange == .acceptCertified)
        for rule in KeyChangeRule.allCases {
            #expect(try FilterConfig.parse("on_key_change = \"\(rule.rawValue)\"").policy.mail.onKeyChange == rule)
        }
        for bad in ["\"bounce\"", "\"Accept\"", "1", "true"] {
            do {
                _ = try FilterConfig.parse("on_key_change = \(bad)")
                Issue.record("\(bad) accepted")
            } catch {
                let line = "\(error)"
                #expect(line.contains("on_key_change") && !line.contains("\n") && !line.contains("bounce"), "\(line)")
            }
        }
    }

    @Test("each kind of change under each rule: certified rotation, uncertified replacement, expired old key")
    func rules() throws {
        // (kind, rule) -> taken?
        let expected: [String: [KeyChangeRule: Bool]] = [
            "certified": [.defer: false, .acceptCertified: true, .accept: true],
            "uncertified": [.defer: false, .acceptCertified: false, .accept: true],
            // gpg cannot check a certification by a key that has expired since: not taken as certified.
            "expired": [.defer: false, .acceptCertified: false, .accept: true],
        ]
        for (kind, outcomes) in expected.sorted(by: { $0.key < $1.key }) {
            for (rule, taken) in outcomes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
                    let bob = try TemporaryGnuPGHome()
                    defer { bob.close() }
                    let old = try bob.makeKey("Bob <bob@example.org>", at: "20200101T000000")
                    try home.importKeys(try bob.export([old]))
                    let sendmail = try SendmailStandIn()
                    let filter = MailFilter(config: config(home, sendmail, rule))
                    #expect(filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"]).status == 0)
                    #expect(try remembered(filter) == old)

                    let new = try bob.makeKey("Bob <bob@example.org>", at: "20200201T000000")
                    if kind != "uncertified" { try bob.certify(new, by: old, at: "20200301T000000") }
                    if kind == "expired" { try bob.setExpiry(old, "2020-12-31", at: "20200401T000000") }
                    try home.importKeys(try bob.export([old, new]))
                    let result = filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"])
                    if taken {
                        #expect(result.status == 0, "\(kind) \(rule): \(result.errorLine ?? "")")
                        #expect(try remembered(filter) == new, "\(kind) \(rule): continuity follows the key taken")
                        #expect(sendmail.copies.count == 2)
                    } else {
                        #expect(result.status == 75, "\(kind) \(rule): \(result.errorLine ?? "")")
                        let line = result.errorLine ?? ""
                        #expect(line.contains("bob@example.org") && line.contains(new) && !line.contains("\n"), "\(line)")
                        #expect(try remembered(filter) == old)
                        #expect(sendmail.copies.count == 1, "nothing sent")
                    }
                }
            }
        }
    }
}
