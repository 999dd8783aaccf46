import Foundation
import SMTPListener
import Testing
import TestSupport

@Suite(.promptly) struct ProtocolTests {
    /// Every command, in and out of order, with the reply RFC 5321 asks for.
    @Test func repliesInOrder() async throws {
        try await withListener { running in
            let client = try RawClient(port: running.port)
            #expect(try await client.code() == 220)
            let script: [(String, Int)] = [
                ("MAIL FROM:<a@x>", 503), ("RCPT TO:<b@x>", 503), ("DATA", 503),
                ("LHLO c", 500), ("EHLO", 501), ("EHLO c.invalid", 250),
                ("RCPT TO:<b@x>", 503), ("DATA", 503),
                ("MAIL FROM:a@x", 501), ("MAIL FROM:<a@x", 501), ("MAIL TO:<a@x>", 501),
                ("MAIL FROM:<a@x> FOO=1", 555), ("MAIL FROM:<a@x> SIZE=abc", 501),
                ("MAIL FROM:<a@x> SIZE=99999999999", 552),
                ("MAIL FROM:<@route,@r2:a@x> SIZE=10", 250), ("MAIL FROM:<c@x>", 503),
                ("DATA", 503), ("RCPT TO:<>", 501), ("RCPT TO:<b@x> NOTIFY=NEVER", 555),
                ("RCPT TO: <\"quoted > name\"@x>", 250),
                ("DATA extra", 501), ("RSET", 250), ("DATA", 503), ("QUIT", 221),
            ]
            for (command, code) in script {
                #expect(try await client.command(command) == code, "\(command)")
            }
            #expect(try await client.readToEnd() == [])
            // A second session: the first one's 18 errors are near the limit of 20.
            let second = try RawClient(port: running.port)
            #expect(try await second.code() == 220)
            let more: [(String, Int)] = [
                ("NOOP", 250), ("VRFY b@x", 252), ("VRFY", 501), ("EXPN list", 502), ("HELP", 214),
                ("XFORWARD NAME=x", 500), ("STARTTLS", 500), ("AUTH PLAIN", 500), ("BDAT 10 LAST", 500),
                ("frobnicate", 500), ("HELO c", 250), ("mail from:<a@x>", 250), ("rcpt to:<b@x>", 250),
                ("QUIT", 221),
            ]
            for (command, code) in more {
                #expect(try await second.command(command) == code, "\(command)")
            }
            #expect(try await second.readToEnd() == [])
            #expect(running.handler.mails.isEmpty)
        }
    }

    /// A whole pipelined transaction in one write, twice, then QUIT: each
    /// command answered once, in order, and both mails handed over.
    @Test func pipelinedBurst() async throws {
        try await withListener { running in
            let client = try RawClient(port: running.port)
            _ = try await client.code()
            let one = "MAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nRCPT TO:<c@x>\r\nDATA\r\nhello\r\n.\r\n"
            try await client.send("EHLO c\r\n" + one + "RSET\r\n" + one + "NOOP\r\nQUIT\r\n")
            let lines = try await client.readToEnd()
            #expect(wellFormedReplies(lines))
            let codes = lines.filter { !$0.hasPrefix("250-") }.map { $0.prefix(3) }
            #expect(codes == ["250", "250", "250", "250", "354", "250", "250", "250", "250", "250", "354", "250", "250", "221"])
            #expect(running.handler.mails.map(\.recipients) == [["b@x", "c@x"], ["b@x", "c@x"]])
        }
    }

    /// Command lines: LF alone ends one; over 512 octets is 500 5.5.2 (the
    /// rest of it skipped, the next line answered); a NUL is a syntax error.
    @Test func commandLines() async throws {
        try await withListener { running in
            let client = try RawClient(port: running.port)
            _ = try await client.code()
                        try await client.send("NOOP\n")
            #expect(try await client.code() == 250)
            try await client.send("NOOP " + String(repeating: "x", count: 505) + "\r\n")   // 512 with CRLF
            #expect(try await client.code() == 250)
            try await client.send("NOOP " + String(repeating: "x", count: 506) + "\r\n")   // 513
            #expect(try await client.reply() == ["500 5.5.2 Error: command line too long"])
            try await client.send("NOOP " + String(repeating: "x", count: 5000))
            #expect(try await client.reply() == ["500 5.5.2 Error: command line too long"])
            try await client.send(String(repeating: "y", count: 3000) + "\r\nNOOP\r\n")
            #expect(try await client.code() == 250)
            try await client.send([UInt8]("NO\0OP\r\n".utf8))
            #expect(try await client.code() == 501)
            try await client.send([0xFF, 0xFE, 13, 10])
            #expect(try await client.code() == 501)
            #expect(try await client.command("QUIT") == 221)
        }
    }

    /// A client that keeps erring is let go after 20 errors with 421.
    @Test func errorLimit() async throws {
        try await withListener { running in
            let client = try RawClient(port: running.port)
            _ = try await client.code()
            try await client.send(String(repeating: "BOGUS\r\n", count: 30))
            let lines = try await client.readToEnd()
            #expect(lines.count == 20)
            #expect(lines.last?.hasPrefix("421 4.7.0") == true)
            #expect(running.log.all.contains { $0.contains("unknown command") && $0.contains("127.0.0.1:") })
        }
    }

    /// LMTP: LHLO only; after DATA one reply per accepted recipient.
    @Test func lmtpRepliesPerRecipient() async throws {
        let handler = RecordingHandler { mail, _ in
            mail.recipients.count == 2 ? .temporary("4.2.0 later") : .permanent("5.7.1 refused: policy")
        }
        try await withListener({ $0.dialect = .lmtp }, handler: handler) { running in
            let client = try RawClient(port: running.port)
            #expect(try await client.reply()?.first?.contains("LMTP") == true)
            #expect(try await client.command("EHLO c") == 500)
            #expect(try await client.command("HELO c") == 500)
            #expect(try await client.command("LHLO c") == 250)
            try await client.send("MAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nRCPT TO:<c@x>\r\nDATA\r\nx\r\n.\r\n")
            for _ in 0..<4 { _ = try await client.code() }
            #expect(try await client.reply() == ["451 4.2.0 later"])
            #expect(try await client.reply() == ["451 4.2.0 later"])
            try await client.send("MAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nDATA\r\nx\r\n.\r\nNOOP\r\n")
            for _ in 0..<3 { _ = try await client.code() }
            #expect(try await client.reply() == ["554 5.7.1 refused: policy"])
            #expect(try await client.reply() == ["250 2.0.0 Ok"])
        }
    }

    /// A handler's text cannot add a reply line or an out-of-class code.
    @Test func verdictTextIsOneLine() async throws {
        let handler = RecordingHandler { _, bytes in
            switch bytes.first {
            case UInt8(ascii: "a"): return .accepted("")
            case UInt8(ascii: "b"): return .temporary("5.7.1 wrong class\r\n250 injected")
            default: return .permanent(String(repeating: "é", count: 500))
            }
        }
        try await withListener({ _ in }, handler: handler) { running in
            let client = try RawClient(port: running.port)
            _ = try await client.code()
            _ = try await client.command("HELO c")
            var replies: [[String]] = []
            for body in ["a", "b", "c"] {
                try await client.send("MAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nDATA\r\n\(body)\r\n.\r\n")
                for _ in 0..<3 { _ = try await client.code() }
                replies.append(try #require(try await client.reply()))
            }
            #expect(replies[0] == ["250 2.0.0 Ok"])
            #expect(replies[1] == ["451 4.3.0 5.7.1 wrong class  250 injected"])
            #expect(replies[2].count == 1 && replies[2][0].hasPrefix("554 5.6.0 ??") && replies[2][0].utf8.count <= 420)
            #expect(wellFormedReplies(replies.flatMap { $0 }))
            #expect(try await client.command("NOOP") == 250)
        }
    }
}
