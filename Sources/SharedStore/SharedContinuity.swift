import Foundation
import Pipeline
import PostgresNIO
import Synchronization

/// Key continuity in the shared database: the key each recipient last got a
/// letter with, the same for every node.
///
/// Updates only move forward. Each address's row has a generation, raised by
/// every change. ``remembered(_:)`` notes, for the calling thread, the
/// generation it saw (a mail is decided and recorded on one thread: a
/// resident filter's worker, the pipe filter's), and ``record(_:fingerprint:)``
/// changes the row only if it is still at that generation. A node whose view
/// is older (another node recorded, or forgot, since it read) is refused
/// with a ``KeyContinuityError``, so its mail is deferred (75) and decided
/// again on the next try against the newer record; it never overwrites it.
/// Recording the fingerprint the row already holds is no change and
/// succeeds. ``forget(_:)`` leaves the row without a fingerprint, at a new
/// generation, so a view from before the forgetting is refused too.
package final class SharedContinuity: KeyContinuityStore {
    let database: SharedDatabase
    /// Per thread (its pthread), the generation each address had when that
    /// thread last read it; 0 for no row.
    private let views = Mutex([UInt: [String: Int64]]())

    /// Key continuity in `database`.
    package init(_ database: SharedDatabase) { self.database = database }

    private static var thread: UInt { UInt(pthread_self()) }

    private func failure(_ error: SharedStoreFailure) -> KeyContinuityError {
        KeyContinuityError(description: "key continuity: " + error.description)
    }

    private func run(_ query: PostgresQuery) throws(KeyContinuityError) -> PostgresQueryResult {
        do { return try database.run(query) } catch { throw failure(error) }
    }

    private func note(_ address: String, _ generation: Int64) {
        let thread = Self.thread
        views.withLock { views in
            // A thread's views are bounded: one mail's recipients matter at a time.
            if views[thread, default: [:]].count > 10_000 { views[thread] = [:] }
            views[thread, default: [:]][address] = generation
        }
    }

    /// The remembered fingerprints of `addresses` that have a record, by lower-case address.
    package func remembered(_ addresses: [String]) throws(KeyContinuityError) -> [String: String] {
        let lower = Array(Set(addresses.map { $0.lowercased() }))
        guard !lower.isEmpty else { return [:] }
        let rows = try run("SELECT address, fingerprint, generation FROM key_continuity WHERE address = ANY(\(lower))")
        var found: [String: String] = [:]
        var seen = Set<String>()
        do {
            for row in rows {
                let (address, fingerprint, generation) = try row.decode((String, String?, Int64).self)
                seen.insert(address)
                note(address, generation)
                if let fingerprint { found[address] = fingerprint }
            }
        } catch {
            throw KeyContinuityError(description: "key continuity: the shared store \(database.settings.displayURL) holds a damaged record")
        }
        for address in lower where !seen.contains(address) { note(address, 0) }
        return found
    }

    /// Remembers that `address` got a letter to `fingerprint`, if nobody
    /// changed the record since this thread read it (see the type's notes).
    /// The view is used once: without one (the filter recording, on a
    /// retry, a letter an earlier try handed on) the record is only made
    /// where there is none, and one already there, newer than that letter's
    /// decision, stays as it is.
    package func record(_ address: String, fingerprint: String) throws(KeyContinuityError) {
        let address = address.lowercased(), fingerprint = fingerprint.uppercased()
        let view = views.withLock { $0[Self.thread]?.removeValue(forKey: address) }
        let changed = if let view, view > 0 {
            try run("""
                UPDATE key_continuity SET fingerprint = \(fingerprint), generation = generation + 1, updated = now()
                WHERE address = \(address) AND generation = \(view) RETURNING generation
                """)
        } else {
            try run("""
                INSERT INTO key_continuity (address, fingerprint, generation) VALUES (\(address), \(fingerprint), 1)
                ON CONFLICT (address) DO NOTHING RETURNING generation
                """)
        }
        if !changed.rows.isEmpty { return }
        guard view != nil else { return }
        // Changed since this thread read it: the same key is no change; another is newer than our view.
        let current = try run("SELECT fingerprint FROM key_continuity WHERE address = \(address)")
        if let row = current.first, let stored = try? row.decode(String?.self), stored == fingerprint { return }
        throw KeyContinuityError(description: "key continuity: the record of a recipient changed on another node since it was read; "
                                 + "it is kept, and the mail waits to be decided again")
    }

    /// Forgets `address` on purpose (the row stays, without a fingerprint,
    /// at a new generation); true when there was a fingerprint.
    package func forget(_ address: String) throws(KeyContinuityError) -> Bool {
        let address = address.lowercased()
        let rows = try run("""
            UPDATE key_continuity SET fingerprint = NULL, generation = generation + 1, updated = now()
            FROM (SELECT fingerprint AS before FROM key_continuity WHERE address = \(address)) AS old
            WHERE address = \(address) RETURNING old.before IS NOT NULL
            """)
        guard let row = rows.first else { return false }
        return (try? row.decode(Bool.self)) ?? false
    }
}
