import Foundation
import GRDB

/// Room on the store's disk set aside before a copy's first byte is sent,
/// so that recording the server's answer never needs space the disk may no
/// longer have.
///
/// Recording a delivery writes to the WAL: the recipients' states, and, with
/// `secure_delete`, every page of the copy's bytes zeroed as they are
/// dropped — about as much as the copy itself. On a disk that filled while
/// the copy streamed, the server's 250 could not be recorded, the copy
/// stayed `sending`, and the next run sent it again. So a file
/// (`outbox.reserve`, 0600) holding what recording the answer may write —
/// the copy's bytes, its mail's source (dropped with the last copy) and
/// 128 KiB for the rest — is allocated before the copy is sent (when that
/// fails, nothing is sent: the copy goes back to `pending`), and given back
/// to the disk when recording the answer finds no room, before the one
/// retry of that record. As the filter's journal writes its intent up front
/// and marks in place.
extension Outbox {
    /// What the reserve holds when no copy is under way.
    static let baseReserve = 128 << 10

    /// The reserve's size for `copy`.
    package func reserveSize(for copy: ClaimedCopy) -> Int {
        let source = (try? database.read { db in
            try Int.fetchOne(db, sql: """
                SELECT COALESCE(length(m.source), 0) FROM outboxMail m JOIN outboxCopy c ON c.outboxMailId = m.id WHERE c.id = ?
                """, arguments: [copy.id])
        }) ?? 0
        return copy.message.count + source + Self.baseReserve
    }

    var reservePath: String { store.folder + "/outbox.reserve" }

    /// Makes sure the reserve holds `bytes` on the disk (`posix_fallocate`).
    package func reserveSpace(_ bytes: Int) throws(OutboxError) {
        let fd = open(reservePath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Self.noRoom(errno) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_size >= off_t(bytes), Int(info.st_blocks) * 512 >= bytes { return }
        let result = posix_fallocate(fd, 0, off_t(bytes))
        guard result == 0 else { throw Self.noRoom(result) }
    }

    private static func noRoom(_ code: Int32) -> OutboxError {
        OutboxError("no room on the store's disk to record a delivery (\(String(cString: strerror(code)))); nothing was sent, the mail stays queued: free some space")
    }

    /// Gives the reserve back to the disk, for a record that found no room.
    package func releaseReserve() { unlink(reservePath) }

    /// Back to its base size once a run is over (a large copy's reserve is not kept).
    package func shrinkReserve() { truncate(reservePath, off_t(Self.baseReserve)) }

    /// Records `outcomes` for `copy` (``record(_:outcomes:now:)``); when that
    /// fails, gives the reserve back and records once more.
    package func recordWithReserve(_ copy: ClaimedCopy, outcomes: [String: RecipientOutcome], now: Date)
        throws(OutboxError) -> OutboxEntry? {
        do {
            return try record(copy, outcomes: outcomes, now: now)
        } catch {
            releaseReserve()
            return try record(copy, outcomes: outcomes, now: now)
        }
    }

    /// A claimed copy that was not sent goes back to `pending` as it was
    /// (no attempt counted). Best effort: a copy left `sending` is made
    /// pending by the next run (``recoverInterrupted()``).
    package func unclaim(_ copy: ClaimedCopy) {
        _ = try? database.write { db in
            try db.execute(sql: "UPDATE outboxRecipient SET state = 'pending' WHERE outboxCopyId = ? AND state = 'sending'",
                           arguments: [copy.id])
        }
    }
}
