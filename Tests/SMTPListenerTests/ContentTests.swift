import Foundation
import SMTPListener
import Testing
import TestSupport

@Suite(.promptly) struct ContentTests {
    /// Random content (8-bit, NUL, bare CR/LF, dot lines) sent in random cuts
    /// arrives byte-exact, in memory and spooled alike.
    @Test(arguments: [1 << 20, 0, 100])
    func randomContentByteExact(memoryLimit: Int) async throws {
        var random = SeededRandom(seed: testSeed("randomContentByteExact(\(memoryLimit))"))
        try await withListener({ $0.memoryLimit = memoryLimit }) { running in
            let client = try RawClient(port: running.port)
            #expect(try await client.code() == 220)
            #expect(try await client.command("EHLO c.invalid") == 250)
            var expected: [[UInt8]] = []
            for _ in 0..<25 {
                let mail = GeneratedContent(random: &random)
                #expect(try await client.command("MAIL FROM:<s@example.org> BODY=8BITMIME SMTPUTF8") == 250)
                #expect(try await client.command("RCPT TO:<r@example.org>") == 250)
                #expect(try await client.command("DATA") == 354)
                try await sendInPieces(client, mail.wire, &random)
                #expect(try await client.code() == 250)
                expected.append(mail.content)
            }
            #expect(try await client.command("QUIT") == 221)
            let got = running.handler.mails
            #expect(got.map(\.bytes) == expected)
            #expect(got.map(\.size) == expected.map(\.count))
            if memoryLimit == 0 { #expect(got.filter { $0.size > 0 }.allSatisfy { $0.spooled }) }
            if memoryLimit == 1 << 20 { #expect(got.allSatisfy { !$0.spooled }) }
            #expect(running.spoolLeftovers() == 0)
        }
    }

    /// The end "." CRLF cut at every place, and the CRLF before it: the mail
    /// ends exactly there, and the command after it in the same packets is answered.
    @Test func endCutEverywhere() async throws {
        try await withListener { running in
            let body = Array("a\r\n.b\r\n".utf8)
            let wire = Array("a\r\n..b\r\n.\r\nNOOP\r\n".utf8)
            for cut1 in 0...wire.count {
                for cut2 in cut1...wire.count where cut2 == wire.count || cut2 - cut1 <= 3 {
                    let client = try RawClient(port: running.port)
                    _ = try await client.code()
                    try await client.send("HELO c\r\nMAIL FROM:<>\r\nRCPT TO:<r@x>\r\nDATA\r\n")
                    for _ in 0..<4 { _ = try await client.code() }
                    for piece in [wire[..<cut1], wire[cut1..<cut2], wire[cut2...]] where !piece.isEmpty {
                        try await client.send(Array(piece))
                        try await sleepMicroseconds(300)
                    }
                    #expect(try await client.reply() == ["250 2.0.0 queued"], "cuts \(cut1) \(cut2)")
                    #expect(try await client.reply() == ["250 2.0.0 Ok"], "cuts \(cut1) \(cut2)")
                }
            }
            #expect(running.handler.mails.allSatisfy { $0.bytes == body && $0.sender == "" })
        }
    }

    /// Only CRLF "." CRLF ends a mail: LF "." LF, CR "." CR, "." at the very
    /// start followed by more, never (no smuggling of a second mail).
    @Test func onlyCRLFDotCRLFEnds() async throws {
        try await withListener { running in
            let client = try RawClient(port: running.port)
            _ = try await client.code()
            try await client.send("EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nDATA\r\n")
            _ = try await client.reply(); _ = try await client.code(); _ = try await client.code()
            #expect(try await client.code() == 354)
            let smuggle = "x\n.\nMAIL FROM:<evil@x>\nRCPT TO:<v@x>\nDATA\nevil\r.\rmore\n.\r\nRSET\r\nand\r\n"
            try await client.send(smuggle + ".\r\n")
            #expect(try await client.reply() == ["250 2.0.0 queued"])
            #expect(try await client.command("QUIT") == 221)
            #expect(running.handler.mails.count == 1)
            // Unstuffed: "RSET" and "and" are lines of their own; nothing else changes.
            #expect(running.handler.mails.first?.bytes == Array(smuggle.utf8))
        }
    }

    /// An empty mail ("." at once) is a mail of 0 octets.
    @Test func emptyMail() async throws {
        try await withListener { running in
            let client = try RawClient(port: running.port)
            _ = try await client.code()
            try await client.send("HELO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nDATA\r\n.\r\nQUIT\r\n")
            let lines = try await client.readToEnd()
            #expect(lines == ["250 test.invalid", "250 2.1.0 Ok", "250 2.1.5 Ok", "354 End data with <CR><LF>.<CR><LF>",
                              "250 2.0.0 queued", "221 2.0.0 Bye"])
            #expect(running.handler.mails.map(\.bytes) == [[]])
        }
    }
}
