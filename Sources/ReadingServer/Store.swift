internal import CSQLite
import Foundation
import PartialEncryption
import Synchronization

/// An error of the reading server's store, with SQLite's result code. Never
/// carries stored content. Match a code in a `catch` clause with
/// `catch StoreError.Code.busy`.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// SQLite's result code, as GRDB's `ResultCode` has it: the names below
    /// are the primary codes; an extended code matches its primary one.
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The C value (`SQLITE_BUSY` …).
        public let rawValue: Int32
        /// A code from its C value.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// The primary code of an extended one (`SQLITE_IOERR_READ` → `SQLITE_IOERR`).
        public var primary: Code { Code(rawValue: rawValue & 0xFF) }

        /// `SQLITE_ERROR`: a generic error (SQL, a missing table …).
        public static let error = Code(rawValue: SQLITE_ERROR)
        /// `SQLITE_PERM`: access permission denied.
        public static let permission = Code(rawValue: SQLITE_PERM)
        /// `SQLITE_BUSY`: another connection holds the database longer than the busy timeout.
        public static let busy = Code(rawValue: SQLITE_BUSY)
        /// `SQLITE_LOCKED`: a table is locked by this connection.
        public static let locked = Code(rawValue: SQLITE_LOCKED)
        /// `SQLITE_NOMEM`: out of memory.
        public static let noMemory = Code(rawValue: SQLITE_NOMEM)
        /// `SQLITE_READONLY`: the database file cannot be written.
        public static let readOnly = Code(rawValue: SQLITE_READONLY)
        /// `SQLITE_IOERR`: the operating system reported an I/O error.
        public static let ioError = Code(rawValue: SQLITE_IOERR)
        /// `SQLITE_CORRUPT`: the database file is damaged.
        public static let corrupt = Code(rawValue: SQLITE_CORRUPT)
        /// `SQLITE_FULL`: the disk is full.
        public static let full = Code(rawValue: SQLITE_FULL)
        /// `SQLITE_CANTOPEN`: the file (or its folder) cannot be opened.
        public static let cannotOpen = Code(rawValue: SQLITE_CANTOPEN)
        /// `SQLITE_CONSTRAINT`: a constraint failed (an identifier already taken).
        public static let constraint = Code(rawValue: SQLITE_CONSTRAINT)
        /// `SQLITE_NOTADB`: the file is not an SQLite database.
        public static let notADatabase = Code(rawValue: SQLITE_NOTADB)

        /// Lets `catch StoreError.Code.busy` match a thrown ``StoreError``: the
        /// same code, or an extended code of this primary one.
        public static func ~= (code: Code, error: any Error) -> Bool {
            guard let error = error as? StoreError else { return false }
            return error.code == code || error.code.primary == code
        }
    }

    /// SQLite's result code.
    public let code: Code
    /// What the store was doing, and SQLite's text for the code (`sqlite3_errstr`).
    public let description: String

    init(_ code: Int32, _ what: String) {
        self.code = Code(rawValue: code)
        self.description = "\(what): \(String(cString: sqlite3_errstr(code)))"
    }
}

/// One stored postcard.
public struct StoredPostcard: Sendable {
    /// The postcard's identifier, as in its reading URL.
    public let id: String
    /// The reading document as published (JSON).
    public let document: [UInt8]
    /// When it was published, in seconds since 1970.
    public let created: Int64
    /// When it expires, in seconds since 1970.
    public let expires: Int64
}

/// The published postcards in one SQLite file: identifier, the reading
/// document (no password, no span text), the SHA-256 of the deletion token,
/// creation and expiry times. `secure_delete` is on, so a deleted or expired
/// entry's bytes are overwritten in the file, not just unlinked from the tree.
///
/// One connection (`sqlite3`) behind a lock: the server's handlers run on
/// many threads, and SQLite writes are serialised anyway.
public final class PostcardStore: Sendable {
    // The pointer is only used while the mutex is held.
    private struct Connection: @unchecked Sendable { let handle: OpaquePointer }
    private let connection: Mutex<Connection>
    /// The SQLite file.
    public let path: String

    /// Opens (or creates, mode 0600) the store at `path`.
    public init(path: String) throws(StoreError) {
        self.path = path
        let fresh = !FileManager.default.fileExists(atPath: path)
        if fresh {
            let fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0o600)
            if fd >= 0 { close(fd) }
        }
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nil)
        guard status == SQLITE_OK, let handle else {
            sqlite3_close(handle)
            throw StoreError(status, "cannot open the store")
        }
        connection = Mutex(Connection(handle: handle))
        sqlite3_busy_timeout(handle, 5000)
        try execute("""
            PRAGMA secure_delete = ON;
            PRAGMA journal_mode = DELETE;
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

    deinit {
        connection.withLock { _ = sqlite3_close($0.handle) }
    }

    private func execute(_ sql: String) throws(StoreError) {
        let status = connection.withLock { sqlite3_exec($0.handle, sql, nil, nil, nil) }
        guard status == SQLITE_OK else { throw StoreError(status, "cannot prepare the store") }
    }

    /// Runs one statement with `bindings`; `row` sees each result row.
    private func run(_ sql: String, _ bindings: [Binding], row: ((OpaquePointer) -> Void)? = nil) throws(StoreError) -> Int32 {
        let result: Result<Int32, StoreError> = connection.withLock { connection in
            var statement: OpaquePointer?
            var status = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
            guard status == SQLITE_OK, let statement else { return .failure(StoreError(status, "cannot query the store")) }
            defer { sqlite3_finalize(statement) }
            for (index, binding) in bindings.enumerated() {
                let position = Int32(index + 1)
                switch binding {
                case .text(let text): status = sqlite3_bind_text(statement, position, text, -1, sqliteTransient)
                case .blob(let bytes):
                    status = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), sqliteTransient) }
                case .integer(let value): status = sqlite3_bind_int64(statement, position, value)
                }
                guard status == SQLITE_OK else { return .failure(StoreError(status, "cannot query the store")) }
            }
            while true {
                status = sqlite3_step(statement)
                if status == SQLITE_ROW { row?(statement); continue }
                guard status == SQLITE_DONE else { return .failure(StoreError(status, "cannot query the store")) }
                return .success(sqlite3_changes(connection.handle))
            }
        }
        return try result.get()
    }

    private enum Binding { case text(String), blob([UInt8]), integer(Int64) }

    /// Stores a document; `deleteToken` is kept only as its SHA-256.
    public func insert(id: String, document: [UInt8], deleteTokenDigest: [UInt8], created: Int64, expires: Int64) throws(StoreError) {
        _ = try run("INSERT INTO postcards (id, document, delete_token_sha256, created, expires) VALUES (?, ?, ?, ?, ?)",
                    [.text(id), .blob(document), .blob(deleteTokenDigest), .integer(created), .integer(expires)])
    }

    /// The entry `id` if it exists and has not expired at `now`.
    public func find(id: String, now: Int64) throws(StoreError) -> StoredPostcard? {
        var found: StoredPostcard?
        _ = try run("SELECT document, created, expires FROM postcards WHERE id = ? AND expires > ?", [.text(id), .integer(now)]) { statement in
            let count = Int(sqlite3_column_bytes(statement, 0))
            let bytes = sqlite3_column_blob(statement, 0).map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
            found = StoredPostcard(id: id, document: bytes, created: sqlite3_column_int64(statement, 1),
                                   expires: sqlite3_column_int64(statement, 2))
        }
        return found
    }

    /// The SHA-256 of the deletion token of `id`, nil when there is no such entry.
    public func deleteTokenDigest(id: String) throws(StoreError) -> [UInt8]? {
        var digest: [UInt8]?
        _ = try run("SELECT delete_token_sha256 FROM postcards WHERE id = ?", [.text(id)]) { statement in
            let count = Int(sqlite3_column_bytes(statement, 0))
            digest = sqlite3_column_blob(statement, 0).map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
        }
        return digest
    }

    /// Deletes `id`; true when there was such an entry.
    @discardableResult
    public func delete(id: String) throws(StoreError) -> Bool {
        try run("DELETE FROM postcards WHERE id = ?", [.text(id)]) > 0
    }

    /// Deletes every entry expired at `now`; returns how many.
    @discardableResult
    public func purge(now: Int64) throws(StoreError) -> Int {
        Int(try run("DELETE FROM postcards WHERE expires <= ?", [.integer(now)]))
    }

    /// How many entries there are.
    public func count() throws(StoreError) -> Int {
        var count = 0
        _ = try run("SELECT count(*) FROM postcards", []) { count = Int(sqlite3_column_int64($0, 0)) }
        return count
    }
}

/// SQLite copies the bound value (SQLITE_TRANSIENT, a macro Swift cannot import).
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
