import Filter
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The keys an administrator publishes (`mailsec keys publish`) and every
/// resident filter follows (``KeyFeed``), in the table `published_keys`.
///
/// A publication is one statement, so one transaction: its rows, and the
/// NOTIFY on ``channel`` with the new revision, which PostgreSQL delivers at
/// commit. Publications are serialized by a transaction advisory lock taken
/// before the rows get their revisions, so revisions become visible in
/// their order: a node that read revision N never misses a smaller one
/// committed after.
package final class SharedKeys: KeyFeed {
    let database: SharedDatabase
    /// The NOTIFY channel.
    package static let channel = "mailsec_keys"
    /// The advisory lock publications take (beside the migrations' own).
    static let lockKey = SharedSchema.lockKey + 1

    /// The published keys in `database`.
    package init(_ database: SharedDatabase) { self.database = database }

    /// Publishes `rows` (a fingerprint with its armored public key, or nil
    /// for a removal) in order, in one transaction, and announces the last
    /// revision; returns it.
    package func publish(_ rows: [(fingerprint: String, armor: String?)]) throws(SharedStoreFailure) -> Int64 {
        guard !rows.isEmpty else { throw SharedStoreFailure(description: "nothing to publish") }
        let fingerprints = rows.map { $0.fingerprint.uppercased() }
        // An empty text stands for a removal: no armor is empty.
        let armors = rows.map { $0.armor ?? "" }
        let result = try database.run("""
            WITH serial AS (SELECT pg_advisory_xact_lock(\(Self.lockKey))),
            added AS (
                INSERT INTO published_keys (fingerprint, armor)
                SELECT f, NULLIF(a, '') FROM serial, unnest(\(fingerprints)::text[], \(armors)::text[]) WITH ORDINALITY AS u(f, a, n)
                ORDER BY n
                RETURNING revision
            )
            SELECT max(revision), pg_notify(\(Self.channel), max(revision)::text) FROM added
            """)
        guard let row = result.first, let (revision, _) = try? row.decode((Int64, String).self) else {
            throw SharedStoreFailure(description: "\(database.failure(SharedStoreFailure(description: "the publication was not confirmed")))")
        }
        return revision
    }

    /// The rows after `revision`, oldest first.
    package func changes(after revision: Int64, limit: Int) throws(KeyFeedError) -> [PublishedKey] {
        let rows: PostgresQueryResult
        do {
            rows = try database.run("""
                SELECT revision, fingerprint, armor FROM published_keys WHERE revision > \(revision) ORDER BY revision LIMIT \(limit)
                """)
        } catch { throw KeyFeedError(description: error.description) }
        var found: [PublishedKey] = []
        for row in rows {
            guard let (number, fingerprint, armor) = try? row.decode((Int64, String, String?).self) else {
                throw KeyFeedError(description: "the shared store \(database.settings.displayURL) holds a damaged published key")
            }
            found.append(PublishedKey(revision: number, fingerprint: fingerprint, armor: armor))
        }
        return found
    }

    /// LISTEN on a connection of its own, made again (after a pause) when
    /// it breaks; `notified` is called for every NOTIFY and once each time
    /// the LISTEN is in place, so what was announced while it was down is
    /// looked for. Futures and callbacks on NIO's event loop, no Swift
    /// concurrency task: a cooperative pool kept busy elsewhere never delays
    /// an announcement.
    package func follow(_ notified: @escaping @Sendable () -> Void) -> KeyFeedListening {
        let listening = Listening(database: database, notified: notified)
        listening.connect()
        return KeyFeedListening { listening.stop() }
    }

    /// One ``follow(_:)``: its connection, and whether it was stopped.
    private final class Listening: Sendable {
        let database: SharedDatabase
        let notified: @Sendable () -> Void
        let state = Mutex<(stopped: Bool, connection: PostgresConnection?)>((false, nil))

        init(database: SharedDatabase, notified: @escaping @Sendable () -> Void) {
            self.database = database
            self.notified = notified
        }

        func connect() {
            guard !state.withLock({ $0.stopped }) else { return }
            let notified = notified
            database.separateConnection().flatMap { connection -> EventLoopFuture<PostgresConnection> in
                let stopped = self.state.withLock { state in
                    if !state.stopped { state.connection = connection }
                    return state.stopped
                }
                if stopped { return (connection.close() as EventLoopFuture<Void>).map { connection } }
                connection.addListener(channel: SharedKeys.channel) { _, _ in notified() }
                // postgres-nio sends LISTEN for a listener; said again, in case it does not (LISTEN twice is no change).
                return connection.query(PostgresQuery(unsafeSQL: "LISTEN \(SharedKeys.channel)"), logger: self.database.quietLogger)
                    .map { _ in connection }
            }.whenComplete { result in
                switch result {
                case .success(let connection):
                    if !self.state.withLock({ $0.stopped }) { notified() }
                    connection.closeFuture.whenComplete { _ in
                        withExtendedLifetime(connection) {}
                        self.state.withLock { if $0.connection === connection { $0.connection = nil } }
                        self.again()
                    }
                case .failure:
                    self.again()
                }
            }
        }

        /// Not reachable, or the connection broke: again in a moment (the periodic check covers the time between).
        private func again() {
            guard !state.withLock({ $0.stopped }) else { return }
            MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .seconds(2)) { self.connect() }
        }

        func stop() {
            let connection = state.withLock { state in
                state.stopped = true
                return state.connection.take()
            }
            if let connection {
                let closing: EventLoopFuture<Void> = connection.close()
                closing.whenComplete { _ in withExtendedLifetime(connection) {} }
            }
        }
    }
}
