import Compose
import Foundation
import GRDB
import OpenPGP
import Store

/// Drafts in the user's store, each sealed to the owner's own key
/// (``DraftSeal``): they survive restarts, and neither the SQLite file nor
/// its WAL shows anything of them without the secret key.
public final class SealedDraftStore: DraftStore, Sendable {
    /// The local store holding the sealed drafts.
    public let store: LocalStore
    /// The GnuPG home with the owner's keys.
    public let gnupg: GnuPG
    /// The address whose key seals and opens the drafts.
    public let owner: String

    /// Drafts in `store`, sealed to `owner`'s key in `gnupg`.
    public init(store: LocalStore, gnupg: GnuPG, owner: String) {
        self.store = store
        self.gnupg = gnupg
        self.owner = owner
    }

    /// A draft as listed: its id, when it was last saved, and the draft itself.
    public struct Entry: Sendable {
        /// The draft's id.
        public let id: String
        /// When it was last saved.
        public let updated: Date
        /// The draft, opened.
        public let draft: ComposeDraft
    }

    /// Why the drafts could not be read or written. Never carries draft content.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// One line; never draft content.
        public let description: String
    }

    /// Seals `draft` and stores it (in place of `id`, when given); returns its id.
    public func save(_ draft: ComposeDraft, replacing id: String?) throws -> String {
        let sealed = try seal(draft)
        let key = id ?? UUID().uuidString.lowercased()
        try run("write") { try store.database.write { db in try Self.insert(db, id: key, sealed: sealed) } }
        return key
    }

    /// `draft` sealed to the owner's key.
    func seal(_ draft: ComposeDraft) throws -> [UInt8] {
        try DraftSeal.seal(draft, key: try DraftSeal.ownKey(owner, gnupg: gnupg), gnupg: gnupg)
    }

    /// `draft` sealed, or nil when the owner has no usable key of their own
    /// (other failures of gpg are thrown).
    func sealedIfPossible(_ draft: ComposeDraft) throws -> [UInt8]? {
        let key: Key
        do { key = try DraftSeal.ownKey(owner, gnupg: gnupg) } catch is DraftSeal.Failure { return nil }
        return try DraftSeal.seal(draft, key: key, gnupg: gnupg)
    }

    static func insert(_ db: Database, id: String, sealed: [UInt8]) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO draft (id, sealed, updated) VALUES (?, ?, ?)",
                       arguments: [id, Data(sealed), Date().timeIntervalSince1970])
    }

    /// The draft `id`, opened; nil when there is none.
    public func draft(_ id: String) throws -> ComposeDraft? {
        let sealed = try run("read") {
            try store.database.read { db in try Data.fetchOne(db, sql: "SELECT sealed FROM draft WHERE id = ?", arguments: [id]) }
        }
        guard let sealed else { return nil }
        return try DraftSeal.open(Array(sealed), key: try DraftSeal.ownKey(owner, gnupg: gnupg), gnupg: gnupg)
    }

    /// Every draft, newest first, opened (one key look-up for all).
    public func list() throws -> [Entry] {
        let rows = try run("read") {
            try store.database.read { db in try Row.fetchAll(db, sql: "SELECT id, sealed, updated FROM draft ORDER BY updated DESC") }
        }
        guard !rows.isEmpty else { return [] }
        let key = try DraftSeal.ownKey(owner, gnupg: gnupg)
        return try rows.map { row in
            let sealed: Data = row["sealed"]
            return Entry(id: row["id"], updated: Date(timeIntervalSince1970: row["updated"]),
                         draft: try DraftSeal.open(Array(sealed), key: key, gnupg: gnupg))
        }
    }

    /// The ids of every draft, newest first (nothing is opened).
    public func ids() throws -> [String] {
        try run("read") { try store.database.read { db in try String.fetchAll(db, sql: "SELECT id FROM draft ORDER BY updated DESC") } }
    }

    /// Removes the draft `id`.
    public func delete(_ id: String) throws {
        try run("write") {
            try store.database.write { db in try db.execute(sql: "DELETE FROM draft WHERE id = ?", arguments: [id]) }
        }
    }

    func run<T>(_ what: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            throw Failure(description: "cannot \(what) the drafts (\(LocalStore.describe(error)))")
        }
    }
}
