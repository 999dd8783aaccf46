import Foundation
import GRDB

/// A failed mail as `outbox edit` takes it back: its sealed source and who
/// already has it. Made by ``Outbox/takeBack(_:)``; nothing changes until
/// ``Outbox/commitTakeBack(_:alsoWrite:)``.
public struct TakeBack: Sendable {
    /// The copy named, and its mail.
    public let copyID: Int64
    /// The mail the copy belongs to.
    public let mailID: Int64
    /// What the mail was made from, as the caller sealed it at queue time.
    public let source: [UInt8]
    /// Recipients of any copy of the mail that the server accepted already
    /// (lowercased): a draft made from the source must leave them out, or
    /// they would get the mail twice. The password notice does not count.
    public let delivered: Set<String>
    /// Every recipient row of the mail with its state, as read: the commit
    /// goes ahead only when nothing changed in between.
    let states: [String]
}

extension Outbox {
    /// Reads what taking copy `id` back into a draft needs. Refused with one
    /// line: no such copy; a copy that is not `failed` (being sent, sent,
    /// still pending); a copy of a mail another copy of which is being sent
    /// right now; a mail queued without a source (`send`, `sendmail`).
    public func takeBack(_ id: Int64) throws(OutboxError) -> TakeBack {
        try run("read") {
            try database.read { db in try Self.readTakeBack(db, id) }
        }
    }

    /// Takes the mail out of the outbox, in one transaction with `alsoWrite`
    /// (the draft made from it): every recipient that does not have it yet
    /// leaves (the password notice's and the postcards waiting for it too),
    /// a copy left without recipients goes, and the mail goes when
    /// none of its copies is left (else it keeps only what was delivered,
    /// without its source). Refused when the outbox changed since `takeBack`
    /// (a delivery run took a copy meanwhile): nothing is changed then.
    package func commitTakeBack(_ taken: TakeBack, alsoWrite: @escaping (Database) throws -> Void) throws(OutboxError) {
        try run("update") {
            try database.write { db in
                let now: TakeBack
                do { now = try Self.readTakeBack(db, taken.copyID) } catch let error as OutboxError {
                    throw OutboxError("the outbox changed meanwhile: " + error.description, conflict: true)
                }
                guard now.states == taken.states, now.source == taken.source else {
                    throw OutboxError("the outbox changed meanwhile (a delivery run took copy \(taken.copyID)'s mail); try again",
                                      conflict: true)
                }
                try db.execute(sql: """
                    DELETE FROM outboxRecipient WHERE state != 'sent'
                    AND outboxCopyId IN (SELECT id FROM outboxCopy WHERE outboxMailId = ?)
                    """, arguments: [taken.mailID])
                try db.execute(sql: """
                    DELETE FROM outboxCopy WHERE outboxMailId = ?
                    AND NOT EXISTS (SELECT 1 FROM outboxRecipient r WHERE r.outboxCopyId = outboxCopy.id)
                    """, arguments: [taken.mailID])
                // What is left was delivered: its bytes go, as for any copy sent.
                for copy in try Int64.fetchAll(db, sql: "SELECT id FROM outboxCopy WHERE outboxMailId = ?", arguments: [taken.mailID]) {
                    try db.execute(sql: "UPDATE outboxCopy SET sentAt = COALESCE(sentAt, ?), lastError = NULL WHERE id = ?",
                                   arguments: [Date().timeIntervalSince1970, copy])
                    try db.execute(sql: "UPDATE outboxCopy SET message = NULL WHERE id = ? AND (isOwnCopy = 0 OR filed = 1)",
                                   arguments: [copy])
                }
                try db.execute(sql: "UPDATE outboxMail SET source = NULL WHERE id = ?", arguments: [taken.mailID])
                try db.execute(sql: "DELETE FROM outboxMail WHERE id = ? AND NOT EXISTS (SELECT 1 FROM outboxCopy WHERE outboxMailId = ?)",
                               arguments: [taken.mailID, taken.mailID])
                try alsoWrite(db)
            }
        }
        store.forgetOldPages()  // the notice taken back (its password) is not in the WAL either
        notify(.removed(id: taken.copyID))
    }

    private static func readTakeBack(_ db: Database, _ id: Int64) throws -> TakeBack {
        guard let copy = try entries(db, where: id).first else { throw OutboxError("no copy \(id) in the outbox") }
        switch copy.state {
        case .failed: break
        case .sending: throw OutboxError("copy \(id) is being sent right now; it cannot be taken back")
        case .sent: throw OutboxError("copy \(id) was sent; there is nothing to take back")
        case .pending:
            if let notice = copy.waitingFor {
                throw OutboxError("copy \(id) waits for the password notice (copy \(notice)); take back copy \(notice) once it failed")
            }
            throw OutboxError("copy \(id) is pending, not failed (it is tried again); discard it, or wait until it fails")
        }
        let rows = try Row.fetchAll(db, sql: """
            SELECT r.id, r.address, r.state, c.kind FROM outboxRecipient r JOIN outboxCopy c ON c.id = r.outboxCopyId
            WHERE c.outboxMailId = ? ORDER BY r.id
            """, arguments: [copy.mailID])
        if rows.contains(where: { ($0["state"] as String) == DeliveryState.sending.rawValue }) {
            throw OutboxError("another copy of the same mail is being sent right now; try again when it is done")
        }
        guard let source = try Data.fetchOne(db, sql: "SELECT source FROM outboxMail WHERE id = ?", arguments: [copy.mailID]) else {
            throw OutboxError("copy \(id) keeps no source to edit (only mail written with 'mailsec compose' does); resend or discard it")
        }
        // The sender's password notice is not the mail: a sender who is also a recipient still lacks it.
        let delivered = Set(rows.filter { ($0["state"] as String) == DeliveryState.sent.rawValue && ($0["kind"] as String) != NewCopy.noticeKind }
            .map { ($0["address"] as String).lowercased() })
        return TakeBack(copyID: id, mailID: copy.mailID, source: Array(source), delivered: delivered,
                        states: rows.map { "\($0["id"] as Int64):\($0["state"] as String)" })
    }
}
