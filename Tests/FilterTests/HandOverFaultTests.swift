import Foundation
@testable import Filter
import Pipeline
import Settings
import TestSupport
import Testing

/// The filter on the one send step (MailPipeline.send(_:to:)) with a
/// partially encrypted postcard: the letter, the password notice, the
/// postcard, handed on in that order; a hand-over failing at copy k of n.
@Suite("Hand-over failing at copy k of a partially encrypted mail", .serialized)
struct HandOverFaultTests {
    let mail = Array("""
        From: Alice <alice@example.org>
        To: bob@example.org, nobody@example.org
        Subject: s
        Message-ID: <ho.1@example.org>

        the [[private]]zqsecret[[/private]] word

        """.utf8)
    let recipients = ["bob@example.org", "nobody@example.org"]

    func config(_ home: TemporaryGnuPGHome, _ server: ReadingServerProcess, port: Int) throws -> FilterConfig {
        var config = try FilterReadingTests().config(home, publish: server.url, mustBeLetter: true, token: server.token)
        config.reinjection = .smtp(host: "127.0.0.1", port: port)
        config.reinjectionTimeout = 10
        return config
    }

    /// Reading pages published (201) and withdrawn (204), from the server's log.
    func pages(_ server: ReadingServerProcess) throws -> (published: Int, withdrawn: Int) {
        let lines = try String(contentsOfFile: server.logPath, encoding: .utf8).split(separator: "\n")
        return (lines.filter { $0.contains("POST /api/postcards 201") }.count,
                lines.filter { $0.contains("DELETE /api/postcards/") && $0.hasSuffix(" 204") }.count)
    }

    /// Who each taken copy went to, in order (the notice is Alice's).
    func order(_ server: RecordingSMTPServer) -> [String] {
        server.transactions.map { $0.recipients.map { String($0.dropFirst().dropLast()) }.joined(separator: ",") }
    }

    @Test("copy k of 3 refused (451): 75 naming k-1 of the mail's 2 copies (and the notice when it was the notice), the page withdrawn, key continuity only for Bob's letter once it went; the retry sends only the rest, the notice before the postcard",
          arguments: [1, 2, 3])
    func failingAt(_ failing: Int) throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let refusing = try RecordingSMTPServer(failing: [failing])
            let filter = MailFilter(config: try config(home, server, port: refusing.port))
            let first = filter.run(mail, sender: "alice@example.org", recipients: recipients)
            #expect(first.status == 75, "\(first.errorLine ?? "")")
            let line = first.errorLine ?? ""
            let went = failing == 1 ? 0 : 1
            #expect(line.contains(" after \(went) of 2 copies; the mail stays queued and only the rest is sent on retry"), "\(line)")
            #expect(line.contains("(the password notice)") == (failing == 2), "\(line)")
            #expect(!line.contains("zqsecret"))
            #expect(order(refusing) == Array(["bob@example.org", "alice@example.org", "nobody@example.org"].prefix(failing - 1)))
            var counted = try pages(server)
            #expect(counted.published == 1 && counted.withdrawn == 1, "no postcard went: the page serves nobody")
            let remembered = try filter.config.continuity.remembered(["bob@example.org", "alice@example.org"])
            #expect(remembered.keys.sorted() == (failing > 1 ? ["bob@example.org"] : []), "the notice's key is never remembered")

            let healthy = try RecordingSMTPServer()
            let second = MailFilter(config: try config(home, server, port: healthy.port))
                .run(mail, sender: "alice@example.org", recipients: recipients)
            #expect(second.status == 0, "\(second.errorLine ?? "")")
            #expect(order(healthy) == (failing == 1 ? ["bob@example.org"] : []) + ["alice@example.org", "nobody@example.org"])
            #expect(second.logLine.contains("password-notices=1"), "\(second.logLine)")
            counted = try pages(server)
            #expect(counted.published == 2 && counted.withdrawn == 1, "the retry's page stays")
        }
    }
}
