import Foundation
import GRDB

/// The user's store could not be opened or used. Never carries stored content.
///
/// Match a code in a `catch` clause with `catch LocalStoreError.Code.notAFolder`.
public struct LocalStoreError: Error, Sendable, CustomStringConvertible {
    /// Why the store cannot be used. A struct rather than an enum, so that
    /// codes can be added without breaking a caller's `switch`.
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The code's stable name.
        public let rawValue: String
        /// A code by its name; the named static members are the ones mailsec throws.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The store folder could not be made (`mkdir`).
        public static let folderNotMade = Code(rawValue: "folderNotMade")
        /// The store's path is something other than a folder (a file, a symbolic link).
        public static let notAFolder = Code(rawValue: "notAFolder")
        /// The store folder belongs to another user.
        public static let otherOwner = Code(rawValue: "otherOwner")
        /// The database file could not be opened (`open`), or SQLite could not
        /// open it or bring its tables up to date.
        public static let cannotOpen = Code(rawValue: "cannotOpen")
        /// The database file or its WAL is damaged (empty, not SQLite, frames
        /// failing their checksums): the store is not opened, so nothing in it is dropped.
        public static let damaged = Code(rawValue: "damaged")

        /// Lets `catch LocalStoreError.Code.notAFolder` match a thrown ``LocalStoreError``.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? LocalStoreError)?.code == code
        }
    }

    /// Why the store cannot be used.
    public let code: Code
    /// One line naming the folder or file and the reason.
    public let description: String

    /// An error with `code` and its one line.
    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// The user's local store: one SQLite database (WAL) in a private folder,
/// `$XDG_DATA_HOME/mailsec/` (by default `~/.local/share/mailsec/`). The
/// folder is 0700 and every file in it 0600, also those SQLite makes later
/// (SQLite gives its `-wal` and `-shm` files the database file's mode). The
/// process's umask is never touched: it is shared by every thread, and a
/// narrowed one made other threads' files unreadable (a test's Postfix queue).
///
/// Several processes may use it at once (`send` while `outbox watch` runs):
/// SQLite serialises the writers, and a writer waits up to ``busyTimeout``
/// for another. Every commit is durable (`synchronous = FULL`): what a call
/// returned having written survives a crash or a power cut. Deleted content
/// is overwritten with zeros (`secure_delete`); the older versions of a page
/// that the WAL still holds go with ``forgetOldPages()``.
public final class LocalStore: Sendable {
    /// The folder that holds the database.
    public let folder: String
    /// The database file.
    public var path: String { folder + "/mailsec.sqlite" }
    /// How long a writer waits for another process's write.
    public static let busyTimeout: TimeInterval = 30

    /// The database, for the targets that keep their tables here.
    package let database: DatabasePool
    /// Counts this store as open in this process while it lives (``StoreFileCheck``).
    private let openHere: StoreFileCheck.OpenHere

    /// `$XDG_DATA_HOME/mailsec`, or `$HOME/.local/share/mailsec` (XDG Base Directory).
    public static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/mailsec" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/share/mailsec"
    }

    /// Opens the store in `folder` (made 0700 when missing), creating the
    /// database and bringing its tables up to date (``Schema``).
    public init(folder: String = LocalStore.defaultFolder()) throws(LocalStoreError) {
        self.folder = folder
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw LocalStoreError(.folderNotMade, "cannot make the store folder \(folder)")
        }
        var info = stat()
        guard lstat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw LocalStoreError(.notAFolder, "the store folder \(folder) is not a folder")
        }
        guard info.st_uid == getuid() else { throw LocalStoreError(.otherOwner, "the store folder \(folder) belongs to another user") }
        // A folder others can read would show who one writes to: close it.
        if info.st_mode & 0o077 != 0 { chmod(folder, 0o700) }

        // A store that exists is never made anew: an empty or damaged file, or
        // a damaged WAL, is reported (StoreFileCheck) and the store not opened.
        let file = folder + "/mailsec.sqlite"
        try StoreFileCheck.check(file)
        if access(file, F_OK) != 0 { try Self.create(file) }
        let fd = open(file, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw LocalStoreError(.cannotOpen, "cannot open the store \(file): \(String(cString: strerror(errno)))") }
        fchmod(fd, 0o600)
        close(fd)

        var configuration = Configuration()
        configuration.busyMode = .timeout(Self.busyTimeout)
        configuration.label = "mailsec"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // Deleted content is overwritten with zeros, whatever SQLite's build
            // says (a password notice's bytes must not stay in free space).
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        do {
            database = try DatabasePool(path: file, configuration: configuration)
            // GRDB puts a pool's writer in WAL mode after prepareDatabase, and
            // with it synchronous = NORMAL (a commit not synced until the next
            // checkpoint: lost at a power cut). The writer is the one connection
            // that commits; it gets FULL back here, for good.
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try Self.migrate(database, folder: folder)
        } catch let error as LocalStoreError {
            throw error
        } catch {
            throw LocalStoreError(.cannotOpen, "cannot open the store \(file) (\(Self.describe(error)))")
        }
        for suffix in ["-wal", "-shm"] { chmod(file + suffix, 0o600) }
        openHere = StoreFileCheck.OpenHere(file)
    }

    /// Makes a new store whole under a private name (0600 before SQLite
    /// opens it, so it never exists wider), its tables in place, and links it
    /// into place: the store's own name never holds an empty file, so an
    /// empty one there is damage, never "a store about to be made". Two
    /// processes making it at once: the first link wins.
    private static func create(_ file: String) throws(LocalStoreError) {
        let temporary = file + ".new.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LocalStoreError(.cannotOpen, "cannot make the store \(file): \(String(cString: strerror(errno)))") }
        close(fd)
        defer { unlink(temporary); unlink(temporary + "-journal") }
        do {
            var configuration = Configuration()
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            let queue = try DatabaseQueue(path: temporary, configuration: configuration)
            try Schema.migrator.migrate(queue)
            try queue.close()
        } catch {
            throw LocalStoreError(.cannotOpen, "cannot make the store \(file) (\(Self.describe(error)))")
        }
        guard link(temporary, file) == 0 || errno == EEXIST else {
            throw LocalStoreError(.cannotOpen, "cannot make the store \(file): \(String(cString: strerror(errno)))")
        }
    }

    /// Brings the tables up to date holding `store.lock` (flock) in the
    /// folder: two processes opening a new store at once (`send` while
    /// `outbox watch` starts) both saw no table, and the second failed
    /// making one the first had made.
    private static func migrate(_ database: DatabasePool, folder: String) throws {
        let path = folder + "/store.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw LocalStoreError(.cannotOpen, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }  // closing drops the lock
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw LocalStoreError(.cannotOpen, "cannot lock \(path): \(String(cString: strerror(errno)))") }
        }
        try Schema.migrator.migrate(database)
    }

    /// Writes the WAL into the database and truncates it to nothing, so that
    /// no older version of a page (bytes deleted since, such as a delivered
    /// password notice's) stays in it while another process keeps the store
    /// open. Best effort: a reader holding an old snapshot past
    /// ``busyTimeout`` leaves the WAL as it is, for the next call.
    package func forgetOldPages() {
        _ = try? database.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    /// A database error without its SQL arguments (they may be mail content).
    package static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return "SQLite: \(error.message ?? "error \(error.resultCode.rawValue)")" }
        return "\(type(of: error))"
    }
}
