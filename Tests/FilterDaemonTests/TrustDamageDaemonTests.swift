import Foundation
import SMTP
import TestSupport
import Testing

/// Issue 22, item 15, in the resident filter: the trust database damaged
/// while the daemon runs (its key cache sees the file change) answers 451 and
/// hands nothing on — it answered 250 and sent Bob a postcard.
@Suite("mailsec filter --listen with a damaged trust database", .serialized)
struct TrustDamageDaemonTests {
    func mail(to: [String]) -> [UInt8] {
        Array(("From: Alice <alice@example.org>\nTo: \(to.joined(separator: ", "))\n"
               + "Subject: s\nMessage-ID: <\(UUID().uuidString)@example.org>\n\nhello\n").utf8)
    }

    @Test("trustdb.gpg garbled, a folder, emptied or cut under the daemon: 451, nothing handed on, never a postcard; mended: a letter")
    func damagedUnderTheDaemon() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port), home: home)
            let connection = try daemon.connect()
            defer { connection.quit() }
            let path = home.path + "/trustdb.gpg"
            let good = try #require(FileManager.default.contents(atPath: path))
            var random = SystemRandomNumberGenerator()
            let damages: [(String, () throws -> Void)] = [
                ("garbled", { try Data((0..<good.count).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(fileURLWithPath: path)) }),
                ("a folder", { try FileManager.default.removeItem(atPath: path); mkdir(path, 0o700) }),
                ("emptied", { try Data().write(to: URL(fileURLWithPath: path)) }),
                ("cut", { try good.prefix(good.count / 2 + 3).write(to: URL(fileURLWithPath: path)) }),
                ("cut after the hash table's first record", { try good.prefix(80).write(to: URL(fileURLWithPath: path)) }),
            ]
            for (what, damage) in damages {
                let before = peer.transactions.count
                try damage()
                // Carol never had a letter: key continuity cannot hold her mail, only the check can.
                let answer = send(connection, mail(to: ["carol@example.org", "nobody@example.org"]),
                                  to: ["carol@example.org", "nobody@example.org"])
                #expect(answer.code == 451, "\(what): \(answer.text)")
                #expect(peer.transactions.count == before, "\(what): nothing handed on")
                try? FileManager.default.removeItem(atPath: path)
                try good.write(to: URL(fileURLWithPath: path))
                let mended = send(connection, mail(to: ["carol@example.org"]), to: ["carol@example.org"])
                #expect(mended.code == 250, "\(what), mended: \(mended.text)")
                #expect(peer.transactions.last?.data.contains("multipart/encrypted") == true, "\(what), mended: a letter")
            }
            #expect(!peer.transactions.contains { $0.recipients.contains("<carol@example.org>") && !$0.data.contains("multipart/encrypted") },
                    "never a postcard to Carol")
        }
    }
}
