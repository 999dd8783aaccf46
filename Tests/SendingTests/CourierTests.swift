import Foundation
import GRDB
import Outbox
import Sending
import Store
import Synchronization
import Testing
import TestSupport

/// A server whose answers are drawn from a seeded generator: per recipient
/// accepted / 4xx / 5xx, or the whole session failing (connection refused,
/// authentication failed). It records what it took, to check that nothing is
/// taken twice and every acceptance is recorded. Fault injection for the
/// delivery run; real servers are in scripts/submission-e2e.
final class ScriptedServer: SubmissionTransport, @unchecked Sendable {
    // @unchecked: all state is behind the Mutex.
    struct State {
        var random: SeededRandom
        var taken: [String: Int] = [:]   // "copy/recipient" → times accepted
        var sessions = 0
    }
    let state: Mutex<State>
    let openFailure: SubmissionFailure?

    init(seed: UInt64, openFailure: SubmissionFailure? = nil) {
        state = Mutex(State(random: SeededRandom(seed: seed)))
        self.openFailure = openFailure
    }

    func open() async throws(SubmissionFailure) -> any SubmissionSession {
        if let openFailure { throw openFailure }
        state.withLock { $0.sessions += 1 }
        return Session(server: self)
    }

    func probe() async -> ConnectionState { openFailure == nil ? .online : .unreachable }

    final class Session: SubmissionSession {
        let server: ScriptedServer
        init(server: ScriptedServer) { self.server = server }

        func send(from sender: String, to recipients: [String], message: [UInt8]) async throws(SubmissionFailure)
            -> [String: RecipientOutcome] {
            let result: Result<[String: RecipientOutcome], SubmissionFailure> = server.state.withLock { state in
                if Int.random(in: 0..<8, using: &state.random) == 0 {
                    return .failure(SubmissionFailure(.temporary, "connection lost", endsSession: true))
                }
                var outcomes: [String: RecipientOutcome] = [:]
                for recipient in recipients {
                    switch Int.random(in: 0..<5, using: &state.random) {
                    case 0: outcomes[recipient] = .temporary("450 mailbox busy")
                    case 1: outcomes[recipient] = .permanent("550 no such user")
                    default:
                        outcomes[recipient] = .accepted
                        state.taken["\(String(decoding: message, as: UTF8.self))/\(recipient)", default: 0] += 1
                    }
                }
                return .success(outcomes)
            }
            return try result.get()
        }

        func quit() async {}
    }
}

@Suite("Delivery runs", .serialized)
struct CourierTests {
    func withStore<R>(_ body: (Outbox, String) async throws -> R) async throws -> R {
        let folder = try makePrivateDirectory(prefix: "ms-courier")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        return try await body(Outbox(store: try LocalStore(folder: folder + "/data")), folder)
    }

    @Test("random server answers over many runs: each recipient taken at most once, every acceptance recorded", arguments: 0..<8)
    func randomRuns(seed: Int) async throws {
        try await withStore { outbox, _ in
            let server = ScriptedServer(seed: UInt64(seed) + 17)
            let courier = Courier(outbox: outbox, transport: server, sentFolder: nil)
            for mail in 0..<5 {
                try outbox.enqueue(sender: "a@x.org", messageID: "m\(mail)", origin: "test", copies: (0..<2).map { copy in
                    NewCopy(kind: "letter", recipients: (0..<3).map { "r\(mail)\(copy)\($0)@x.org" }, message: Array("c\(mail)\(copy)".utf8))
                })
            }
            for run in 0..<12 {
                let report = try await courier.deliver(ignoringSchedule: true)
                #expect(!report.busy)
                if run % 4 == 3 {  // now and then the person resends what failed
                    for entry in try outbox.entries() where entry.state == .failed { _ = try? outbox.resend(entry.id) }
                }
            }
            let taken = server.state.withLock { $0.taken }
            #expect(taken.values.allSatisfy { $0 == 1 }, "a recipient was given a copy twice")
            var recordedSent = 0
            for entry in try outbox.entries() {
                for recipient in entry.recipients where recipient.state == .sent {
                    recordedSent += 1
                    // "r{mail}{copy}{n}@x.org" was in the copy whose bytes are "c{mail}{copy}".
                    #expect(taken["c\(recipient.address.dropFirst().prefix(2))/\(recipient.address)"] == 1)
                }
                #expect(entry.state != .sending)
            }
            #expect(recordedSent == taken.count)
        }
    }

    @Test("a session that cannot open fails every copy of the run the same way, with one attempt, and no more sessions")
    func sessionFailure() async throws {
        try await withStore { outbox, _ in
            let server = ScriptedServer(seed: 1, openFailure: SubmissionFailure(.permanent, "authentication failed", endsSession: true))
            let courier = Courier(outbox: outbox, transport: server, sentFolder: nil)
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test", copies: [
                NewCopy(kind: "letter", recipients: ["b@x.org"], message: [1]),
                NewCopy(kind: "postcard", recipients: ["c@x.org", "d@x.org"], message: [2])])
            let report = try await courier.deliver()
            #expect(report.failed == 3 && report.delivered == 0 && report.pending == 0)
            #expect(report.reasons == ["authentication failed"])
            let entries = try outbox.entries()
            #expect(entries.allSatisfy { $0.state == .failed && $0.attempts == 1 && $0.lastError == "authentication failed" })
        }
    }

    @Test("no network: every copy stays pending with the reason and a later next try")
    func offline() async throws {
        try await withStore { outbox, _ in
            let server = ScriptedServer(seed: 1, openFailure: SubmissionFailure(.temporary, "cannot connect to localhost:587", endsSession: true))
            let courier = Courier(outbox: outbox, transport: server, sentFolder: nil)
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test", copies: [NewCopy(kind: "letter", recipients: ["b@x.org"], message: [1])])
            let report = try await courier.deliver()
            #expect(report.pending == 1)
            let entry = try #require(try outbox.entries().first)
            #expect(entry.state == .pending && entry.recipients[0].reason == "cannot connect to localhost:587")
            #expect((entry.nextTry ?? .distantPast) > Date())
            // Not due yet: a scheduled run leaves it alone, a flush tries it.
            #expect(try await courier.deliver().pending == 0)
            #expect(try await courier.deliver(ignoringSchedule: true).pending == 1)
        }
    }

    @Test("the own copy is filed in sent_maildir once, when all its recipients have it, then its bytes are dropped")
    func ownCopy() async throws {
        try await withStore { outbox, folder in
            let sent = SentFolder(path: folder + "/Sent")
            let courier = Courier(outbox: outbox, transport: ScriptedServer(seed: 5), sentFolder: sent)
            let mine = Array("the letter".utf8)
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test", copies: [
                NewCopy(kind: "letter", recipients: ["b@x.org", "c@x.org"], message: mine, isOwnCopy: true),
                NewCopy(kind: "postcard", recipients: ["d@x.org"], message: [2])])
            for _ in 0..<30 {
                _ = try await courier.deliver(ignoringSchedule: true)
                for entry in try outbox.entries() where entry.state == .failed { _ = try? outbox.resend(entry.id) }
            }
            let filed = try FileManager.default.contentsOfDirectory(atPath: folder + "/Sent/new")
            let own = try #require(try outbox.entries().first { $0.isOwnCopy })
            if own.state == .sent {
                #expect(filed.count == 1)
                #expect(FileManager.default.contents(atPath: folder + "/Sent/new/" + filed[0]).map(Array.init) == mine)
                #expect(try outbox.unfiledOwnCopy(own.id) == nil)
            } else {
                #expect(filed.isEmpty)
            }
        }
    }

    /// Runs at a clock that jumps forward by a random 0 to 3 days, with new
    /// mail now and then and random server answers: after each run, a copy
    /// is gone exactly when it was sent `keep` or longer ago; pending and
    /// failed copies stay whatever their age.
    @Test("sent copies leave the outbox keep_sent_days after they were sent, and nothing else does", arguments: 0..<6)
    func purgeSent(seed: Int) async throws {
        try await withStore { outbox, _ in
            var random = SeededRandom(seed: UInt64(seed) + 101)
            let keepDays = [0, 1, 2, 7][seed % 4]
            let keep = TimeInterval(keepDays) * 86400
            let server = ScriptedServer(seed: UInt64(seed) + 3)
            let courier = Courier(outbox: outbox, transport: server, sentFolder: nil, keepSent: keep)
            var clock = Date(timeIntervalSince1970: 1_800_000_000)
            var sentAt: [Int64: Date] = [:]
            // What the server took tells when a copy was sent, whatever the outbox says.
            var takenKeys: [Int64: [String]] = [:]
            for run in 0..<16 {
                if run % 3 == 0 {
                    let copies = (0..<2).map { copy in
                        NewCopy(kind: "letter", recipients: (0..<2).map { "r\(run)\(copy)\($0)@x.org" }, message: Array("c\(run)\(copy)".utf8))
                    }
                    let ids = try outbox.enqueue(sender: "a@x.org", messageID: "m\(run)", origin: "test", copies: copies, now: clock)
                    for (id, copy) in zip(ids, copies) {
                        takenKeys[id] = copy.recipients.map { "\(String(decoding: copy.message, as: UTF8.self))/\($0)" }
                    }
                }
                let now = clock
                _ = try await courier.deliver(ignoringSchedule: true, now: { now })
                let taken = server.state.withLock { $0.taken }
                for (id, keys) in takenKeys where sentAt[id] == nil && keys.allSatisfy({ taken[$0] != nil }) { sentAt[id] = now }
                let present = Dictionary(uniqueKeysWithValues: try outbox.entries().map { ($0.id, $0) })
                for id in takenKeys.keys {
                    if let sent = sentAt[id], now.timeIntervalSince(sent) >= keep {
                        #expect(present[id] == nil, "copy \(id) sent \(now.timeIntervalSince(sent) / 86400) days ago is still listed (keep \(keepDays))")
                    } else {
                        #expect(present[id] != nil, "copy \(id) went although it was not sent \(keepDays) days ago")
                        #expect((present[id]?.state == .sent) == (sentAt[id] != nil))
                    }
                }
                for entry in try outbox.entries() where entry.state == .failed && Bool.random(using: &random) {
                    _ = try? outbox.resend(entry.id, now: now)
                }
                clock = clock.addingTimeInterval(TimeInterval(Int.random(in: 0...(3 * 24), using: &random)) * 3600)
            }
            // Every mail left has a copy; every copy its recipients (nothing half removed).
            let counts = try await outbox.store.database.read { db in
                (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxMail m WHERE NOT EXISTS (SELECT 1 FROM outboxCopy c WHERE c.outboxMailId = m.id)") ?? -1,
                 try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxRecipient r WHERE NOT EXISTS (SELECT 1 FROM outboxCopy c WHERE c.id = r.outboxCopyId)") ?? -1)
            }
            #expect(counts.0 == 0 && counts.1 == 0)
            #expect(!sentAt.isEmpty, "no copy was ever sent: the test proved nothing")
        }
    }

    /// The crash between the rename into new/ and the outbox's note that the
    /// copy is filed: the next run filed it a second time. (A reader may also
    /// have moved it to cur/ with flags meanwhile.)
    @Test("an own copy filed by a run that died before noting it is not filed again", arguments: ["new", "cur"])
    func ownCopyAfterCrash(moved: String) async throws {
        try await withStore { outbox, folder in
            let sent = SentFolder(path: folder + "/Sent")
            let mine = Array("the letter".utf8)
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test", copies: [
                NewCopy(kind: "letter", recipients: ["b@x.org"], message: mine, isOwnCopy: true)])
            // Delivered by a run without the folder: sent, not yet filed.
            let server = ScriptedServer(seed: 1)
            for _ in 0..<20 where try outbox.entries()[0].state != .sent {
                _ = try await Courier(outbox: outbox, transport: server, sentFolder: nil).deliver(ignoringSchedule: true)
                for entry in try outbox.entries() where entry.state == .failed { _ = try? outbox.resend(entry.id) }
            }
            let entry = try outbox.entries()[0]
            try #require(entry.state == .sent)
            // The dead run's filing: renamed into new/ (and perhaps read), never noted.
            let courier = Courier(outbox: outbox, transport: server, sentFolder: sent)
            let path = try sent.file(mine, key: courier.filingKey(entry))
            if moved == "cur" { #expect(rename(path, path.replacingOccurrences(of: "/new/", with: "/cur/") + ":2,S") == 0) }
            _ = try await courier.deliver(ignoringSchedule: true)
            let filed = try FileManager.default.contentsOfDirectory(atPath: folder + "/Sent/new")
                + FileManager.default.contentsOfDirectory(atPath: folder + "/Sent/cur")
            #expect(filed.count == 1, "\(filed)")
            #expect(try outbox.unfiledOwnCopy(entry.id) == nil)
        }
    }

    @Test("while another process delivers, a run waits, then reports busy and leaves the copies queued")
    func busy() async throws {
        try await withStore { outbox, _ in
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test", copies: [NewCopy(kind: "letter", recipients: ["b@x.org"], message: [1])])
            let held = try DeliveryLock(folder: outbox.store.folder, wait: 0)
            #expect(held != nil)
            let report = try await Courier(outbox: outbox, transport: ScriptedServer(seed: 1), sentFolder: nil).deliver(lockWait: 0.2)
            #expect(report.busy)
            #expect(try outbox.entries().first?.state == .pending)
            withExtendedLifetime(held) {}
        }
    }
}
