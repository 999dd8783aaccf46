import Foundation
import SMTP

/// SMTP sessions to the re-injection address kept open between mails by a
/// resident filter, so that a mail pays neither the connection nor the
/// greeting and EHLO. A session is lent to one mail at a time and checked
/// with RSET before it carries the next mail; one the server closed in the
/// meantime is dropped and a new one opened — nothing of a copy was sent on
/// it, so the exactly-once rules are those of a fresh connection. A session
/// whose transaction failed is never returned (``Handover`` closes it).
package final class ReinjectionPool: @unchecked Sendable {
    // @unchecked: `idle` and `opening` are only touched under `lock`; a lent session belongs to one thread.
    private let lock = NSLock()
    private var idle: [(server: SMTPServer, connection: BlockingSMTPConnection)] = []
    /// Sessions being opened ahead (``openAhead(_:)``) and not yet waited for by ``take(_:)``.
    private var opening: [(server: SMTPServer, session: BlockingSMTPConnection.Opening)] = []
    /// At most this many idle sessions are kept (the rest are ended).
    package let capacity: Int

    /// A pool keeping at most `capacity` idle sessions (at least one).
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Opens a session to `server` now, on another thread, and keeps it for
    /// the next ``take(_:)`` of that server, which waits for it if it is still
    /// being opened. For the pipe filter: connecting, the greeting and EHLO
    /// happen while the mail is encrypted, not after. Nothing of a copy goes
    /// over it before it is taken (and checked with RSET, as any kept
    /// session), so a session that failed or was closed meanwhile is replaced
    /// by a new one, as if it had never been; a failed opening is simply
    /// forgotten (the new one reports the error). One never taken is ended
    /// by ``closeAll()`` if it is open by then, else by the process's exit.
    package func openAhead(_ server: SMTPServer) {
        let session = BlockingSMTPConnection.openInBackground(server) { opened in
            if case .success(let connection) = opened { self.lock.withLock { self.idle.append((server, connection)) } }
        }
        lock.withLock { opening.append((server, session)) }
    }

    /// A working session to `server`: a kept one that answers RSET, or a new one.
    func take(_ server: SMTPServer) throws(SMTPError) -> BlockingSMTPConnection {
        let pending = lock.withLock {
            defer { opening.removeAll { $0.server == server } }
            return opening.filter { $0.server == server }.map(\.session)
        }
        for session in pending { session.wait() }
        while let kept = pop(server) {
            do {
                try kept.reset()
                return kept
            } catch {
                kept.quit()  // closed already by the failed RSET; a new session follows
            }
        }
        return try BlockingSMTPConnection.open(server)
    }

    /// Takes back a session after a mail whose every transaction succeeded.
    func give(_ connection: BlockingSMTPConnection, _ server: SMTPServer) {
        lock.lock()
        let kept = idle.count < capacity
        if kept { idle.append((server, connection)) }
        lock.unlock()
        if !kept { connection.quit() }
    }

    /// Ends every idle session with QUIT (at shutdown).
    package func closeAll() {
        lock.lock()
        let all = idle
        idle.removeAll()
        lock.unlock()
        for item in all { item.connection.quit() }
    }

    private func pop(_ server: SMTPServer) -> BlockingSMTPConnection? {
        lock.lock()
        defer { lock.unlock() }
        guard let index = idle.lastIndex(where: { $0.server == server }) else { return nil }
        return idle.remove(at: index).connection
    }
}
