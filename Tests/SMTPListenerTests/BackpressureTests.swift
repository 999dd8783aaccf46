import Foundation
import SMTPListener
import Testing
import TestSupport

@Suite(.promptly) struct BackpressureTests {
    /// While the handler runs the connection reads nothing: a client that
    /// pipelines 64 MB behind the final "." gets only the kernel's buffers
    /// filled; once the answer is out, the rest is read and answered in order.
    @Test func nothingReadWhileTheHandlerRuns() async throws {
        // The handler runs until the test has offered its 64 MB, however slow the machine.
        let gate = Gate()
        let handler = RecordingHandler(gate: gate)
        try await withListener({ _ in }, handler: handler) { running in
            defer { gate.open() }
            let client = try RawClient(port: running.port)
            _ = try await client.code()
            try await client.send("HELO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nDATA\r\n")
            for _ in 0..<4 { _ = try await client.code() }
            try await client.send("x\r\n.\r\n")
            #expect(await waitFor { running.listener.mailsInProgress == 1 })
            // A junk line of 64 MB (no LF) behind the mail.
            let junk = [UInt8](repeating: UInt8(ascii: "j"), count: 64 << 20)
            let taken = try await client.sendUntilStalled(junk, stall: .milliseconds(500))
            #expect(running.listener.mailsInProgress == 1, "the handler should still run")
            #expect(taken < 32 << 20, "the listener read \(taken) octets while its handler ran")
            gate.open()
            #expect(try await client.reply() == ["250 2.0.0 queued"])
            // The rest goes through once the answer is out: one 500 for the line, then QUIT.
            try await client.send(Array(junk[taken...]) + Array("\r\nQUIT\r\n".utf8))
            #expect(try await client.readToEnd() == ["500 5.5.2 Error: command line too long", "221 2.0.0 Bye"])
        }
    }

    /// A spool file that cannot be made (its folder gone): 451 4.3.0, the
    /// handler is not called, the session goes on; a mail in memory still works.
    @Test func spoolFailureIsTemporary() async throws {
        try await withListener({ $0.memoryLimit = 100 }) { running in
            try FileManager.default.removeItem(atPath: running.spool)
            let client = try RawClient(port: running.port)
            _ = try await client.code()
            _ = try await client.command("HELO c")
            for (size, expected) in [(5000, "451 4.3.0 Error: cannot keep the mail, try again later"), (50, "250 2.0.0 queued")] {
                try await client.send("MAIL FROM:<a@x>\r\nRCPT TO:<b@x>\r\nDATA\r\n")
                for _ in 0..<3 { _ = try await client.code() }
                try await client.send(String(repeating: "s", count: size) + "\r\n.\r\n")
                #expect(try await client.reply() == [expected])
            }
            #expect(running.handler.mails.map(\.size) == [52])
            #expect(running.log.all.contains { $0.contains("cannot make a spool file") })
        }
    }
}
