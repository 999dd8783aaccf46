import Foundation
import GRDB
import Store
import Synchronization

/// The outbox could not be read or written. Never carries mail content.
public struct OutboxError: Error, Sendable, CustomStringConvertible {
    /// One line naming the problem, without mail content.
    public let description: String
    /// True when trying again may succeed (the outbox changed under a step);
    /// false when the step itself is refused (no such copy, a wrong state).
    public let isConflict: Bool

    /// An error saying `description`; `conflict`: trying again may succeed.
    public init(_ description: String, conflict: Bool = false) {
        self.description = description
        isConflict = conflict
    }
}

/// The outbox: every written copy of a mail, stored durably before the first
/// connection is opened, with the state of each of its recipients.
///
/// A delivery run (see `Sending`) takes the ``DeliveryLock``, calls
/// ``recoverInterrupted()``, then for each copy ``claim(now:ignoringSchedule:only:)``
/// (its pending recipients become `sending`), hands it to the server and
/// ``record(_:outcomes:)`` the server's answer per recipient. Each step is one
/// transaction, committed durably before the next network step.
public final class Outbox: Sendable {
    /// The local store holding the outbox's tables.
    public let store: LocalStore
    /// When temporarily failed copies are tried again.
    public let backoff: Backoff
    private let listeners = Mutex<[UUID: AsyncStream<OutboxChange>.Continuation]>([:])

    /// The outbox in `store`, retrying by `backoff`.
    public init(store: LocalStore, backoff: Backoff = .standard) {
        self.store = store
        self.backoff = backoff
    }

    var database: DatabasePool { store.database }

    func run<T>(_ what: String, _ body: () throws -> T) throws(OutboxError) -> T {
        do { return try body() } catch let error as OutboxError {
            throw error
        } catch {
            throw OutboxError("cannot \(what) the outbox (\(LocalStore.describe(error)))")
        }
    }

    // MARK: Adding

    /// Stores the copies of one mail, all or none, and returns their ids.
    /// When this returns, they are on disk (synchronous = FULL). `source` is
    /// what the mail was made from, sealed by the caller (a compose session's
    /// draft, encrypted to the sender's own key); it is kept until every
    /// recipient has the mail, for ``takeBack(_:)``.
    @discardableResult
    public func enqueue(sender: String, messageID: String?, origin: String, copies: [NewCopy], source: [UInt8]? = nil,
                        now: Date = Date()) throws(OutboxError) -> [Int64] {
        try enqueue(sender: sender, messageID: messageID, origin: origin, copies: copies, source: source, now: now, alongside: nil)
    }

    /// ``enqueue(sender:messageID:origin:copies:source:now:)`` that also runs
    /// `alongside` in the same transaction (the contacts note whom the mail
    /// went to and which key each letter had): all of it is stored, or none.
    @discardableResult
    package func enqueue(sender: String, messageID: String?, origin: String, copies: [NewCopy], source: [UInt8]? = nil,
                         now: Date = Date(), alongside: ((Database) throws -> Void)?) throws(OutboxError) -> [Int64] {
        let ids: [Int64] = try run("write") {
            try database.write { db in
                try alongside?(db)
                try db.execute(sql: "INSERT INTO outboxMail (created, envelopeSender, messageID, origin, source) VALUES (?, ?, ?, ?, ?)",
                               arguments: [now.timeIntervalSince1970, sender, messageID, origin, source.map { Data($0) }])
                let mail = db.lastInsertedRowID
                var ids: [Int64] = []
                for (position, copy) in copies.enumerated() {
                    try db.execute(sql: """
                        INSERT INTO outboxCopy (outboxMailId, position, kind, message, isOwnCopy, nextTry)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """, arguments: [mail, position, copy.kind, Data(copy.message), copy.isOwnCopy, now.timeIntervalSince1970])
                    let id = db.lastInsertedRowID
                    for address in copy.recipients {
                        try db.execute(sql: "INSERT INTO outboxRecipient (outboxCopyId, address, state) VALUES (?, ?, 'pending')",
                                       arguments: [id, address])
                    }
                    ids.append(id)
                }
                return ids
            }
        }
        publish(ids)
        return ids
    }

    // MARK: Reading

    /// Every copy in the outbox, oldest first.
    public func entries() throws(OutboxError) -> [OutboxEntry] {
        try run("read") { try database.read { db in try Self.entries(db, where: nil) } }
    }

    /// The copy with this id, or nil.
    public func entry(_ id: Int64) throws(OutboxError) -> OutboxEntry? {
        try run("read") { try database.read { db in try Self.entries(db, where: id).first } }
    }

    /// How many recipients wait in each state, over the whole outbox.
    public func counts() throws(OutboxError) -> [DeliveryState: Int] {
        try run("read") {
            try database.read { db in
                var counts: [DeliveryState: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM outboxRecipient GROUP BY state") {
                    if let state = DeliveryState(rawValue: row["state"]) { counts[state] = row["n"] }
                }
                return counts
            }
        }
    }

    /// The earliest next try of any pending copy.
    public func nextTry() throws(OutboxError) -> Date? {
        try run("read") {
            try database.read { db in
                try Double.fetchOne(db, sql: """
                    SELECT MIN(c.nextTry) FROM outboxCopy c
                    WHERE EXISTS (SELECT 1 FROM outboxRecipient r WHERE r.outboxCopyId = c.id AND r.state = 'pending')
                    AND NOT \(Self.waitsForNotice("c"))
                    """).map { Date(timeIntervalSince1970: $0) }
            }
        }
    }

    /// SQL: the postcard `copy` (an alias of outboxCopy) belongs to a mail
    /// whose password notice is not delivered yet. Such a postcard is never
    /// claimed: its recipients would get a link they cannot open.
    static func waitsForNotice(_ copy: String) -> String {
        """
        (\(copy).kind = 'postcard' AND EXISTS (SELECT 1 FROM outboxCopy n JOIN outboxRecipient nr ON nr.outboxCopyId = n.id
            WHERE n.outboxMailId = \(copy).outboxMailId AND n.kind = '\(NewCopy.noticeKind)' AND nr.state != 'sent'))
        """
    }

    /// Each mail's password notice that is not delivered yet, by mail id.
    static func undeliveredNotices(_ db: Database) throws -> [Int64: Int64] {
        var notices: [Int64: Int64] = [:]
        for row in try Row.fetchAll(db, sql: """
            SELECT n.outboxMailId, MIN(n.id) AS id FROM outboxCopy n WHERE n.kind = ?
            AND EXISTS (SELECT 1 FROM outboxRecipient r WHERE r.outboxCopyId = n.id AND r.state != 'sent')
            GROUP BY n.outboxMailId
            """, arguments: [NewCopy.noticeKind]) {
            notices[row["outboxMailId"]] = row["id"]
        }
        return notices
    }

    static func entries(_ db: Database, where id: Int64?) throws -> [OutboxEntry] {
        let copies = try Row.fetchAll(db, sql: """
            SELECT c.id, c.outboxMailId, c.kind, c.isOwnCopy, c.attempts, c.lastError, c.nextTry,
                   m.created, m.envelopeSender, m.messageID
            FROM outboxCopy c JOIN outboxMail m ON m.id = c.outboxMailId
            \(id == nil ? "" : "WHERE c.id = ?")
            ORDER BY m.created, c.outboxMailId, c.position
            """, arguments: id.map { [$0] } ?? [])
        var recipients: [Int64: [OutboxRecipient]] = [:]
        for row in try Row.fetchAll(db, sql: """
            SELECT outboxCopyId, address, state, reason FROM outboxRecipient
            \(id == nil ? "" : "WHERE outboxCopyId = ?") ORDER BY id
            """, arguments: id.map { [$0] } ?? []) {
            let state = DeliveryState(rawValue: row["state"]) ?? .failed
            recipients[row["outboxCopyId"], default: []].append(
                OutboxRecipient(address: row["address"], state: state, reason: row["reason"]))
        }
        let notices = try undeliveredNotices(db)
        return copies.map { row in
            let mine = recipients[row["id"]] ?? []
            let kind: String = row["kind"]
            let waiting = mine.contains { $0.state == .pending }
            return OutboxEntry(id: row["id"], mailID: row["outboxMailId"],
                               created: Date(timeIntervalSince1970: row["created"]), kind: kind,
                               envelopeSender: row["envelopeSender"], messageID: row["messageID"], recipients: mine,
                               attempts: row["attempts"], lastError: row["lastError"],
                               nextTry: waiting ? Date(timeIntervalSince1970: row["nextTry"]) : nil,
                               isOwnCopy: row["isOwnCopy"],
                               waitingFor: kind == "postcard" ? notices[row["outboxMailId"]] : nil)
        }
    }

    // MARK: Delivering

    /// After a crash: recipients left `sending` go back to `pending`, to be
    /// sent again. Call it holding the ``DeliveryLock`` (only the holder sends,
    /// so a `sending` row then belongs to a process that died).
    ///
    /// This is the RFC 1047 window: if the process died after the server had
    /// received the final "." of DATA but before its 250 was recorded, the
    /// server delivered the copy and it goes out once more — at most one
    /// duplicate per recipient per crash, and only for a crash in that window
    /// (between the end of the data and the commit of the server's answer).
    /// A crash anywhere else loses nothing and duplicates nothing: before the
    /// final "." the server discards the unfinished transaction.
    @discardableResult
    public func recoverInterrupted() throws(OutboxError) -> Int {
        let (count, ids): (Int, [Int64]) = try run("repair") {
            try database.write { db in
                let ids = try Int64.fetchAll(db, sql: "SELECT DISTINCT outboxCopyId FROM outboxRecipient WHERE state = 'sending'")
                try db.execute(sql: """
                    UPDATE outboxRecipient SET state = 'pending',
                        reason = 'interrupted while sending; sent again (a duplicate is possible if it was interrupted after the data)'
                    WHERE state = 'sending'
                    """)
                return (db.changesCount, ids)
            }
        }
        publish(ids)
        return count
    }

    /// Claims the next copy to send: its pending recipients become `sending`.
    /// Only copies whose next try has come, unless `ignoringSchedule`
    /// (`outbox flush`, or the network just came back); with `only`, only those ids.
    /// Never a postcard whose mail's password notice is not delivered yet
    /// (``OutboxEntry/waitingFor``): it stays pending, and is claimable in
    /// the same run once the notice was accepted.
    public func claim(now: Date = Date(), ignoringSchedule: Bool = false, only: Set<Int64>? = nil,
                      skipping: Set<Int64> = []) throws(OutboxError) -> ClaimedCopy? {
        let claimed: ClaimedCopy? = try run("update") {
            try database.write { db in
                let candidates = try Row.fetchAll(db, sql: """
                    SELECT c.id, c.kind, c.message, c.isOwnCopy, c.nextTry, m.envelopeSender
                    FROM outboxCopy c JOIN outboxMail m ON m.id = c.outboxMailId
                    WHERE EXISTS (SELECT 1 FROM outboxRecipient r WHERE r.outboxCopyId = c.id AND r.state = 'pending')
                    AND NOT \(Self.waitsForNotice("c"))
                    ORDER BY m.created, c.outboxMailId, c.position
                    """)
                for row in candidates {
                    let id: Int64 = row["id"]
                    if skipping.contains(id) || !(only?.contains(id) ?? true) { continue }
                    if !ignoringSchedule && (row["nextTry"] as Double) > now.timeIntervalSince1970 { continue }
                    let recipients = try String.fetchAll(db, sql: """
                        SELECT address FROM outboxRecipient WHERE outboxCopyId = ? AND state = 'pending' ORDER BY id
                        """, arguments: [id])
                    try db.execute(sql: "UPDATE outboxRecipient SET state = 'sending' WHERE outboxCopyId = ? AND state = 'pending'",
                                   arguments: [id])
                    let message: Data = row["message"] ?? Data()
                    return ClaimedCopy(id: id, kind: row["kind"], envelopeSender: row["envelopeSender"],
                                       recipients: recipients, message: Array(message), isOwnCopy: row["isOwnCopy"])
                }
                return nil
            }
        }
        if let claimed { publish([claimed.id]) }
        return claimed
    }

    /// Records how a delivery attempt went for each claimed recipient (a
    /// recipient missing from `outcomes` counts as a temporary failure).
    /// Returns the copy as it is now.
    @discardableResult
    public func record(_ copy: ClaimedCopy, outcomes: [String: RecipientOutcome], now: Date = Date())
        throws(OutboxError) -> OutboxEntry? {
        try run("update") {
            try database.write { db in
                let created = try Double.fetchOne(db, sql: """
                    SELECT m.created FROM outboxMail m JOIN outboxCopy c ON c.outboxMailId = m.id WHERE c.id = ?
                    """, arguments: [copy.id]) ?? now.timeIntervalSince1970
                let attempts = (try Int.fetchOne(db, sql: "SELECT attempts FROM outboxCopy WHERE id = ?", arguments: [copy.id]) ?? 0) + 1
                let expired = now.timeIntervalSince1970 - created >= backoff.giveUp
                var lastError: String?
                for address in copy.recipients {
                    let outcome = outcomes[address] ?? .temporary("no answer for this recipient")
                    let (state, reason): (DeliveryState, String?)
                    switch outcome {
                    case .accepted: (state, reason) = (.sent, nil)
                    case .permanent(let why): (state, reason) = (.failed, why)
                    case .temporary(let why) where expired:
                        (state, reason) = (.failed, "gave up after \(Int(backoff.giveUp / 86400)) days: \(why)")
                    case .temporary(let why): (state, reason) = (.pending, why)
                    }
                    if let reason { lastError = reason }
                    try db.execute(sql: "UPDATE outboxRecipient SET state = ?, reason = ? WHERE outboxCopyId = ? AND address = ? AND state = 'sending'",
                                   arguments: [state.rawValue, reason, copy.id, address])
                }
                let next = now.addingTimeInterval(backoff.delay(after: attempts)).timeIntervalSince1970
                try db.execute(sql: "UPDATE outboxCopy SET attempts = ?, lastError = ?, nextTry = ? WHERE id = ?",
                               arguments: [attempts, lastError, next, copy.id])
                try Self.settle(db, copy.id, now: now)
            }
        }
        publish([copy.id])
        let entry = try entry(copy.id)
        // A delivered notice's bytes (a plain one holds the password) were dropped: not in the WAL either.
        if copy.kind == NewCopy.noticeKind, entry?.state == .sent { store.forgetOldPages() }
        return entry
    }

    /// Once every recipient of a copy is sent (and the own copy was filed),
    /// its bytes are dropped: the outbox keeps no mail it no longer needs.
    /// (For a password notice, ``record(_:outcomes:now:)`` then also clears
    /// the WAL: ``LocalStore/forgetOldPages()``.)
    private static func settle(_ db: Database, _ id: Int64, now: Date) throws {
        let open = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outboxRecipient WHERE outboxCopyId = ? AND state != 'sent'",
                                    arguments: [id]) ?? 0
        guard open == 0 else { return }
        try db.execute(sql: "UPDATE outboxCopy SET sentAt = COALESCE(sentAt, ?), lastError = NULL WHERE id = ?",
                       arguments: [now.timeIntervalSince1970, id])
        try db.execute(sql: "UPDATE outboxCopy SET message = NULL WHERE id = ? AND (isOwnCopy = 0 OR filed = 1)", arguments: [id])
        // Every recipient of the whole mail has it: its source is not needed any more.
        try db.execute(sql: """
            UPDATE outboxMail SET source = NULL WHERE id = (SELECT outboxMailId FROM outboxCopy WHERE id = ?)
            AND NOT EXISTS (SELECT 1 FROM outboxRecipient r JOIN outboxCopy c ON c.id = r.outboxCopyId
                            WHERE c.outboxMailId = outboxMail.id AND r.state != 'sent')
            """, arguments: [id])
    }

    /// The bytes of a delivered own copy not yet filed in `sent_maildir`.
    public func unfiledOwnCopy(_ id: Int64) throws(OutboxError) -> [UInt8]? {
        try run("read") {
            try database.read { db in
                try Data.fetchOne(db, sql: """
                    SELECT message FROM outboxCopy WHERE id = ? AND isOwnCopy = 1 AND filed = 0 AND message IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM outboxRecipient WHERE outboxCopyId = ? AND state != 'sent')
                    """, arguments: [id, id]).map { Array($0) }
            }
        }
    }

    /// Marks the own copy as filed (and drops its bytes).
    public func markFiled(_ id: Int64) throws(OutboxError) {
        try run("update") {
            try database.write { db in
                try db.execute(sql: "UPDATE outboxCopy SET filed = 1 WHERE id = ?", arguments: [id])
                try Self.settle(db, id, now: Date())
            }
        }
    }

    // MARK: The person's actions

    /// `resend`: the failed recipients of copy `id` are pending again, due now.
    /// Returns how many; throws when there is no such copy or nothing failed
    /// (for a postcard held for its password notice, naming the notice).
    @discardableResult
    public func resend(_ id: Int64, now: Date = Date()) throws(OutboxError) -> Int {
        let count: Int = try run("update") {
            try database.write { db in
                guard try Int.fetchOne(db, sql: "SELECT 1 FROM outboxCopy WHERE id = ?", arguments: [id]) != nil else {
                    throw OutboxError("no copy \(id) in the outbox")
                }
                try db.execute(sql: "UPDATE outboxRecipient SET state = 'pending', reason = NULL WHERE outboxCopyId = ? AND state = 'failed'",
                               arguments: [id])
                let count = db.changesCount
                if count == 0, let notice = try Self.entries(db, where: id).first?.waitingFor {
                    throw OutboxError("copy \(id) waits for the password notice (copy \(notice)); resend copy \(notice), "
                                      + "and it goes right after it")
                }
                guard count > 0 else { throw OutboxError("copy \(id) has no failed recipient to send again") }
                try db.execute(sql: "UPDATE outboxCopy SET nextTry = ?, attempts = 0, lastError = NULL WHERE id = ?",
                               arguments: [now.timeIntervalSince1970, id])
                return count
            }
        }
        publish([id])
        return count
    }

    /// `discard`: copy `id` is removed for good (with its mail, once that has
    /// no copies left). A copy being sent right now cannot be discarded.
    /// Discarding a password notice that was not delivered also discards the
    /// postcards waiting for it: without the password their link opens
    /// nothing, and the password is in no other place. Returns the ids removed.
    @discardableResult
    public func discard(_ id: Int64) throws(OutboxError) -> [Int64] {
        let removed: [Int64] = try run("update") {
            try database.write { db in
                guard let row = try Row.fetchOne(db, sql: "SELECT outboxMailId, kind FROM outboxCopy WHERE id = ?", arguments: [id]) else {
                    throw OutboxError("no copy \(id) in the outbox")
                }
                let mail: Int64 = row["outboxMailId"]
                var ids = [id]
                if (row["kind"] as String) == NewCopy.noticeKind, try Self.undeliveredNotices(db)[mail] == id {
                    ids += try Int64.fetchAll(db, sql: """
                        SELECT c.id FROM outboxCopy c WHERE c.outboxMailId = ? AND c.kind = 'postcard'
                        AND NOT EXISTS (SELECT 1 FROM outboxRecipient r WHERE r.outboxCopyId = c.id AND r.state = 'sent')
                        ORDER BY c.position
                        """, arguments: [mail])
                }
                for copy in ids {
                    if try Int.fetchOne(db, sql: "SELECT 1 FROM outboxRecipient WHERE outboxCopyId = ? AND state = 'sending'",
                                        arguments: [copy]) != nil {
                        throw OutboxError("copy \(copy) is being sent right now; try again when it is done")
                    }
                    try db.execute(sql: "DELETE FROM outboxRecipient WHERE outboxCopyId = ?", arguments: [copy])
                    try db.execute(sql: "DELETE FROM outboxCopy WHERE id = ?", arguments: [copy])
                }
                try db.execute(sql: "DELETE FROM outboxMail WHERE id = ? AND NOT EXISTS (SELECT 1 FROM outboxCopy WHERE outboxMailId = ?)",
                               arguments: [mail, mail])
                return ids
            }
        }
        store.forgetOldPages()  // what was discarded (a notice's password) is not in the WAL either
        for copy in removed { notify(.removed(id: copy)) }
        return removed
    }

    /// Removes copies sent `age` or more ago (their bytes went already; an
    /// own copy not yet filed in `sent_maildir` stays). Pending and failed
    /// copies are never removed here. Returns how many copies went.
    @discardableResult
    public func purgeSent(olderThan age: TimeInterval, now: Date = Date()) throws(OutboxError) -> Int {
        let removed: [Int64] = try run("update") {
            try database.write { db in
                let cutoff = now.timeIntervalSince1970 - age
                let ids = try Int64.fetchAll(db, sql: "SELECT id FROM outboxCopy WHERE sentAt <= ? AND message IS NULL",
                                             arguments: [cutoff])
                guard !ids.isEmpty else { return [] }
                try db.execute(sql: "DELETE FROM outboxRecipient WHERE outboxCopyId IN (SELECT id FROM outboxCopy WHERE sentAt <= ? AND message IS NULL)",
                               arguments: [cutoff])
                try db.execute(sql: "DELETE FROM outboxCopy WHERE sentAt <= ? AND message IS NULL", arguments: [cutoff])
                try db.execute(sql: "DELETE FROM outboxMail WHERE NOT EXISTS (SELECT 1 FROM outboxCopy WHERE outboxMailId = outboxMail.id)")
                return ids
            }
        }
        for id in removed { notify(.removed(id: id)) }
        return removed.count
    }

    // MARK: Changes

    /// The changes this process makes to the outbox, from now on. (Another
    /// process's changes show in ``entries()``.)
    public func changes() -> AsyncStream<OutboxChange> {
        let (stream, continuation) = AsyncStream<OutboxChange>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let key = UUID()
        listeners.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.removeValue(forKey: key) } }
        return stream
    }

    private func publish(_ ids: [Int64]) {
        guard !listeners.withLock({ $0.isEmpty }) else { return }
        for id in ids {
            if let entry = try? entry(id) { notify(.updated(entry)) }
        }
    }

    func notify(_ change: OutboxChange) {
        for continuation in listeners.withLock({ Array($0.values) }) { continuation.yield(change) }
    }
}
