import Foundation
@testable import Filter
import MIME
import Platform
import Settings
import Synchronization
import TestSupport
import Testing

/// Issue 22, item 17: the journal swept records older than `expire_days` by
/// the wall clock, so a clock that jumped a week ahead (a machine without a
/// real-time clock, set right by NTP) dropped the record of a mail still
/// being retried, and the retry sent every copy again. Records now age by
/// the journal's own clock (uptime, summed over boots): the wall clock, and
/// the files' times, move nothing.
@Suite("The journal's clock: a jump of the wall clock expires nothing", .serialized)
struct JournalClockTests {
    /// A clock the test moves: one boot, `uptime` seconds into it.
    final class Machine: Sendable {
        let boot = Mutex("0f6a7e6e-2b5c-4c5e-9b8e-000000000001")
        let uptime = Mutex<Int64>(1000)
        var clock: JournalClock {
            JournalClock(bootID: { self.boot.withLock { $0 } }, sinceBoot: { self.uptime.withLock { $0 } })
        }
        func advance(_ seconds: Int64) { uptime.withLock { $0 += seconds } }
        func reboot() {
            boot.withLock { $0 = UUID().uuidString.lowercased() }
            uptime.withLock { $0 = 30 }
        }
    }

    /// Sets every file's times in `folder` `seconds` into the past (as `touch -d`).
    func age(_ folder: String, by seconds: TimeInterval) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-seconds)], ofItemAtPath: folder + "/" + name)
        }
    }

    @Test("a half-sent mail's record whose file times are moved 8, 30 or 400 days back survives the sweep (expiry 7 days)",
          arguments: [8.0, 30, 400])
    func wallClockJump(days: Double) throws {
        let folder = try makePrivateDirectory(prefix: "ms-jclock")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let expiry: TimeInterval = 7 * 86400
        let record = try Journal(directory: folder, expiry: expiry).begin(mail: "m", recipients: ["bob@example.org", "nobody@example.org"])
        try record.markSent(["bob@example.org"])
        try age(folder, by: days * 86400)
        let later = try Journal(directory: folder, expiry: expiry)
        #expect(later.wasSent(mail: "m", to: "bob@example.org"), "the record of a mail still retried was dropped")
    }

    @Test("records expire after expire_days of the journal's clock, not before; across a reboot the time down is not counted")
    func expiresByUptime() throws {
        let folder = try makePrivateDirectory(prefix: "ms-jclock")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let machine = Machine()
        let expiry: TimeInterval = 3600
        func open() throws -> Journal { try Journal(directory: folder, expiry: expiry, clock: machine.clock) }
        try open().begin(mail: "m", recipients: ["bob@example.org"]).markSent(["bob@example.org"])
        // Uptime steps that add up to just under the expiry: kept.
        var random = SystemRandomNumberGenerator()
        var spent: Int64 = 0
        while spent < 3500 {
            let step = Int64.random(in: 1...600, using: &random)
            guard spent + step < 3590 else { break }
            machine.advance(step)
            spent += step
            try age(folder, by: 400 * 86400)  // and the files' times a year back: no matter
            #expect(try open().wasSent(mail: "m", to: "bob@example.org"), "dropped after \(spent) s of uptime")
        }
        // A reboot: whatever the machine was down for is not counted.
        machine.reboot()
        #expect(try open().wasSent(mail: "m", to: "bob@example.org"), "dropped across a reboot")
        machine.advance(3600 - spent + 120)
        #expect(!(try open().wasSent(mail: "m", to: "bob@example.org")), "kept after more than expire_days of uptime")
    }

    @Test("a record written before the journal had a clock (version 3, no stamp) counts from the clock's start")
    func legacyRecord() throws {
        let folder = try makePrivateDirectory(prefix: "ms-jclock")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let machine = Machine()
        let path = folder + "/" + Digest.sha256Hex(Array("m".utf8)) + ".journal"
        try ("mailsec-journal 2\nS " + MailRecord.key("m", "bob@example.org") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        try age(folder, by: 30 * 86400)
        let journal = try Journal(directory: folder, expiry: 3600, clock: machine.clock)
        #expect(journal.wasSent(mail: "m", to: "bob@example.org"))
        machine.advance(3700)
        #expect(!(try Journal(directory: folder, expiry: 3600, clock: machine.clock).wasSent(mail: "m", to: "bob@example.org")))
    }

    @Test("a damaged or missing clock file starts the clock again: records look younger, never older")
    func damagedClock() throws {
        let folder = try makePrivateDirectory(prefix: "ms-jclock")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let machine = Machine()
        machine.advance(5000)
        try Journal(directory: folder, expiry: 3600, clock: machine.clock).begin(mail: "m", recipients: ["bob@example.org"]).markSent(["bob@example.org"])
        for text in ["", "garbage", "mailsec-journal-clock 1\nx 1 99999999999999999999\n", "mailsec-journal-clock 1\nb -5 -7\n"] {
            try text.write(toFile: folder + "/clock", atomically: true, encoding: .utf8)
            machine.advance(10)
            #expect(try Journal(directory: folder, expiry: 3600, clock: machine.clock).wasSent(mail: "m", to: "bob@example.org"), "\(text.debugDescription)")
        }
        unlink(folder + "/clock")
        #expect(try Journal(directory: folder, expiry: 3600, clock: machine.clock).wasSent(mail: "m", to: "bob@example.org"))
    }

    @Test("the pipe filter: a mail deferred half way, its journal files moved 8 days back, then retried: every copy exactly once")
    func filterRetryAfterJump() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            var faults = RecordingSMTPServer.Faults()
            faults.refused = ["nobody@example.org"]
            let refusing = try RecordingSMTPServer(faults: faults)
            var config = FilterConfig()
            config.gnupgHome = home.path
            config.journalDirectory = home.path + "/journal"
            config.reinjection = .smtp(host: "127.0.0.1", port: refusing.port)
            config.reinjectionTimeout = 10
            config.log = .none
            let bytes = Array("From: alice@example.org\nTo: bob@example.org, nobody@example.org\nMessage-ID: <jump@x>\n\nhi\n".utf8)
            let recipients = ["bob@example.org", "nobody@example.org"]
            let first = MailFilter(config: config).run(bytes, sender: "alice@example.org", recipients: recipients)
            #expect(first.status == 75, "\(first.errorLine ?? "")")
            let counts = { (servers: [RecordingSMTPServer]) in
                servers.flatMap(\.transactions).flatMap(\.recipients).reduce(into: [String: Int]()) { $0[String($1.dropFirst().dropLast()), default: 0] += 1 }
            }
            #expect(counts([refusing]) == ["bob@example.org": 1], "Bob's letter went, the postcard was refused")
            try age(config.journalDirectory, by: 8 * 86400)
            let healthy = try RecordingSMTPServer()
            config.reinjection = .smtp(host: "127.0.0.1", port: healthy.port)
            let retry = MailFilter(config: config).run(bytes, sender: "alice@example.org", recipients: recipients)
            #expect(retry.status == 0, "\(retry.errorLine ?? "")")
            #expect(counts([refusing, healthy]) == ["bob@example.org": 1, "nobody@example.org": 1])
        }
    }
}
