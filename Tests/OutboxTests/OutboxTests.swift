import Foundation
import GRDB
import Outbox
import Store
import Synchronization
import Testing
import TestSupport

/// A store in a private temporary folder, removed afterwards.
func withOutbox<R>(backoff: Backoff = .standard, _ body: (Outbox, String) throws -> R) throws -> R {
    let folder = try makePrivateDirectory(prefix: "ms-outbox")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let store = try LocalStore(folder: folder + "/data")
    return try body(Outbox(store: store, backoff: backoff), folder + "/data")
}

func mode(_ path: String) -> mode_t {
    var info = stat()
    guard stat(path, &info) == 0 else { return 0xFFFF }
    return info.st_mode & 0o777
}

@Suite("Outbox")
struct OutboxTests {
    @Test("the store is a private folder of private files, also SQLite's own -wal and -shm")
    func privateFiles() throws {
        try withOutbox { outbox, folder in
            try outbox.enqueue(sender: "a@example.org", messageID: "m@x", origin: "test",
                               copies: [NewCopy(kind: "postcard", recipients: ["b@example.org"], message: Array("hi".utf8))])
            #expect(mode(folder) == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(files.contains("mailsec.sqlite"))
            for file in files { #expect(mode(folder + "/" + file) == 0o600, "\(file)") }
        }
    }

    @Test("a new store opened by several at once (send and outbox watch starting together, each its own connection): every one opens it, the tables made once; deleted content is overwritten (secure_delete)", arguments: 0..<4)
    func openedTogether(round: Int) throws {
        let folder = try makePrivateDirectory(prefix: "ms-store-race")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let openers = 6
        let failures = Mutex<[String]>([])
        let stores = Mutex<[LocalStore]>([])
        DispatchQueue.concurrentPerform(iterations: openers) { _ in
            do {
                let store = try LocalStore(folder: folder + "/data")
                stores.withLock { $0.append(store) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "round \(round): \(failures.withLock { $0 })")
        let store = try #require(stores.withLock { $0.first })
        let outbox = Outbox(store: store)
        try outbox.enqueue(sender: "a@example.org", messageID: "m@x", origin: "test",
                           copies: [NewCopy(kind: "postcard", recipients: ["b@example.org"], message: Array("hi".utf8))])
        #expect(try stores.withLock { $0 }.allSatisfy { try Outbox(store: $0).entries().count == 1 })
        let secure = try store.database.read { db in try Int.fetchOne(db, sql: "PRAGMA secure_delete") }
        #expect(secure == 1)
    }

    @Test("every commit is synced: the writer runs with synchronous = FULL (GRDB's WAL set-up would make it NORMAL)")
    func durableCommits() throws {
        let folder = try makePrivateDirectory(prefix: "ms-store-sync")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try LocalStore(folder: folder + "/data")
        let (mode, level) = try store.database.writeWithoutTransaction { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA synchronous"))
        }
        #expect(mode == "wal")
        #expect(level == 2, "synchronous is \(level.map(String.init) ?? "unknown"), not FULL (2)")
    }

    @Test("a store folder others can read is closed again; one of another kind is refused")
    func widenedFolder() throws {
        let folder = try makePrivateDirectory(prefix: "ms-outbox")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        mkdir(folder + "/data", 0o755)
        chmod(folder + "/data", 0o755)
        _ = try LocalStore(folder: folder + "/data")
        #expect(mode(folder + "/data") == 0o700)
        FileManager.default.createFile(atPath: folder + "/file", contents: Data())
        #expect(throws: LocalStoreError.self) { try LocalStore(folder: folder + "/file") }
        // Each refusal has its named code, and no other code matches it.
        symlink(folder + "/data", folder + "/link")
        for (path, expected) in [(folder + "/file", LocalStoreError.Code.folderNotMade), (folder + "/link", .notAFolder)] {
            var caught: LocalStoreError.Code?
            // Through an untyped closure: Swift 6.3 fails on a code pattern in a
            // catch of the typed `throws(LocalStoreError)` initialiser.
            let open: () throws -> LocalStore = { try LocalStore(folder: path) }
            do { _ = try open() } catch LocalStoreError.Code.otherOwner {
                caught = .otherOwner
            } catch LocalStoreError.Code.notAFolder {
                caught = .notAFolder
            } catch LocalStoreError.Code.folderNotMade {
                caught = .folderNotMade
            }
            #expect(caught == expected, "\(path)")
        }
    }

    @Test("what enqueue returned is there for another store opened on the same folder (durable, all copies)")
    func durable() throws {
        try withOutbox { outbox, folder in
            let ids = try outbox.enqueue(sender: "a@example.org", messageID: nil, origin: "test", copies: [
                NewCopy(kind: "letter", recipients: ["b@example.org", "c@example.org"], message: Array("L".utf8), isOwnCopy: true),
                NewCopy(kind: "postcard", recipients: ["d@example.org"], message: Array("P".utf8)),
            ])
            let again = Outbox(store: try LocalStore(folder: folder))
            let entries = try again.entries()
            #expect(entries.map(\.id) == ids)
            #expect(entries.map(\.kind) == ["letter", "postcard"])
            #expect(entries[0].recipients.map(\.address) == ["b@example.org", "c@example.org"])
            #expect(entries.allSatisfy { $0.state == .pending && $0.attempts == 0 })
            #expect(entries[0].isOwnCopy && !entries[1].isOwnCopy)
        }
    }

    @Test("one recipient refused (5xx) fails alone; resend makes only it pending again")
    func perRecipient() throws {
        try withOutbox { outbox, _ in
            let id = try outbox.enqueue(sender: "a@example.org", messageID: nil, origin: "test", copies: [
                NewCopy(kind: "postcard", recipients: ["b@x.org", "c@x.org", "d@x.org"], message: Array("P".utf8))])[0]
            let claimed = try #require(try outbox.claim())
            #expect(claimed.recipients == ["b@x.org", "c@x.org", "d@x.org"])
            #expect(try outbox.entry(id)?.state == .sending)
            let entry = try #require(try outbox.record(claimed, outcomes: [
                "b@x.org": .accepted, "c@x.org": .permanent("550 5.1.1 no such user"), "d@x.org": .accepted]))
            #expect(entry.state == .failed)
            #expect(entry.recipients.map(\.state) == [.sent, .failed, .sent])
            #expect(entry.recipients[1].reason == "550 5.1.1 no such user")
            #expect(try outbox.claim(ignoringSchedule: true) == nil)  // failed waits for the person
            #expect(try outbox.resend(id) == 1)
            let again = try #require(try outbox.claim())
            #expect(again.recipients == ["c@x.org"])
            let done = try outbox.record(again, outcomes: ["c@x.org": .accepted])
            #expect(done?.state == .sent)
            #expect(throws: OutboxError.self) { try outbox.resend(id) }  // nothing failed any more
        }
    }

    @Test("a temporary failure stays pending until its next try, which backs off; flush ignores the schedule")
    func backoff() throws {
        try withOutbox { outbox, _ in
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test",
                               copies: [NewCopy(kind: "postcard", recipients: ["b@x.org"], message: [1])], now: start)
            var now = start
            var delays: [TimeInterval] = []
            for _ in 0..<8 {
                let claimed = try #require(try outbox.claim(now: now))
                let entry = try #require(try outbox.record(claimed, outcomes: ["b@x.org": .temporary("421 busy")], now: now))
                #expect(entry.state == .pending)
                let next = try #require(entry.nextTry)
                delays.append(next.timeIntervalSince(now))
                #expect(try outbox.claim(now: next.addingTimeInterval(-1)) == nil)
                if let early = try outbox.claim(now: now, ignoringSchedule: true) {
                    try outbox.record(early, outcomes: ["b@x.org": .temporary("421 busy")], now: now)
                    // flush counted as an attempt too: recompute from the entry.
                }
                now = try #require(try outbox.entry(claimed.id)?.nextTry)
            }
            #expect(delays.first == 60)
            #expect(delays.allSatisfy { $0 >= 60 && $0 <= 3600 })
            #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
        }
    }

    @Test("after five days a temporary failure fails for good, with the reason kept")
    func giveUp() throws {
        try withOutbox { outbox, _ in
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test",
                               copies: [NewCopy(kind: "letter", recipients: ["b@x.org"], message: [1])], now: start)
            let late = start.addingTimeInterval(5 * 86400 + 1)
            let claimed = try #require(try outbox.claim(now: late))
            let entry = try outbox.record(claimed, outcomes: ["b@x.org": .temporary("connection refused")], now: late)
            #expect(entry?.state == .failed)
            #expect(entry?.recipients[0].reason?.contains("connection refused") == true)
        }
    }

    @Test("a crash while sending: the next delivery run finds the recipients sending and makes them pending again")
    func crashRecovery() throws {
        try withOutbox { outbox, folder in
            try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test",
                               copies: [NewCopy(kind: "postcard", recipients: ["b@x.org", "c@x.org"], message: [1])])
            _ = try #require(try outbox.claim())
            // The process "dies" here: a new one opens the store.
            let next = Outbox(store: try LocalStore(folder: folder))
            #expect(try next.claim(ignoringSchedule: true) == nil)
            #expect(try next.recoverInterrupted() == 2)
            let entry = try #require(try next.entries().first)
            #expect(entry.state == .pending)
            #expect(entry.recipients.allSatisfy { $0.reason?.contains("interrupted") == true })
            #expect(try next.claim()?.recipients == ["b@x.org", "c@x.org"])
        }
    }

    @Test("only one delivery lock at a time, and it is free again once dropped")
    func lock() throws {
        try withOutbox { _, folder in
            var first = try DeliveryLock(folder: folder, wait: 0)
            #expect(first != nil)
            #expect(try DeliveryLock(folder: folder, wait: 0.2) == nil)
            first = nil
            // A child another test forks in this process (GPGME forks, then closes what it inherited
            // before exec) may hold a copy of the dropped lock's descriptor for a moment: flock belongs
            // to the open file, so the lock is free once that copy is gone too.
            #expect(try DeliveryLock(folder: folder, wait: 5) != nil)
        }
    }

    /// A lock that is not taken returned nil after closing its descriptor, and its
    /// deinit (a class's runs when its init fails after every property is set) closed
    /// the same number again: by then, perhaps a descriptor another thread had just
    /// opened. Here a thread opens, checks and closes /dev/null as fast as it can while
    /// 20,000 locks fail: a close of its descriptor by anyone else shows as EBADF.
    @Test("a lock not taken closes its descriptor once: another thread's descriptors stay open")
    func failedLockClosesOnce() throws {
        try withOutbox { _, folder in
            let held = try DeliveryLock(folder: folder, wait: 0)
            #expect(held != nil)
            let stop = Mutex(false), broken = Mutex(0)
            let other = Thread {
                while !stop.withLock({ $0 }) {
                    let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
                    guard fd >= 0 else { continue }
                    for _ in 0..<3 where fcntl(fd, F_GETFD) == -1 { broken.withLock { $0 += 1 } }
                    if close(fd) != 0 { broken.withLock { $0 += 1 } }
                }
            }
            other.start()
            for _ in 0..<20_000 { _ = try DeliveryLock(folder: folder, wait: 0) }
            stop.withLock { $0 = true }
            while !other.isFinished { usleep(1_000) }
            #expect(broken.withLock { $0 } == 0, "descriptors of another thread were closed under it")
            withExtendedLifetime(held) {}
        }
    }

    @Test("discard removes a copy for good, not while it is being sent")
    func discard() throws {
        try withOutbox { outbox, _ in
            let ids = try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test", copies: [
                NewCopy(kind: "letter", recipients: ["b@x.org"], message: [1]),
                NewCopy(kind: "postcard", recipients: ["c@x.org"], message: [2])])
            let claimed = try #require(try outbox.claim())
            #expect(throws: OutboxError.self) { try outbox.discard(claimed.id) }
            try outbox.record(claimed, outcomes: ["b@x.org": .permanent("554 no")])
            try outbox.discard(ids[0])
            #expect(try outbox.entries().map(\.id) == [ids[1]])
            #expect(throws: OutboxError.self) { try outbox.discard(ids[0]) }
            try outbox.discard(ids[1])
            #expect(try outbox.entries().isEmpty)
        }
    }

    @Test("the change stream reports each state a copy passes through")
    func changes() async throws {
        let folder = try makePrivateDirectory(prefix: "ms-outbox")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let outbox = Outbox(store: try LocalStore(folder: folder + "/data"))
        let stream = outbox.changes()
        let id = try outbox.enqueue(sender: "a@x.org", messageID: nil, origin: "test",
                                    copies: [NewCopy(kind: "postcard", recipients: ["b@x.org"], message: [1])])[0]
        let claimed = try #require(try outbox.claim())
        try outbox.record(claimed, outcomes: ["b@x.org": .accepted])
        try outbox.discard(id)
        var seen: [String] = []
        for await change in stream {
            switch change {
            case .updated(let entry): seen.append(entry.state.rawValue)
            case .removed: seen.append("removed")
            }
            if seen.count == 4 { break }
        }
        #expect(seen == ["pending", "sending", "sent", "removed"])
    }

    /// Random runs of claims with random outcomes, crashes, resends and
    /// discards: no recipient is ever claimed again once sent, a claim holds
    /// exactly the pending recipients, and the states add up.
    @Test("random runs keep the invariants", arguments: 0..<12)
    func randomRuns(seed: Int) throws {
        var random = SeededRandom(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        try withOutbox { outbox, folder in
            var current = outbox
            var sentTo: [Int64: Set<String>] = [:]  // what the "server" took, per copy
            var discarded = Set<Int64>()
            var ids: [Int64] = []
            for mail in 0..<Int.random(in: 1...4, using: &random) {
                let copies = (0..<Int.random(in: 1...3, using: &random)).map { copy in
                    NewCopy(kind: ["letter", "postcard"].randomElement(using: &random)!,
                            recipients: (0..<Int.random(in: 1...4, using: &random)).map { "r\(mail)-\(copy)-\($0)@x.org" },
                            message: [UInt8](repeating: UInt8(mail), count: 10))
                }
                ids += try current.enqueue(sender: "a@x.org", messageID: nil, origin: "test", copies: copies)
            }
            for _ in 0..<60 {
                switch Int.random(in: 0..<10, using: &random) {
                case 0:  // crash mid-send: a new process recovers
                    _ = try current.claim(ignoringSchedule: true)
                    current = Outbox(store: try LocalStore(folder: folder))
                    try current.recoverInterrupted()
                case 1:
                    if let id = ids.randomElement(using: &random), !discarded.contains(id) {
                        _ = try? current.resend(id)
                    }
                case 2:
                    if let id = ids.randomElement(using: &random), !discarded.contains(id),
                       (try? current.discard(id)) != nil {
                        discarded.insert(id)
                    }
                default:
                    guard let claimed = try current.claim(ignoringSchedule: true) else { continue }
                    let before = try #require(try current.entry(claimed.id))
                    #expect(Set(claimed.recipients) == Set(before.recipients.filter { $0.state == .sending }.map(\.address)))
                    #expect(Set(claimed.recipients).isDisjoint(with: sentTo[claimed.id] ?? []), "a sent recipient claimed again")
                    var outcomes: [String: RecipientOutcome] = [:]
                    for address in claimed.recipients {
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0: outcomes[address] = .temporary("421 try later")
                        case 1: outcomes[address] = .permanent("550 no")
                        case 2: break  // no answer: temporary
                        default:
                            outcomes[address] = .accepted
                            sentTo[claimed.id, default: []].insert(address)
                        }
                    }
                    let after = try #require(try current.record(claimed, outcomes: outcomes))
                    for recipient in after.recipients {
                        #expect((recipient.state == .sent) == (sentTo[claimed.id]?.contains(recipient.address) ?? false))
                    }
                }
            }
            let entries = try current.entries()
            #expect(Set(entries.map(\.id)) == Set(ids).subtracting(discarded))
            #expect(entries.allSatisfy { $0.state != .sending })
            let counts = try current.counts()
            #expect(counts.values.reduce(0, +) == entries.map(\.recipients.count).reduce(0, +))
        }
    }
}
