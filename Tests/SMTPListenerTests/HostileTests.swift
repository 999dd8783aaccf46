import Foundation
import SMTPListener
import Testing
import TestSupport

/// Random sessions of good and bad input, in random cuts, in parallel, over
/// the connection cap: the listener never crashes, every reply is a
/// well-formed SMTP reply, the handler sees only whole mails (each exactly as
/// sent, and each acknowledged to its sender), and no spool file is left.
@Suite(.promptly) struct HostileTests {
    /// What a session sent and heard.
    struct Outcome: Sendable {
        var replies: [String] = []
        /// Mails sent whole (by number), and the content of each.
        var complete: [Int: [UInt8]] = [:]
        /// Mails cut off by a disconnect: never to be handed over.
        var aborted: Set<Int> = []
        var tooBig: Set<Int> = []
        /// Ended by the server (421) or by a failed write: replies may be lost in the reset.
        var cut = false
    }

    static let maxSize = 20_000

    @Test func randomSessions() async throws {
        let seed = testSeed("HostileTests.randomSessions")
        let handler = RecordingHandler { _, bytes in
            // "X-Seq: 17" first: answered "queued 17", so replies name the mails.
            let first = bytes.prefix { $0 != 13 }
            return .accepted("queued " + String(decoding: first.dropFirst(7), as: UTF8.self))
        }
        try await withListener({
            $0.maxMessageSize = Self.maxSize
            $0.memoryLimit = 700
            $0.maxConnections = 6
            $0.idleTimeout = .seconds(5)
            $0.dataTimeout = .seconds(5)
        }, handler: handler) { running in
            let port = running.port
            var outcomes: [Outcome] = []
            // Rounds go on until more than ten mails went through (at most
            // twelve): how many a round gets through depends on the seed and on
            // how loaded the machine is (a slow session meets the idle timeout),
            // and too few would make the checks below mean nothing.
            for round in 0..<12 where round < 4 || running.handler.mails.count <= 10 {
                try await withThrowingTaskGroup(of: Outcome.self) { group in
                    for session in 0..<8 {
                        let sessionSeed = seed &+ UInt64(round * 100 + session) &* 0x9E3779B97F4A7C15
                        let base = (round * 8 + session) * 1000
                        group.addTask { try await Self.session(port: port, seed: sessionSeed, firstNumber: base) }
                    }
                    for try await outcome in group { outcomes.append(outcome) }
                }
            }
            let replies = outcomes.flatMap(\.replies)
            #expect(wellFormedReplies(replies), "seed \(seed)")
            let complete = outcomes.reduce(into: [Int: [UInt8]]()) { $0.merge($1.complete) { a, _ in a } }
            let aborted = outcomes.reduce(into: Set<Int>()) { $0.formUnion($1.aborted) }
            let tooBig = outcomes.reduce(into: Set<Int>()) { $0.formUnion($1.tooBig) }
            var seen = Set<Int>()
            for mail in running.handler.mails {
                let first = String(decoding: mail.bytes.prefix { $0 != 13 }, as: UTF8.self)
                let number = Int(first.dropFirst(7))
                #expect(first.hasPrefix("X-Seq: ") && number != nil, "seed \(seed): a mail not sent whole")
                guard let number else { continue }
                #expect(!seen.contains(number), "seed \(seed): mail \(number) handed over twice")
                seen.insert(number)
                #expect(complete[number] == mail.bytes, "seed \(seed): mail \(number) not as sent")
                #expect(!aborted.contains(number) && !tooBig.contains(number), "seed \(seed): mail \(number) cut or too big")
                #expect(mail.size == mail.bytes.count && mail.size <= Self.maxSize)
            }
            // Each mail handed over was acknowledged to its client, and only those.
            var acknowledged = Set<Int>()
            for reply in replies where reply.hasPrefix("250 2.0.0 queued ") {
                if let number = Int(reply.dropFirst(17)) { acknowledged.insert(number) }
            }
            #expect(acknowledged.isSubset(of: seen), "seed \(seed)")
            var cutSessions = Set<Int>()
            for outcome in outcomes where outcome.cut {
                for number in outcome.complete.keys { cutSessions.insert(number / 1000) }
            }
            let unacknowledged = seen.subtracting(acknowledged).filter { !cutSessions.contains($0 / 1000) }
            #expect(unacknowledged.isEmpty, "seed \(seed): handed over, never acknowledged: \(unacknowledged.sorted())")
            #expect(seen.count > 10, "seed \(seed): too few mails went through to mean anything")
            #expect(await waitFor { running.listener.connections == 0 && running.spoolLeftovers() == 0 }, "seed \(seed)")
            // Log lines name the client and the fault, never an address or content.
            #expect(!running.log.all.contains { $0.contains("@") || $0.contains("X-Seq") })

            // Still serving.
            let client = try RawClient(port: port)
            #expect(try await client.code() == 220)
            #expect(try await client.command("NOOP") == 250)
        }
    }

    /// One random session; returns what it sent and heard.
    static func session(port: Int, seed: UInt64, firstNumber: Int) async throws -> Outcome {
        var random = SeededRandom(seed: seed)
        var outcome = Outcome()
        let client = try RawClient(port: port)
        var number = firstNumber
        var burst: [UInt8] = []
        var gone = false

        func flush() async {
            guard !burst.isEmpty, !gone else { burst = []; return }
            do { try await sendInPieces(client, burst, &random, maxPiece: 300) } catch { gone = true }
            burst = []
            if let lines = client.available() { outcome.replies += lines } else { gone = true }
        }

        if Int.random(in: 0..<10, using: &random) > 0 { burst += Array("EHLO h\r\n".utf8) }
        let actions = Int.random(in: 3...25, using: &random)
        for _ in 0..<actions where !gone {
            switch Int.random(in: 0..<12, using: &random) {
            case 0...3:
                // A whole transaction, now and then too big.
                number += 1
                let mail = GeneratedContent(random: &random, maxLines: 30, maxLineLength: 300)
                var content = Array("X-Seq: \(number)\r\n".utf8) + mail.content
                var wire = Array("X-Seq: \(number)\r\n".utf8) + mail.wire
                if Int.random(in: 0..<6, using: &random) == 0 {
                    let filler = Array(repeating: UInt8(ascii: "f"), count: Self.maxSize) + [13, 10]
                    content += filler
                    wire = wire.dropLast(3) + filler + Array(".\r\n".utf8)
                    outcome.tooBig.insert(number)
                } else {
                    outcome.complete[number] = content
                }
                let rcpts = (0..<Int.random(in: 1...3, using: &random)).map { "RCPT TO:<r\($0)@example.org>\r\n" }.joined()
                burst += Array(("MAIL FROM:<s@example.org> BODY=8BITMIME\r\n" + rcpts + "DATA\r\n").utf8) + wire
            case 4:
                // A junk line: random octets, sometimes over 512.
                let length = Int.random(in: 0...(Bool.random(using: &random) ? 2000 : 80), using: &random)
                burst += (0..<length).map { _ in
                    let byte = UInt8.random(in: 0...255, using: &random)
                    return byte == 10 ? 0 : byte
                } + [13, 10]
            case 5:
                let commands = ["NOOP", "RSET", "HELO h", "EHLO h", "LHLO h", "VRFY x", "HELP", "MAIL FROM:<stray@x>",
                                "RCPT TO:<y@x>", "MAIL FROM:<a@x> SIZE=999999999", "QUIT ME", "STARTTLS", "mail from:<>"]
                burst += Array((commands.randomElement(using: &random)! + (Bool.random(using: &random) ? "\r\n" : "\n")).utf8)
            case 6:
                await flush()
            case 7:
                try? await Task.sleep(for: .milliseconds(Int.random(in: 0...30, using: &random)))
            case 8:
                burst += Array("\u{0}\u{0}NOOP\r\n\r\n".utf8)
            default:
                burst += Array("NOOP\r\n".utf8)
            }
        }
        await flush()
        if !gone && Int.random(in: 0..<4, using: &random) == 0 {
            // Gone in the middle of a mail: it must never be handed over.
            number += 1
            outcome.aborted.insert(number)
            let wire = Array("MAIL FROM:<s@x>\r\nRCPT TO:<r@x>\r\nDATA\r\nX-Seq: \(number)\r\n".utf8)
                + GeneratedContent(random: &random).wire.dropLast(3)
            try? await client.send(wire)
            try? await Task.sleep(for: .milliseconds(5))
            outcome.replies += client.available() ?? []
            outcome.cut = true   // closed with replies unread
            return outcome
        }
        if !gone {
            // Ends a DATA left open, then QUIT.
            try? await client.send("\r\n.\r\nQUIT\r\n")
        }
        outcome.replies += (try? await client.readToEnd()) ?? []
        outcome.cut = gone || outcome.replies.contains { $0.hasPrefix("421") }
        return outcome
    }
}
