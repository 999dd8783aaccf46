import Foundation
import SMTP
import TestSupport
import Testing

/// Keys never change silently, in the resident filter (`mailsec filter
/// --listen` as a process): the default `on_key_change = "accept-certified"`
/// takes a rotation the old key certified and defers (451) any other change,
/// naming the recipient, on the same connection, while the daemon runs.
@Suite("key changes in mailsec filter --listen", .serialized)
struct KeyChangeResidentTests {
    func mail() -> [UInt8] {
        Array("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: s\nMessage-ID: <\(UUID().uuidString)@example.org>\n\nhello\n".utf8)
    }

    @Test("a letter to Bob's key; an uncertified replacement is deferred naming Bob; a certified rotation is taken; on_key_change = defer holds it")
    func changes() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let bob = try TemporaryGnuPGHome()
            defer { bob.close() }
            let old = try bob.makeKey("Bob <bob@example.org>", at: "20200101T000000")
            try home.importKeys(try bob.export([old]))
            let peer = try RecordingSMTPServer()
            let path = try filterConfig(home, reinjectPort: peer.port)
            let daemon = try ResidentProcess(config: path, home: home)
            let connection = try daemon.connect()
            defer { connection.quit() }
            #expect(send(connection, mail(), to: ["bob@example.org"]).code == 250)
            #expect(peer.transactions.count == 1)

            // An uncertified key, newer: deferred.
            let stranger = try TemporaryGnuPGHome()
            defer { stranger.close() }
            let forged = try stranger.makeKey("Bob <bob@example.org>", at: "20210101T000000")
            try home.importKeys(try stranger.export([forged]))
            let held = send(connection, mail(), to: ["bob@example.org"])
            #expect(held.code == 451 && held.text.contains("bob@example.org") && held.text.contains(forged), "\(held.text)")
            #expect(peer.transactions.count == 1, "nothing handed on")

            // Gone again, and Bob's own rotation, certified by his old key, arrives: taken.
            #expect(try home.gpg(["--delete-key", forged]).status == 0)
            let new = try bob.makeKey("Bob <bob@example.org>", at: "20220101T000000")
            try bob.certify(new, by: old, at: "20220201T000000")
            try home.importKeys(try bob.export([new]))
            #expect(send(connection, mail(), to: ["bob@example.org"]).code == 250)
            #expect(peer.transactions.count == 2)
            let files = try FileManager.default.contentsOfDirectory(atPath: home.path + "/state/continuity")
            let records = try files.map { try String(contentsOfFile: home.path + "/state/continuity/" + $0, encoding: .utf8) }
            #expect(records == ["bob@example.org \(new)\n"], "continuity follows the key taken: \(records)")

            // Under defer, even a certified rotation waits.
            let newest = try bob.makeKey("Bob <bob@example.org>", at: "20230101T000000")
            try bob.certify(newest, by: new, at: "20230201T000000")
            try home.importKeys(try bob.export([newest]))
            let good = try String(contentsOfFile: path, encoding: .utf8)
            try ("on_key_change = \"defer\"\n" + good).write(toFile: path, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            try daemon.waitFor("configuration reloaded")
            let deferred = send(connection, mail(), to: ["bob@example.org"])
            #expect(deferred.code == 451 && deferred.text.contains("bob@example.org"), "\(deferred.text)")
            #expect(peer.transactions.count == 2)
        }
    }
}
