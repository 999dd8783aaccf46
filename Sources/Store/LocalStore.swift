import Foundation
import GRDB
import Platform

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

extension LocalStoreError: MailsecError {
    /// 75 for every code: the mail (or the command) waits until the store can be used again.
    public var exitStatus: ExitStatus { .temporary }
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
    package var database: DatabasePool { file.pool }
    /// The database file, opened as every store's is.
    private let file: DatabaseFile

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

        file = try DatabaseFile(path: folder + "/mailsec.sqlite", migrator: Schema.migrator, lock: folder + "/store.lock",
                                label: "mailsec")
    }

    /// Writes the WAL into the database and truncates it to nothing, so that
    /// no older version of a page (bytes deleted since, such as a delivered
    /// password notice's) stays in it while another process keeps the store
    /// open. Best effort: a reader holding an old snapshot past
    /// ``busyTimeout`` leaves the WAL as it is, for the next call.
    package func forgetOldPages() { file.forgetOldPages() }

    /// A database error without its SQL arguments (they may be mail content).
    package static func describe(_ error: any Error) -> String { DatabaseFile.describe(error) }
}
