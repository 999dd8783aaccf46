import Foundation
import Outbox
import Sending
import Settings
import Store
import Testing
import TestSupport

/// Submission.queue completes a mail as sendmail does (issue 23 item 1: the
/// completion moved below the CLI), so a library caller gets it too.
@Suite("Submission.queue completes From, Date and Message-ID", .serialized)
struct HeaderCompletionTests {
    /// The postcard `queue` stored for `bytes` (to a recipient without a key).
    func queuedPostcard(_ bytes: String, sender: String? = nil, fullName: String? = nil) throws -> (entry: OutboxEntry, message: String) {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let folder = try makePrivateDirectory(prefix: "completion")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let config = UserConfig(from: "alice@example.org", submission: SubmissionSettings(host: "127.0.0.1", port: 9),
                                    gnupgHome: home.path)
            let submission = try Submission(config: config, store: try LocalStore(folder: folder))
            let queued = try submission.queue(Array(bytes.utf8), envelopeSender: sender, fullName: fullName)
            #expect(queued.copies.count == 1)
            let entry = try #require(try submission.outbox.entries().first)
            let claimed = try #require(try submission.outbox.claim(ignoringSchedule: true))
            return (entry, String(decoding: claimed.message, as: UTF8.self))
        }
    }

    @Test("a mail without From, Date and Message-ID gets all three (From from the envelope sender, with -F's name, quoted); LF endings kept")
    func completesMissing() throws {
        let (entry, message) = try queuedPostcard("To: nobody@example.org\nSubject: s\n\nhi\n",
                                                  sender: "alice@example.org", fullName: "Alice \"A\" Example")
        #expect(message.contains("From: \"Alice \\\"A\\\" Example\" <alice@example.org>"), "\(message)")
        #expect(message.range(of: #"Date: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}"#,
                              options: .regularExpression) != nil, "\(message)")
        let id = try #require(entry.messageID)
        #expect(id.range(of: #"^<?[0-9a-f]{24}@example\.org>?$"#, options: .regularExpression) != nil, "\(id)")
        #expect(!message.contains("\r"))
    }

    @Test("a mail that has them keeps them as they are; the configuration's from stands in for a missing envelope sender")
    func keepsPresent() throws {
        let (entry, message) = try queuedPostcard("""
            From: Someone <alice@example.org>
            To: nobody@example.org
            Date: Sat, 21 Nov 2026 10:00:00 +0100
            Message-ID: <kept.1@example.org>
            Subject: s

            hi

            """)
        #expect(entry.messageID?.contains("kept.1@example.org") == true)
        #expect(entry.envelopeSender == "alice@example.org")
        #expect(message.contains("From: Someone <alice@example.org>") && message.contains("Date: Sat, 21 Nov 2026 10:00:00 +0100"))
        #expect(message.components(separatedBy: "Message-ID:").count == 2 && message.components(separatedBy: "Date:").count == 2)
    }
}
