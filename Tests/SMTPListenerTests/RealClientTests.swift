import Foundation
import SMTPListener
import Testing
import TestSupport

/// Real clients against the listener: Python's smtplib (SMTP and LMTP) and
/// Postfix's smtp-source.
@Suite(.promptly) struct RealClientTests {
    static let sendScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Clients/send.py").path

    /// smtplib, SMTP and LMTP: 8-bit and UTF-8 content and lines that start
    /// with "." or ".." arrive byte-exact; LMTP gets one reply per recipient.
    @Test(arguments: [ListenerSettings.Dialect.smtp, .lmtp])
    func smtplib(dialect: ListenerSettings.Dialect) async throws {
        var random = SeededRandom(seed: testSeed("RealClientTests.smtplib"))
        let handler = RecordingHandler { mail, _ in .accepted("queued \(mail.size)") }
        try await withListener({ $0.dialect = dialect; $0.memoryLimit = 300 }, handler: handler) { running in
            let folder = try makePrivateDirectory(prefix: "ms-smtplib")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            var contents: [[UInt8]] = [Array("Subject: Grüße\r\n\r\n.\r\n..\r\n...x\r\n.y\r\nß 日本\r\n".utf8)]
            contents.append(Array(String(repeating: "..a line of 8-bit text: é ß ✉\r\n.\r\n", count: 200).utf8))
            for _ in 0..<8 {
                // smtplib makes every bare CR and LF a CRLF: only CRLF lines here.
                var lines: [String] = []
                for _ in 0..<Int.random(in: 1...60, using: &random) {
                    let pieces = [".", "..", "", "é", "x", " ", "\u{FF}", "日", "\t", "From "]
                    lines.append((0..<Int.random(in: 0...40, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined())
                }
                contents.append(Array((lines.joined(separator: "\r\n") + "\r\n").utf8))
            }
            var paths: [String] = []
            for (i, content) in contents.enumerated() {
                let path = folder + "/m\(i)"
                _ = FileManager.default.createFile(atPath: path, contents: Data(content))
                paths.append(path)
            }
            let mode = dialect == .lmtp ? "lmtp" : "smtp"
            let port = running.port
            let arguments = [Self.sendScript, String(port), mode, "sénder@example.org", "a@example.org,b@exämple.org"] + paths
            let result = try await offThread { try run("/usr/bin/python3", arguments) }
            #expect(result.status == 0, "\(result.errors)")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any]
            let features = json?["features"] as? [String] ?? []
            #expect(features == ["8bitmime", "enhancedstatuscodes", "pipelining", "size", "smtputf8"])
            let results = json?["results"] as? [[[Any]]] ?? []
            #expect(results.count == contents.count + 1)
            for (i, content) in contents.enumerated() where i < results.count {
                let replies = results[i].map { "\($0[0]) \($0[1])" }
                #expect(replies == Array(repeating: "250 2.0.0 queued \(content.count)", count: dialect == .lmtp ? 2 : 1))
            }
            #expect(results.last.map { "\($0[0][0]) \($0[0][1])" } == "250 2.0.0 Ok")
            let mails = running.handler.mails
            #expect(mails.map(\.bytes) == contents)
            #expect(mails.allSatisfy { $0.sender == "sénder@example.org" && $0.recipients == ["a@example.org", "b@exämple.org"] })
            #expect(mails.contains { $0.spooled } && mails.contains { !$0.spooled })
        }
    }

    /// Postfix's smtp-source: many mails over parallel sessions (one mail
    /// per connection, and many per connection), SMTP and LMTP; every mail
    /// handed over once, whole.
    @Test(arguments: [["-s", "8", "-m", "300", "-l", "3000"], ["-d", "-s", "4", "-m", "400", "-l", "500"],
                      ["-L", "-d", "-s", "3", "-m", "200", "-l", "40000", "-r", "3", "-N"]])
    func smtpSource(options: [String]) async throws {
        let lmtp = options.contains("-L")
        let messages = Int(options[options.firstIndex(of: "-m")! + 1])!
        let length = Int(options[options.firstIndex(of: "-l")! + 1])!
        try await withListener({ $0.dialect = lmtp ? .lmtp : .smtp; $0.memoryLimit = 10_000; $0.maxConnections = 10 }) { running in
            let port = running.port
            let arguments = options + ["-f", "sender@example.org", "-t", "rcpt@example.org", "-M", "source.invalid", "127.0.0.1:\(port)"]
            let result = try await offThread { try run("/usr/sbin/smtp-source", arguments) }
            #expect(result.status == 0, "\(result.errors)")
            let mails = running.handler.mails
            #expect(mails.count == messages)
            #expect(mails.allSatisfy { $0.sender == "sender@example.org" && $0.size >= length })
            #expect(mails.allSatisfy { $0.recipients.count == (lmtp ? 3 : 1) })
            // smtp-source's content ends with its filler lines: whole mails only.
            #expect(mails.allSatisfy { $0.bytes.suffix(2) == [13, 10] })
            #expect(await waitFor { running.spoolLeftovers() == 0 })
        }
    }
}
