import Foundation
import SMTPListener
import TestSupport
import Testing

@Suite(.promptly) struct ListenerBasicsTests {
    /// A mail through EHLO, MAIL, RCPT, DATA is handed over and answered.
    @Test func oneMail() async throws {
        try await withListener { running in
        let client = try RawClient(port: running.port)
        #expect(try await client.code() == 220)
        try await client.send("EHLO client.invalid\r\n")
        let ehlo = try #require(try await client.reply())
        #expect(ehlo.contains("250-PIPELINING"))
        #expect(ehlo.contains("250-SIZE 10240000"))
        #expect(ehlo.last == "250 ENHANCEDSTATUSCODES")
        #expect(try await client.command("MAIL FROM:<a@example.org> SIZE=100 BODY=8BITMIME") == 250)
        #expect(try await client.command("RCPT TO:<b@example.org>") == 250)
        #expect(try await client.command("RCPT TO:<c@example.org>") == 250)
        #expect(try await client.command("DATA") == 354)
        try await client.send("Subject: x\r\n\r\n..dot\r\nline\r\n.\r\n")
        let reply = try #require(try await client.reply())
        #expect(reply == ["250 2.0.0 queued"])
        #expect(try await client.command("QUIT") == 221)
        let mails = running.handler.mails
        #expect(mails.count == 1)
        #expect(mails.first?.sender == "a@example.org")
        #expect(mails.first?.recipients == ["b@example.org", "c@example.org"])
        #expect(mails.first?.bytes == Array("Subject: x\r\n\r\n.dot\r\nline\r\n".utf8))
        }
    }
}
