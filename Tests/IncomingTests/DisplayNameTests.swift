import Foundation
import Incoming
import MIME
import OpenPGP
import TestSupport
import Testing

/// Ways of writing `@` and `.` that a reader takes for them.
let atLookAlikes = ["@", "\u{FF20}", "\u{FE6B}", "(at)", " [at] "]
let dotLookAlikes = [".", "\u{FF0E}", "\u{FF61}", "\u{3002}", "\u{2024}", "\u{FE52}", "\u{00B7}"]
/// Characters a reader does not see, slipped in between.
let invisibles = ["", "\u{200B}", "\u{00AD}", "\u{2060}", "\u{FEFF}", "\u{200D}"]

@Suite("From display names: addresses and look-alikes never match; names not on the key and Sender are reported", .serialized)
struct DisplayNameTests {
    /// Runs `body` with a verifier and a part signed by Bob.
    func withBobsSignature(_ text: String, _ body: (MailVerifier, String) throws -> Void) throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.sec.asc"]) { home throws in
            try body(MailVerifier(gnupg: GnuPG(home: home.path)), try signedPart(text, signer: "bob@example.org", home: home))
        }
    }

    @Test("a display name showing an address, in any look-alike spelling or without a top-level domain, never matches")
    func addressLike() throws {
        try withBobsSignature("I am Alice.") { verifier, byBob throws in
            var names = ["manager@bigcorporation", "alice@example", "ceo@bank"]
            for _ in 0..<12 {
                let at = atLookAlikes.randomElement()!, dot = dotLookAlikes.randomElement()!
                let hidden = invisibles.randomElement()!
                names.append("alice\(hidden)\(at)example\(dot)org")
                names.append("Alice (alice\(at)exa\(hidden)mple\(dot)org)")
            }
            for name in names {
                let encoded = "=?utf-8?B?\(Data(name.utf8).base64EncodedString())?="
                let report = try verifier.verify(mail(from: "\(encoded) <bob@example.org>", byBob))
                #expect(report.status == "good" && !report.verified && !report.fromMatches, "\(name.unicodeScalars.map { String($0.value, radix: 16) })")
                #expect(report.reason?.contains("display name shows the address") == true, "\(report.reason ?? "")")
                #expect(report.displayNameMatches == false)
            }
            // The sender's own address, plainly written, is no lie.
            let own = try verifier.verify(mail(from: "\"bob@example.org\" <bob@example.org>", byBob))
            #expect(own.verified, "\(own.reason ?? "")")
        }
    }

    @Test("a display name that is not a name on the signer's key is a warning naming both; a name on it is not")
    func notOnKey() throws {
        try withBobsSignature("Transfer approved.") { verifier, byBob throws in
            for name in ["The Manager", "Alice", "Bob Smith", "B\u{202E}ob"] {
                let report = try verifier.verify(mail(from: "\"\(name)\" <bob@example.org>", byBob))
                #expect(report.verified && report.displayNameMatches == false, "\(name)")
                #expect(report.warnings.count == 1)
                let warning = report.warnings.first ?? ""
                #expect(warning.contains("is not a name on the signer's key (Bob <bob@example.org>)"), "\(warning)")
                #expect(!warning.unicodeScalars.contains { $0.value == 0x202E }, "a direction override is shown escaped")
            }
            for name in ["Bob", "bob", "  Bob ", "\u{FF22}ob"] {  // full-width B reads as B
                let encoded = "=?utf-8?B?\(Data(name.utf8).base64EncodedString())?="
                let report = try verifier.verify(mail(from: "\(encoded) <bob@example.org>", byBob))
                #expect(report.verified && report.displayNameMatches == true && report.warnings.isEmpty, "\(name): \(report.warnings)")
            }
            let bare = try verifier.verify(mail(from: "bob@example.org", byBob))
            #expect(bare.displayNameMatches == true && bare.displayName == nil && bare.warnings.isEmpty)
        }
    }

    @Test("a Sender field is reported beside the From, and is a warning when it is another address")
    func sender() throws {
        try withBobsSignature("Hello.") { verifier, byBob throws in
            let report = try verifier.verify(mail(from: "Bob <bob@example.org>\nSender: list@lists.example.org", byBob))
            #expect(report.verified && report.sender == "list@lists.example.org")
            #expect(report.warnings == ["the mail has a Sender list@lists.example.org beside the From address bob@example.org"])
            let same = try verifier.verify(mail(from: "Bob <bob@example.org>\nSender: Bob <bob@example.org>", byBob))
            #expect(same.sender == "bob@example.org" && same.warnings.isEmpty)
        }
    }
}
