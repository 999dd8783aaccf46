import Foundation
import GRDB

/// One SQLite file opened the house's way, for every store that keeps one
/// (the user's ``LocalStore``, the reading server's documents): checked for
/// damage SQLite would take in silence before it is opened (``StoreFileCheck``),
/// made whole under a private name when new, the file and its `-wal` and
/// `-shm` 0600, WAL with every commit durable (`synchronous = FULL`),
/// deleted content overwritten (`secure_delete`), a writer waiting
/// ``LocalStore/busyTimeout`` for another process, and the tables brought up
/// to date under an flock, so two processes opening it at once do not both
/// make them.
package final class DatabaseFile: Sendable {
    /// The database file.
    package let path: String
    /// The database.
    package let pool: DatabasePool
    /// Counts this file as open in this process while it lives (``StoreFileCheck``).
    private let openHere: StoreFileCheck.OpenHere

    /// Opens `path` (made when missing, with `migrator`'s tables), brings
    /// its tables up to date holding an flock on `lock`. Throws
    /// ``LocalStoreError/Code/damaged`` for a damaged file, which is then
    /// not opened at all, and ``LocalStoreError/Code/cannotOpen`` otherwise.
    package init(path: String, migrator: DatabaseMigrator, lock: String, label: String) throws(LocalStoreError) {
        self.path = path
        // A store that exists is never made anew: an empty or damaged file, or
        // a damaged WAL, is reported (StoreFileCheck) and the store not opened.
        try StoreFileCheck.check(path)
        if access(path, F_OK) != 0 { try Self.create(path, migrator: migrator) }
        let fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw LocalStoreError(.cannotOpen, "cannot open the store \(path): \(String(cString: strerror(errno)))") }
        fchmod(fd, 0o600)
        close(fd)

        var configuration = Configuration()
        configuration.busyMode = .timeout(LocalStore.busyTimeout)
        configuration.label = label
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // Deleted content is overwritten with zeros, whatever SQLite's build
            // says (a password notice's bytes must not stay in free space).
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // GRDB puts a pool's writer in WAL mode after prepareDatabase, and
            // with it synchronous = NORMAL (a commit not synced until the next
            // checkpoint: lost at a power cut). The writer is the one connection
            // that commits; it gets FULL back here, for good.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try Self.migrate(pool, migrator: migrator, lock: lock)
        } catch let error as LocalStoreError {
            throw error
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            throw LocalStoreError(.damaged, "the store \(path) is damaged (\(Self.describe(error))); restore it from a backup")
        } catch {
            throw LocalStoreError(.cannotOpen, "cannot open the store \(path) (\(Self.describe(error)))")
        }
        for suffix in ["-wal", "-shm"] { chmod(path + suffix, 0o600) }
        openHere = StoreFileCheck.OpenHere(path)
    }

    /// Makes a new store whole under a private name (0600 before SQLite
    /// opens it, so it never exists wider), its tables in place, and links it
    /// into place: the store's own name never holds an empty file, so an
    /// empty one there is damage, never "a store about to be made". Two
    /// processes making it at once: the first link wins.
    private static func create(_ file: String, migrator: DatabaseMigrator) throws(LocalStoreError) {
        let temporary = file + ".new.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LocalStoreError(.cannotOpen, "cannot make the store \(file): \(String(cString: strerror(errno)))") }
        close(fd)
        defer { unlink(temporary); unlink(temporary + "-journal") }
        do {
            var configuration = Configuration()
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            let queue = try DatabaseQueue(path: temporary, configuration: configuration)
            try migrator.migrate(queue)
            try queue.close()
        } catch {
            throw LocalStoreError(.cannotOpen, "cannot make the store \(file) (\(Self.describe(error)))")
        }
        guard link(temporary, file) == 0 || errno == EEXIST else {
            throw LocalStoreError(.cannotOpen, "cannot make the store \(file): \(String(cString: strerror(errno)))")
        }
    }

    /// Brings the tables up to date holding `lock` (flock): two processes
    /// opening a new store at once (`send` while `outbox watch` starts) both
    /// saw no table, and the second failed making one the first had made.
    private static func migrate(_ database: DatabasePool, migrator: DatabaseMigrator, lock path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw LocalStoreError(.cannotOpen, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }  // closing drops the lock
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw LocalStoreError(.cannotOpen, "cannot lock \(path): \(String(cString: strerror(errno)))") }
        }
        try migrator.migrate(database)
    }

    /// Writes the WAL into the database and truncates it to nothing, so that
    /// no older version of a page (bytes deleted since, such as a delivered
    /// password notice's) stays in it while another process keeps the store
    /// open. Best effort: a reader holding an old snapshot past
    /// ``LocalStore/busyTimeout`` leaves the WAL as it is, for the next call.
    package func forgetOldPages() {
        _ = try? pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    /// A database error without its SQL arguments (they may be mail content).
    package static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return "SQLite: \(error.message ?? "error \(error.resultCode.rawValue)")" }
        return "\(type(of: error))"
    }
}
