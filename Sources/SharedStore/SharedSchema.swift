import Logging
import NIOCore
import PostgresNIO

/// The shared database's tables, as versioned migrations applied in order
/// (never changed once released; a new one is added at the end). Whichever
/// node connects first applies them, under a session advisory lock, so two
/// nodes starting at once never both run one; the other waits, then finds
/// them applied (`schema_version`, one row per version). A migration is
/// applied in one transaction with its version row: half of one is never
/// left behind.
package enum SharedSchema {
    /// The advisory lock's key: "mailsec" in ASCII, a number no other user of the database is likely to take.
    package static let lockKey: Int64 = 0x6D61_696C_7365_63

    /// Each migration: its statements.
    package static let migrations: [[String]] = [
        // 1: key continuity (per address: the fingerprint, and a generation
        //    every change moves forward; a forgotten address keeps its row
        //    with no fingerprint, so its generation never goes back) and the
        //    reading server's documents.
        [
            """
            CREATE TABLE key_continuity (
                address text PRIMARY KEY,
                fingerprint text,
                generation bigint NOT NULL CHECK (generation > 0),
                updated timestamptz NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE TABLE postcards (
                id text PRIMARY KEY,
                document bytea NOT NULL,
                delete_token_sha256 bytea NOT NULL,
                created bigint NOT NULL,
                expires bigint NOT NULL
            )
            """,
            "CREATE INDEX postcards_expires ON postcards (expires)",
        ],
        // 2: the keys an administrator published (`mailsec keys publish`),
        //    one row per publication: the fingerprint, the armored public
        //    key or NULL for a removal, at the next revision. Rows are only
        //    added: a revocation is the revoked key published again. Every
        //    node applies the rows after the revision it applied last.
        [
            """
            CREATE TABLE published_keys (
                revision bigserial PRIMARY KEY,
                fingerprint text NOT NULL CHECK (fingerprint ~ '^([0-9A-F]{40}|[0-9A-F]{64})$'),
                armor text,
                published timestamptz NOT NULL DEFAULT now()
            )
            """,
        ],
    ]

    /// The newest version.
    package static var version: Int { migrations.count }

    /// Brings the database up to date on `connection`, under the advisory
    /// lock. Futures on the connection's event loop, no Swift concurrency
    /// task: a caller waiting on a thread of the cooperative pool cannot
    /// starve it.
    package static func migrate(_ connection: PostgresConnection, logger: Logger) -> EventLoopFuture<Void> {
        func run(_ sql: String) -> EventLoopFuture<PostgresQueryResult> {
            connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
        let loop = connection.eventLoop
        let work = run("SELECT pg_advisory_lock(\(lockKey))").flatMap { _ in
            run("""
                CREATE TABLE IF NOT EXISTS schema_version (
                    version integer PRIMARY KEY,
                    applied timestamptz NOT NULL DEFAULT now()
                )
                """)
        }.flatMap { _ in
            run("SELECT coalesce(max(version), 0)::integer FROM schema_version")
        }.flatMapThrowing { rows -> Int in
            guard let row = rows.first, let current = try? row.decode(Int32.self) else {
                throw SharedStoreFailure(description: "cannot read the database's schema version")
            }
            guard Int(current) <= version else {
                throw SharedStoreFailure(description: "the database's schema (version \(current)) is newer than this mailsec knows "
                                         + "(\(version)): update mailsec")
            }
            return Int(current)
        }.flatMap { current -> EventLoopFuture<Void> in
            var chain = loop.makeSucceededVoidFuture()
            for (index, statements) in migrations.enumerated() where index + 1 > current {
                chain = chain.flatMap { _ in
                    // One transaction: the statements and the version row, or nothing.
                    var step = run("BEGIN").map { _ in () }
                    for statement in statements { step = step.flatMap { _ in run(statement).map { _ in () } } }
                    return step.flatMap { _ in run("INSERT INTO schema_version (version) VALUES (\(index + 1))") }
                        .flatMap { _ in run("COMMIT").map { _ in () } }
                        .flatMapError { error in run("ROLLBACK").flatMapThrowing { _ in throw error }
                            .flatMapErrorThrowing { _ in throw error } }
                }
            }
            return chain
        }
        // Unlocked whatever happened (a failed connection releases it anyway, with the session).
        return work.flatMap { _ in run("SELECT pg_advisory_unlock(\(lockKey))").map { _ in () } }
            .flatMapError { error in
                run("SELECT pg_advisory_unlock(\(lockKey))").flatMapThrowing { _ in throw error }.flatMapErrorThrowing { _ in throw error }
            }
    }
}
