import Foundation
import MIME
@testable import SMTP
import Testing
import TestSupport

/// The client against a scripted peer (plain protocol, per-recipient
/// replies, stalls, missing extensions) — every test starts its own peer.
@Suite(.promptly, .serialized) struct SMTPClientTests {
    static func plain(_ peer: Peer, timeouts: SMTPTimeouts = .uniform(step: 10, finalReply: 20)) -> SMTPServer {
        SMTPServer(host: "127.0.0.1", port: peer.port, security: .none, heloName: "client.test", timeouts: timeouts)
    }

    static let message = Array("From: a@example.org\nTo: b@example.org\nSubject: hi\n\nline one\n.leading dot\n..two dots\n.\nend\n".utf8)

    /// What the peer must have received for `bytes`: CRLF lines, dots doubled.
    static func onTheWire(_ bytes: [UInt8]) -> [UInt8] {
        var text = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        if !text.hasSuffix("\n") { text += "\n" }
        return Array(text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { ($0.hasPrefix(".") ? "." : "") + $0 + "\r\n" }.joined().utf8)
    }

    @Test func deliversByteExactWithDotStuffing() async throws {
        let peer = try Peer()
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        let delivery = try await connection.send(from: "a@example.org", to: ["b@example.org", "c@example.org"], message: Self.message)
        await connection.quit()
        #expect(delivery.allAccepted)
        #expect(delivery.accepted == ["b@example.org", "c@example.org"])
        #expect(peer.messages() == [Self.onTheWire(Self.message)])
        #expect(peer.lines().first == "EHLO client.test")
    }

    /// Settings from a hostile configuration: an EHLO name with a line break
    /// would have put commands of its own on the wire; a time-out too large
    /// for Int64 nanoseconds trapped the process (no clear line, no 75).
    @Test func hostileSettingsAreRefusedOrBounded() async throws {
        let peer = try Peer()
        defer { peer.stop() }
        for name in ["client.test\r\nRSET", "client.test\nMAIL FROM:<x@example.org>", "a b", "", "[1.2.3.4\r\n]", "client.test\u{0}"] {
            let server = SMTPServer(host: "127.0.0.1", port: peer.port, security: .none, heloName: name,
                                    timeouts: .uniform(step: 10, finalReply: 20))
            await #expect(throws: SMTPError.self) { _ = try await SMTPConnection.open(server) }
        }
        #expect(peer.lines().isEmpty, "nothing reached the server: \(peer.lines())")
        for step in [1e13, 1e300, .infinity] {
            let server = SMTPServer(host: "127.0.0.1", port: peer.port, security: .none, heloName: "[127.0.0.1]",
                                    timeouts: .uniform(step: step, finalReply: step))
            let connection = try await SMTPConnection.open(server)
            let delivery = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message)
            await connection.quit()
            #expect(delivery.allAccepted)
        }
    }

    /// Random messages: leading dots, lone dots, CRLF and LF mixed, lines up
    /// to 998 octets, no final newline — each arrives exactly as sent.
    @Test(arguments: [false, true]) func randomMessagesRoundTrip(pipelining: Bool) async throws {
        let peer = try Peer(pipelining ? [] : ["--no-pipelining"])
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        var rng = SystemRandomNumberGenerator()
        var sent: [[UInt8]] = []
        for _ in 0..<12 {
            var bytes = Array("From: a@example.org\r\nSubject: x\r\n\r\n".utf8)
            for _ in 0..<Int.random(in: 0..<40, using: &rng) {
                var line: [UInt8] = []
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: line = [UInt8(ascii: ".")]
                case 1: line = Array("..".utf8)
                case 2: line = []
                default: break
                }
                let length = Int.random(in: 0...(Bool.random(using: &rng) ? 20 : 998 - line.count), using: &rng)
                line += (0..<length).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }
                bytes += line + (Bool.random(using: &rng) ? [13, 10] : [10])
            }
            if Bool.random(using: &rng) { bytes += Array(".no newline at the end".utf8) }
            let delivery = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: bytes)
            #expect(delivery.allAccepted)
            sent.append(bytes)
        }
        await connection.quit()
        #expect(peer.messages() == sent.map(Self.onTheWire))
    }

    @Test func eachRecipientHasItsOwnOutcome() async throws {
        let peer = try Peer(["--rcpt", "bob@example.org=550", "--rcpt", "carol@example.org=451", "--rcpt", "dave@example.org=251"])
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        let delivery = try await connection.send(
            from: "a@example.org", to: ["alice@example.org", "bob@example.org", "carol@example.org", "dave@example.org"],
            message: Self.message)
        await connection.quit()
        let statuses = delivery.recipients.map(\.status)
        #expect(statuses[0].isAccepted && statuses[3].isAccepted)
        guard case .permanent(let refused) = statuses[1], case .temporary(let later) = statuses[2] else {
            Issue.record("expected 5xx for bob and 4xx for carol: \(statuses)")
            return
        }
        #expect(refused.code == 550 && refused.enhancedCode == "5.1.1")
        #expect(refused.text.contains("no such user") && !refused.text.contains("\u{1B}"))  // sanitised
        #expect(later.code == 451)
        #expect(peer.messages().count == 1)
    }

    @Test func noRecipientAcceptedSendsNoMessage() async throws {
        for pipelining in [true, false] {
            let peer = try Peer(["--rcpt", "bob@example.org=550"] + (pipelining ? [] : ["--no-pipelining"]))
            defer { peer.stop() }
            let connection = try await SMTPConnection.open(Self.plain(peer))
            let delivery = try await connection.send(from: "a@example.org", to: ["bob@example.org"], message: Self.message)
            #expect(!delivery.allAccepted && delivery.finalReply == nil)
            // The session is still good for the next transaction.
            let next = try await connection.send(from: "a@example.org", to: ["carol@example.org"], message: Self.message)
            #expect(next.allAccepted)
            await connection.quit()
            #expect(peer.messages().count == 1)
        }
    }

    @Test func refusedTransactionIsPermanentOrTemporary() async throws {
        for (mailCode, finalCode, temporary) in [(550, 250, false), (451, 250, true), (250, 554, false), (250, 452, true)] {
            let peer = try Peer(["--mail-reply", "\(mailCode)", "--final", "\(finalCode)"])
            defer { peer.stop() }
            let connection = try await SMTPConnection.open(Self.plain(peer))
            await #expect {
                _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message)
            } throws: { error in
                guard let error = error as? SMTPError else { return false }
                return error.isTemporary == temporary && error.reply?.code == (mailCode != 250 ? mailCode : finalCode)
                    && error.code == (temporary ? .temporary : .permanent)
            }
            #expect(await connection.isOpen)
            await connection.quit()
        }
    }

    @Test func badAddressesNeverReachTheServer() async throws {
        let peer = try Peer()
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        for bad in ["b@example.org\r\nRCPT TO:<evil@example.org>", "b@example.org> SIZE=1", "b c@example.org", "<b@example.org>", "b\0@x"] {
            await #expect(throws: SMTPError.self) {
                _ = try await connection.send(from: "a@example.org", to: ["ok@example.org", bad], message: Self.message)
            }
        }
        await connection.quit()
        #expect(!peer.sawMail)
    }

    @Test func tooLargeForSizeIsRefusedBeforeMail() async throws {
        let peer = try Peer(["--size", "100"])
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        let big = Self.message + Array(repeating: UInt8(ascii: "x"), count: 200) + [10]
        await #expect { _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: big) } throws: {
            ($0 as? SMTPError)?.code == .permanent
        }
        await connection.quit()
        #expect(!peer.sawMail)
        #expect(peer.lines().allSatisfy { !$0.contains("SIZE=") })
    }

    @Test func sizeAndBodyParametersAreSent() async throws {
        let peer = try Peer(["--size", "100000"])
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        let eightBit = Array("Subject: x\n\ngrüße\n".utf8)
        _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: eightBit)
        await connection.quit()
        let mail = peer.lines().first { $0.hasPrefix("MAIL FROM") } ?? ""
        #expect(mail.contains("SIZE=\(Self.onTheWire(eightBit).count)") && mail.contains("BODY=8BITMIME"))
    }

    /// No 8BITMIME: an 8-bit body is re-encoded (through GMime) and reads the same.
    @Test func eightBitIsReencodedForA7BitServer() async throws {
        let peer = try Peer(["--no-8bitmime"])
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        let text = "Grüße aus Köln — ünïcödé\n.dot line\n"
        let message = Array("From: a@example.org\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n\(text)".utf8)
        _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: message)
        await connection.quit()
        let received = try #require(peer.messages().first)
        #expect(!received.contains { $0 >= 0x80 })
        #expect(!(peer.lines().first { $0.hasPrefix("MAIL") } ?? "").contains("8BITMIME"))
        #expect(try Self.decodedText(received) == text)
    }

    /// A line longer than 998 octets is never sent as it is: re-encoded, it reads the same.
    @Test func longLinesAreReencoded() async throws {
        let peer = try Peer()
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer))
        let long = String(repeating: "abcdefghij", count: 250) + "\n"
        let message = Array("From: a@example.org\nMIME-Version: 1.0\nContent-Type: text/plain\n\n\(long)short\n".utf8)
        _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: message)
        await connection.quit()
        let received = try #require(peer.messages().first)
        let longest = received.split(separator: 10, omittingEmptySubsequences: false).map(\.count).max() ?? 0
        #expect(longest <= 1000)   // 998 + CRLF
        #expect(try Self.decodedText(received) == long + "short\n")
    }

    static func decodedText(_ wire: [UInt8]) throws -> String {
        // Undo dot-stuffing, then read the part as a mail reader would.
        let lines = wire.split(separator: 10, omittingEmptySubsequences: false).map { $0.first == UInt8(ascii: ".") ? Array($0.dropFirst()) : Array($0) }
        let message = try MIMEMessage.parse(Array(lines.joined(separator: [10])))
        var content: [UInt8] = []
        message.body?.forEachContentPiece { content += $0 }
        return String(decoding: content, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
    }

    @Test func everyAddressIsTried() async throws {
        // "localhost" resolves to ::1 and 127.0.0.1; the peer listens on IPv4 only.
        let peer = try Peer()
        defer { peer.stop() }
        var server = Self.plain(peer)
        server.host = "localhost"
        let connection = try await SMTPConnection.open(server)
        #expect(try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message).allAccepted)
        await connection.quit()
    }

    @Test func refusedConnectionIsTemporary() async throws {
        let port: Int
        do {  // a port nobody listens on: bound, then closed
            let peer = try Peer()
            port = peer.port
            peer.stop()
        }
        await #expect {
            _ = try await SMTPConnection.open(SMTPServer(host: "127.0.0.1", port: port, security: .none))
        } throws: { ($0 as? SMTPError).map { $0.code == .connectionFailed && $0.isTemporary } ?? false }
    }

    /// Every step has its own deadline, and each fires.
    @Test(arguments: ["greeting", "ehlo", "mail", "rcpt", "data", "final"])
    func eachTimeoutFires(at step: String) async throws {
        let peer = try Peer(["--stall", step])
        defer { peer.stop() }
        var timeouts = SMTPTimeouts.uniform(step: 30, finalReply: 30)
        switch step {
        case "greeting": timeouts.greeting = 0.3
        case "ehlo": timeouts.command = 0.3
        case "mail": timeouts.mail = 0.3
        case "rcpt": timeouts.recipient = 0.3
        case "data": timeouts.dataInitiation = 0.3
        default: timeouts.finalReply = 0.3
        }
        let started = Date()
        await #expect {
            let connection = try await SMTPConnection.open(Self.plain(peer, timeouts: timeouts))
            _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message)
        } throws: { ($0 as? SMTPError).map { $0.code == .timeout && $0.isTemporary } ?? false }
        #expect(Date().timeIntervalSince(started) < 10)
    }

    /// A server that stops reading the message: the block being written times out.
    @Test func dataBlockTimeoutFires() async throws {
        let peer = try Peer(["--stall", "data-read"])
        defer { peer.stop() }
        var timeouts = SMTPTimeouts.uniform(step: 30, finalReply: 30)
        timeouts.dataBlock = 0.5
        let connection = try await SMTPConnection.open(Self.plain(peer, timeouts: timeouts))
        // 32 MB: more than loopback's socket buffers on both sides hold.
        let large = Array(("Subject: large\n\n" + String(repeating: String(repeating: "x", count: 76) + "\n", count: (32 << 20) / 77)).utf8)
        let started = Date()
        await #expect {
            _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: large)
        } throws: { ($0 as? SMTPError).map { $0.code == .timeout && $0.description.contains("did not take the message") } ?? false }
        #expect(Date().timeIntervalSince(started) < 20)
        #expect(!(await connection.isOpen))
    }

    /// RFC 1047 (issue 12 B5): the wait for the final reply is longer than
    /// every other step's, so a server slow to commit is still heard.
    @Test func finalReplyHasItsOwnLongerDeadline() async throws {
        let peer = try Peer(["--final-delay", "1.5"])
        defer { peer.stop() }
        let connection = try await SMTPConnection.open(Self.plain(peer, timeouts: .uniform(step: 0.5, finalReply: 5)))
        #expect(try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message).allAccepted)
        await connection.quit()
    }

    @Test func blockingFacadeWorks() throws {
        let peer = try Peer()
        defer { peer.stop() }
        let connection = try BlockingSMTPConnection.open(Self.plain(peer))
        #expect(try connection.send(from: "", to: ["b@example.org"], message: Self.message).allAccepted)
        connection.quit()
        // SIZE counts CRLF line ends but not the dots added by stuffing (RFC 1870).
        let size = String(decoding: Self.message, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8.count
        #expect(peer.lines().contains("MAIL FROM:<> SIZE=\(size)"))
    }
}

/// The DATA encoding alone, without a server.
@Suite struct MessageDataTests {
    @Test func dotStuffingAndLineEnds() {
        #expect(MessageData(Array("a\n.b\n..c\nd".utf8)).wire == Array("a\r\n..b\r\n...c\r\nd\r\n.\r\n".utf8))
        #expect(MessageData(Array("x\r\n".utf8)).wire == Array("x\r\n.\r\n".utf8))
        #expect(MessageData([]).wire == Array(".\r\n".utf8))
    }

    @Test func findsWhatTheServerMustSupport() {
        let data = MessageData(Array("Subject: Grüße\n\nplain\n".utf8))
        #expect(data.eightBitHeader && !data.eightBitBody && !data.longLine)
        let body = MessageData(Array("Subject: x\n\nGrüße\n".utf8) + Array(repeating: 0x61, count: 999))
        #expect(!body.eightBitHeader && body.eightBitBody && body.longLine)
        #expect(!MessageData(Array(repeating: 0x61, count: 998) + [13, 10]).longLine)
        #expect(MessageData(Array("Subject: x\r\n\r\na\0b".utf8)).nul)
    }
}
