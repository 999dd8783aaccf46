import Foundation
import GRDB
import PartialEncryption
import Platform
import Store

/// An error of the reading server's store, with SQLite's result code. Never
/// carries stored content. Match a code in a `catch` clause with
/// `catch StoreError.Code.busy`.
package struct StoreError: Error, Sendable, CustomStringConvertible {
    /// SQLite's result code, as GRDB's `ResultCode` has it: the names below
    /// are the primary codes; an extended code matches its primary one.
    package struct Code: RawRepresentable, Hashable, Sendable {
        /// The C value (`SQLITE_BUSY` …).
        package let rawValue: Int32
        /// A code from its C value.
        package init(rawValue: Int32) { self.rawValue = rawValue }
        init(_ code: ResultCode) { self.rawValue = code.rawValue }

        /// The primary code of an extended one (`SQLITE_IOERR_READ` → `SQLITE_IOERR`).
        package var primary: Code { Code(ResultCode(rawValue: rawValue).primaryResultCode) }

        /// `SQLITE_ERROR`: a generic error (SQL, a missing table …).
        package static let error = Code(.SQLITE_ERROR)
        /// `SQLITE_PERM`: access permission denied.
        package static let permission = Code(.SQLITE_PERM)
        /// `SQLITE_BUSY`: another connection holds the database longer than the busy timeout.
        package static let busy = Code(.SQLITE_BUSY)
        /// `SQLITE_LOCKED`: a table is locked by this connection.
        package static let locked = Code(.SQLITE_LOCKED)
        /// `SQLITE_NOMEM`: out of memory.
        package static let noMemory = Code(.SQLITE_NOMEM)
        /// `SQLITE_READONLY`: the database file cannot be written.
        package static let readOnly = Code(.SQLITE_READONLY)
        /// `SQLITE_IOERR`: the operating system reported an I/O error.
        package static let ioError = Code(.SQLITE_IOERR)
        /// `SQLITE_CORRUPT`: the database file is damaged.
        package static let corrupt = Code(.SQLITE_CORRUPT)
        /// `SQLITE_FULL`: the disk is full.
        package static let full = Code(.SQLITE_FULL)
        /// `SQLITE_CANTOPEN`: the file (or its folder) cannot be opened.
        package static let cannotOpen = Code(.SQLITE_CANTOPEN)
        /// `SQLITE_CONSTRAINT`: a constraint failed (an identifier already taken).
        package static let constraint = Code(.SQLITE_CONSTRAINT)
        /// `SQLITE_NOTADB`: the file is not an SQLite database.
        package static let notADatabase = Code(.SQLITE_NOTADB)

        /// Lets `catch StoreError.Code.busy` match a thrown ``StoreError``: the
        /// same code, or an extended code of this primary one.
        package static func ~= (code: Code, error: any Error) -> Bool {
            guard let error = error as? StoreError else { return false }
            return error.code == code || error.code.primary == code
        }
    }

    /// SQLite's result code.
    package let code: Code
    /// What the store was doing, and SQLite's reason; one line.
    package let description: String

    /// An error with `code` and the one line `description` (another store's
    /// failure, described by that store; never content or a password).
    package init(code: Code, description: String) {
        self.code = code
        self.description = description
    }

    /// An error with SQLite's `code` while doing `what`.
    init(_ code: Int32, _ what: String) {
        self.code = Code(rawValue: code)
        self.description = "\(what): \(ResultCode(rawValue: code))"
    }

    /// The store's error for a database error while doing `what`.
    init(_ error: any Error, _ what: String) {
        switch error {
        case let error as StoreError:
            self = error
        case let error as DatabaseError:
            code = Code(error.extendedResultCode)
            description = "\(what) (\(DatabaseFile.describe(error)))"
        case let error as LocalStoreError:
            // The house's opening of the file: its line names the file and the reason.
            code = error.code == .damaged ? .corrupt : .cannotOpen
            description = error.description
        default:
            code = .error
            description = "\(what) (\(DatabaseFile.describe(error)))"
        }
    }
}

extension StoreError: MailsecError {
    /// 73 (`EX_CANTCREAT`) when the file cannot be opened or written at all
    /// (a missing folder, permissions, a read-only file); otherwise 75: a
    /// busy, full or damaged store is for the administrator to mend, and the
    /// server is started again (systemd's `Restart=`) rather than serve from it.
    package var exitStatus: ExitStatus {
        switch code.primary {
        case .cannotOpen, .permission, .readOnly: .cannotCreate
        default: .temporary
        }
    }

}

/// Where the reading server keeps its documents: one SQLite file
/// (``PostcardStore``, the default) or a database several servers share (the
/// target SharedStore, `[store] url`). Asynchronous, because the server's
/// handlers are: a store that talks to a database over the network waits
/// without holding a thread (the SQLite file's methods are synchronous and
/// satisfy these as they are). Errors are ``StoreError``s; a store that
/// cannot be reached throws one with exit status 75.
package protocol DocumentStore: Sendable {
    /// Stores a document; `deleteTokenDigest` is the deletion token's SHA-256.
    func insert(id: String, document: [UInt8], deleteTokenDigest: [UInt8], created: Int64, expires: Int64) async throws(StoreError)
    /// The entry `id` if it exists and has not expired at `now`.
    func find(id: String, now: Int64) async throws(StoreError) -> StoredPostcard?
    /// The SHA-256 of the deletion token of `id`, nil when there is no such entry.
    func deleteTokenDigest(id: String) async throws(StoreError) -> [UInt8]?
    /// Deletes `id`; true when there was such an entry.
    @discardableResult
    func delete(id: String) async throws(StoreError) -> Bool
    /// Deletes every entry expired at `now`; returns how many.
    @discardableResult
    func purge(now: Int64) async throws(StoreError) -> Int
    /// How many entries there are.
    func count() async throws(StoreError) -> Int
}

/// One stored postcard.
package struct StoredPostcard: Sendable {
    /// The postcard's identifier, as in its reading URL.
    package let id: String
    /// The reading document as published (JSON).
    package let document: [UInt8]
    /// When it was published, in seconds since 1970.
    package let created: Int64
    /// When it expires, in seconds since 1970.
    package let expires: Int64

    /// An entry as a store read it.
    package init(id: String, document: [UInt8], created: Int64, expires: Int64) {
        self.id = id
        self.document = document
        self.created = created
        self.expires = expires
    }
}

/// The published postcards in one SQLite file: identifier, the reading
/// document (no password, no span text), the SHA-256 of the deletion token,
/// creation and expiry times. The file is opened as the user's store is
/// (``DatabaseFile``: 0600, WAL, durable commits, `secure_delete`, damage
/// reported rather than opened); after a deletion the WAL is written back
/// and truncated, so a deleted or expired entry's bytes are overwritten in
/// the file and gone from the WAL, not just unlinked from the tree.
///
/// A file made by the releases before GRDB (the same table, journal mode
/// DELETE) opens as it is: the first migration creates only what is
/// missing, the second adds each entry's SHA-256 (identifier and document).
/// It is checked on every read, so bytes changed in the file are never
/// served as a document, nor one entry's document under another's identifier.
package final class PostcardStore: DocumentStore {
    private let file: DatabaseFile
    /// The SQLite file.
    package var path: String { file.path }

    /// Opens (or creates, mode 0600) the store at `path`. A file SQLite
    /// finds damaged (`PRAGMA quick_check`, every page read once) is not
    /// served from: the server does not start.
    package init(path: String) throws(StoreError) {
        do {
            file = try DatabaseFile(path: path, migrator: Self.migrator, lock: path + ".lock", label: "mailsec-serve")
        } catch {
            // A file that is there to be read but will not open is damaged
            // (75), not an output that cannot be made (73).
            let damaged = error.code == .cannotOpen && access(path, R_OK | W_OK) == 0
            throw StoreError(damaged ? LocalStoreError(.damaged, error.description) : error, "cannot open the store")
        }
        let problems = try read("cannot check the store") { db in try String.fetchAll(db, sql: "PRAGMA quick_check(5)") }
        guard problems == ["ok"] else {
            let first = problems.first.map { $0.split(whereSeparator: \.isNewline).joined(separator: " ") } ?? "no answer"
            throw StoreError(StoreError.Code.corrupt.rawValue, "the store \(path) is damaged (\(first)); restore it from a backup")
        }
    }

    /// The store's tables, as migrations applied in order (never changed once released).
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // The table as the hand-written store made it: IF NOT EXISTS, so that
        // its files (with no migration record) take this migration as done.
        migrator.registerMigration("postcards-1") { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS postcards (
                    id TEXT PRIMARY KEY,
                    document BLOB NOT NULL,
                    delete_token_sha256 BLOB NOT NULL,
                    created INTEGER NOT NULL,
                    expires INTEGER NOT NULL
                );
                CREATE INDEX IF NOT EXISTS postcards_expires ON postcards(expires);
                """)
        }
        // Each entry's digest (``digest(id:document:)``), checked when it is
        // read; computed here for the entries stored before, so that a
        // missing one is damage.
        migrator.registerMigration("postcards-2") { db in
            try db.execute(sql: "ALTER TABLE postcards ADD COLUMN entry_sha256 BLOB")
            for row in try Row.fetchAll(db, sql: "SELECT rowid, id, document FROM postcards") {
                guard case .string(let id) = (row["id"] as DatabaseValue).storage,
                      case .blob(let document) = (row["document"] as DatabaseValue).storage else { continue }
                try db.execute(sql: "UPDATE postcards SET entry_sha256 = ? WHERE rowid = ?",
                               arguments: [digest(id: id, document: document), row["rowid"] as DatabaseValue])
            }
        }
        return migrator
    }

    /// SHA-256 over the identifier and the document: a row whose document
    /// or whose identifier changed in the file (one entry's bytes now
    /// naming another's identifier) no longer matches.
    static func digest(id: String, document: Data) -> Data {
        Data(Digest.sha256(Array(id.utf8) + [0] + Array(document)))
    }

    /// Runs `body` on the writer, its database errors as ``StoreError``.
    private func write<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try file.pool.write(body) } catch { throw StoreError(error, what) }
    }

    /// Runs `body` on a reader, its database errors as ``StoreError``.
    private func read<T>(_ what: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try file.pool.read(body) } catch { throw StoreError(error, what) }
    }

    /// Stores a document; `deleteToken` is kept only as its SHA-256.
    package func insert(id: String, document: [UInt8], deleteTokenDigest: [UInt8], created: Int64, expires: Int64) throws(StoreError) {
        try write("cannot store the document") { db in
            try db.execute(sql: """
                INSERT INTO postcards (id, document, delete_token_sha256, created, expires, entry_sha256)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [id, Data(document), Data(deleteTokenDigest), created, expires, Self.digest(id: id, document: Data(document))])
        }
    }

    /// The entry `id` if it exists and has not expired at `now`. A row that
    /// is not the one asked for (a damaged index), holds a value of the wrong
    /// kind, or whose document does not match its SHA-256 is damage: thrown,
    /// never returned.
    package func find(id: String, now: Int64) throws(StoreError) -> StoredPostcard? {
        let path = path
        return try read("cannot read the store") { db in
            let sql = "SELECT id, document, created, expires, entry_sha256 FROM postcards WHERE id = ? AND expires > ?"
            guard let row = try Row.fetchOne(db, sql: sql, arguments: [id, now]) else { return nil }
            // Read as stored values: a damaged record may hold any kind, and a
            // typed read of the wrong kind would stop the process.
            func value(_ column: String) -> DatabaseValue.Storage { (row[column] as DatabaseValue).storage }
            guard case .string(id) = value("id"), case .blob(let document) = value("document"),
                  case .int64(let created) = value("created"), case .int64(let expires) = value("expires"),
                  case .blob(let digest) = value("entry_sha256"), digest == Self.digest(id: id, document: document) else {
                throw StoreError(StoreError.Code.corrupt.rawValue, "the store \(path) is damaged: an entry does not hold what was stored")
            }
            return StoredPostcard(id: id, document: Array(document), created: created, expires: expires)
        }
    }

    /// The SHA-256 of the deletion token of `id`, nil when there is no such entry.
    package func deleteTokenDigest(id: String) throws(StoreError) -> [UInt8]? {
        let path = path
        return try read("cannot read the store") { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT id, delete_token_sha256 FROM postcards WHERE id = ?", arguments: [id]) else {
                return nil
            }
            guard case .string(id) = (row["id"] as DatabaseValue).storage,
                  case .blob(let digest) = (row["delete_token_sha256"] as DatabaseValue).storage else {
                throw StoreError(StoreError.Code.corrupt.rawValue, "the store \(path) is damaged: an entry does not hold what was stored")
            }
            return Array(digest)
        }
    }

    /// Deletes `id`; true when there was such an entry.
    @discardableResult
    package func delete(id: String) throws(StoreError) -> Bool {
        try deleting("cannot delete from the store", "DELETE FROM postcards WHERE id = ?", [id]) > 0
    }

    /// Deletes every entry expired at `now`; returns how many.
    @discardableResult
    package func purge(now: Int64) throws(StoreError) -> Int {
        try deleting("cannot purge the store", "DELETE FROM postcards WHERE expires <= ?", [now])
    }

    /// Runs a deletion; when it deleted anything, the WAL's older pages
    /// (the deleted bytes among them) are written back and dropped.
    private func deleting(_ what: String, _ sql: String, _ arguments: StatementArguments) throws(StoreError) -> Int {
        let count = try write(what) { db in
            try db.execute(sql: sql, arguments: arguments)
            return db.changesCount
        }
        if count > 0 { file.forgetOldPages() }
        return count
    }

    /// How many entries there are.
    package func count() throws(StoreError) -> Int {
        try read("cannot read the store") { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM postcards") ?? 0 }
    }
}
