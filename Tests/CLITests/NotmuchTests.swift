import Foundation
import TestSupport
import Testing

/// True when Debian's notmuch is installed (scripts/bootstrap installs it).
let notmuchInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/notmuch")

@Suite("Letters as notmuch 0.37 reads them (the older protected-headers draft)", .serialized)
struct NotmuchTests {
    @Test("notmuch indexes a letter in a Maildir and shows its real Subject, decrypted",
          .enabled(if: notmuchInstalled, "notmuch is not installed: run scripts/bootstrap (apt-get install notmuch)"))
    func realSubject() throws {
        let subject = "Dinner at eight, \(UUID().uuidString.prefix(8))"
        let mail = Array("""
            From: Alice <alice@example.org>
            To: Bob <bob@example.org>
            Subject: \(subject)
            Date: Sat, 21 Nov 2026 10:00:00 +0100
            Message-ID: <notmuch.1@example.org>
            MIME-Version: 1.0
            Content-Type: text/plain; charset=utf-8

            The secret ingredient is saffron.

            """.utf8)
        let letter = try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { sender throws -> [UInt8] in
            let written = try mailsec(["encrypt", "--out", sender.path + "/out", "-"], input: mail, home: sender)
            try #require(written.status == 0, "\(written.errors)")
            return Array(try Data(contentsOf: URL(fileURLWithPath: sender.path + "/out/1-letter.eml")))
        }
        #expect(!String(decoding: letter, as: UTF8.self).contains(subject), "the Subject is inside only")
        try withGnuPGHome(importing: ["bob.sec.asc", "alice.pub.asc"]) { reader throws in
            let folder = try makePrivateDirectory(prefix: "ms-notmuch")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            for box in ["cur", "new", "tmp"] {
                try FileManager.default.createDirectory(atPath: folder + "/mail/" + box, withIntermediateDirectories: true)
            }
            try Data(letter).write(to: URL(fileURLWithPath: folder + "/mail/cur/1:2,S"))
            try """
                [database]
                path=\(folder)/mail
                [user]
                name=Bob
                primary_email=bob@example.org
                [new]
                tags=new
                [index]
                decrypt=true

                """.write(toFile: folder + "/config", atomically: true, encoding: .utf8)
            var environment = reader.environment
            environment["NOTMUCH_CONFIG"] = folder + "/config"
            let indexed = try run("/usr/bin/notmuch", ["new"], environment: environment)
            #expect(indexed.status == 0, "\(indexed.errors)")
            let shown = try run("/usr/bin/notmuch", ["show", "--decrypt=true", "--format=json", "id:notmuch.1@example.org"],
                                environment: environment)
            #expect(shown.status == 0, "\(shown.errors)")
            // [[[message, replies]]]: the first message of the first thread.
            let threads = try JSONSerialization.jsonObject(with: Data(shown.stdout)) as? [[[Any]]]
            let message = try #require(threads?.first?.first?.first as? [String: Any], "\(shown.output)")
            let headers = message["headers"] as? [String: String]
            #expect(headers?["Subject"] == subject, "\(headers ?? [:])")
            let crypto = message["crypto"] as? [String: Any]
            #expect((crypto?["decrypted"] as? [String: Any])?["status"] as? String == "full")
            let searched = try run("/usr/bin/notmuch", ["search", "--output=summary", "subject:saffron OR subject:\"\(subject)\""],
                                   environment: environment)
            #expect(searched.output.contains(subject), "the index holds the real Subject: \(searched.output)")
        }
    }
}
