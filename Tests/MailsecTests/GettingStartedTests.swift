import Foundation
import Mailsec
import Synchronization
import Testing
import TestSupport

/// An MTA for the article's code: it keeps what it was given.
final class RecordingMTA: Sendable {
    struct Sent { let bytes: [UInt8]; let sender: String; let recipients: [String] }
    let sent = Mutex([Sent]())

    func send(_ bytes: [UInt8], from sender: String, to recipients: [String]) throws {
        sent.withLock { $0.append(Sent(bytes: bytes, sender: sender, recipients: recipients)) }
    }
}

@Suite("The library as its getting-started article shows it")
struct GettingStartedTests {
    static let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/Mailsec/Mailsec.docc/GettingStarted.md").standardized

    /// The article's code, run with a real GnuPG home: it must say what the article says it does.
    func articleCode(gnupgHome: String, myMTA: RecordingMTA) throws -> String {
        var printed = ""
        func print(_ items: Any...) { printed += items.map { "\($0)" }.joined(separator: " ") + "\n" }
        // article: begin
        let outgoing = Outgoing(gnupgHome: gnupgHome)
        let mail = Array("""
            From: Alice <alice@example.org>
            To: Bob <bob@example.org>, Dora <dora@example.net>
            Subject: Lunch

            See you at noon. [[private]]The door code is 4711.[[/private]]

            """.utf8)

        // Who gets what, and why: one key listing, nothing written.
        let plan = try outgoing.plan(mail)
        for decision in plan.decisions {
            print(decision.recipient.address, decision.decision.isLetter ? "letter" : "postcard")
        }

        // Every copy, in the order it must go: letters first, then postcards.
        try outgoing.send(mail, to: .custom { copy, isNotice in
            try myMTA.send(copy.bytes, from: copy.envelopeSender, to: copy.recipients)
        })
        // article: end
        return printed
    }

    @Test("the article's code block is the code this test builds and runs, line for line")
    func articleIsTheCode() throws {
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        let blocks = text.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
        #expect(blocks.count == 1)
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let body = source.components(separatedBy: "// article: begin\n")[1].components(separatedBy: "        // article: end")[0]
        let code = body.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }.joined(separator: "\n")
        #expect(blocks.first == "import Mailsec\n\n" + code.trimmingCharacters(in: .newlines))
    }

    @Test("run with real gpg: Bob gets a letter only his key opens, Dora a postcard without the span, in that order")
    func articleCodeWorks() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home in
            let mta = RecordingMTA()
            let printed = try articleCode(gnupgHome: home.path, myMTA: mta)
            #expect(printed == "bob@example.org letter\ndora@example.net postcard\n")
            let sent = mta.sent.withLock { $0 }
            #expect(sent.map(\.recipients) == [["bob@example.org"], ["dora@example.net"]])
            #expect(sent.allSatisfy { $0.sender == "alice@example.org" })
            let letter = String(decoding: sent[0].bytes, as: UTF8.self)
            let postcard = String(decoding: sent[1].bytes, as: UTF8.self)
            #expect(letter.contains("multipart/encrypted") && letter.contains("-----BEGIN PGP MESSAGE-----"))
            #expect(!letter.contains("4711") && !letter.contains("noon"))
            #expect(postcard.contains("See you at noon.") && !postcard.contains("4711") && !postcard.contains("door code"))
            // The letter opens with Bob's own secret key, and holds what the postcard may not.
            let armored = letter[letter.range(of: "-----BEGIN PGP MESSAGE-----")!.lowerBound...]
            let opened = try withGnuPGHome(importing: ["bob.sec.asc", "alice.sec.asc"]) { bob in
                try run("/usr/bin/gpg", ["--batch", "--homedir", bob.path, "--decrypt"], input: Array(armored.utf8),
                        environment: bob.environment)
            }
            #expect(opened.status == 0)
            #expect(String(decoding: opened.stdout, as: UTF8.self).contains("The door code is 4711."))
        }
    }
}
