import Foundation
import SMTP
import TestSupport
import Testing

/// Issue 22, item 19: a client (Postfix) that gives up on a mail before the
/// filter's own time-out and tries it again at once. The first try went on,
/// finished, and cleared its journal record although its 250 reached nobody;
/// the retry then sent every copy a second time. Now the record stays until
/// the 250 is known to have reached the client (its next command came), and
/// a retry while the first try runs gets 451.
@Suite("A retry while the first try still runs, or after its 250 was lost: every copy once", .serialized)
struct RetryRaceTests {
    /// A plain SMTP client on a socket that sends a mail and hangs up `after`
    /// seconds past its final ".", reading no reply; true when the 250 had
    /// come by then (it is then read, and QUIT sent, as Postfix does).
    static func sendAndHangUp(port: Int, _ bytes: [UInt8], from sender: String, to recipients: [String], after: Double) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonError(description: "socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw DaemonError(description: "connect") }
        var input: [UInt8] = []
        func reply() throws -> String {
            while true {
                if let end = input.firstIndex(of: 10) {
                    let line = String(decoding: input[..<end], as: UTF8.self)
                    input.removeSubrange(...end)
                    if line.count >= 4, Array(line.utf8)[3] == UInt8(ascii: "-") { continue }
                    return line
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { throw DaemonError(description: "closed") }
                input += chunk[..<count]
            }
        }
        func say(_ text: String) { _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        _ = try reply()
        say("EHLO client.test\r\n"); _ = try reply()
        say("MAIL FROM:<\(sender)>\r\n"); _ = try reply()
        for recipient in recipients { say("RCPT TO:<\(recipient)>\r\n"); _ = try reply() }
        say("DATA\r\n"); _ = try reply()
        var data = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n")
        if !data.hasSuffix("\r\n") { data += "\r\n" }
        say(data + ".\r\n")
        usleep(useconds_t(after * 1_000_000))
        // Whatever came by now, without waiting.
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count > 0 { input += chunk[..<count] }
        guard let end = input.firstIndex(of: 10), String(decoding: input[..<end], as: UTF8.self).hasPrefix("250") else { return false }
        say("QUIT\r\n")
        _ = try? reply()
        return true
    }

    @Test("many rounds: the client hangs up at a random moment after the dot and retries at once until it hears 250; each copy exactly once")
    func hangUpAndRetry() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            var random = SystemRandomNumberGenerator()
            var faults = RecordingSMTPServer.Faults()
            // A slow queue behind the filter: every copy takes a while to be taken.
            for attempt in 1...400 { faults.delayAfterDot[attempt] = Double.random(in: 0.05...0.35, using: &random) }
            let peer = try RecordingSMTPServer(faults: faults)
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port), home: home)
            let people = ["bob@example.org", "carol@example.org", "nobody@example.org"]
            var expected: [String: Int] = [:]
            var hungUpEarly = 0
            for round in 0..<14 {
                let recipients = people.filter { _ in Bool.random(using: &random) }.ifEmpty(["nobody@example.org"])
                let bytes = Array(("From: Alice <alice@example.org>\nTo: \(recipients.joined(separator: ", "))\n"
                                   + "Subject: round \(round)\nMessage-ID: <race\(round).\(UUID().uuidString)@example.org>\n\nhello\n").utf8)
                let heard = try Self.sendAndHangUp(port: daemon.port, bytes, from: "alice@example.org", to: recipients,
                                                   after: Double.random(in: 0...0.9, using: &random))
                if !heard {
                    hungUpEarly += 1
                    // Retried at once, and again on every 451, until a 250.
                    var answer = (code: 0, text: "")
                    for _ in 0..<200 {
                        let connection = try daemon.connect()
                        answer = send(connection, bytes, to: recipients)
                        connection.quit()
                        if answer.code == 250 { break }
                        #expect(answer.code == 451, "round \(round): \(answer.text)")
                        usleep(UInt32.random(in: 0...200_000, using: &random))
                    }
                    #expect(answer.code == 250, "round \(round): \(answer.text)")
                }
                for recipient in recipients { expected[recipient, default: 0] += 1 }
            }
            // Every try has ended (a first try still running would show as more copies later).
            usleep(1_500_000)
            #expect(counts([peer]) == expected, "hung up early in \(hungUpEarly) rounds")
            #expect(hungUpEarly > 0, "no round hung up before its answer: the test tried nothing")
        }
    }
}

extension Array {
    fileprivate func ifEmpty(_ other: [Element]) -> [Element] { isEmpty ? other : self }
}
