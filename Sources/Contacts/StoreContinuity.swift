import Foundation
import GRDB
import Pipeline
import Store

/// Key continuity for the CLI (`encrypt`, `send`, `sendmail`, `compose`),
/// kept in the user's store beside the contacts: the key each recipient last
/// got a letter with. The decision and its errors are the pipeline's
/// (``KeyContinuityStore``, `KeyLossError`); the filter keeps its own folder.
public struct StoreContinuity: KeyContinuityStore {
    /// The store the records are kept in.
    public let store: LocalStore

    /// Key continuity kept in `store`.
    public init(store: LocalStore) { self.store = store }

    /// The remembered fingerprints of `addresses` that have a record, by lower-case address.
    public func remembered(_ addresses: [String]) throws(KeyContinuityError) -> [String: String] {
        let wanted = Array(Set(addresses.map { $0.lowercased() }))
        guard !wanted.isEmpty else { return [:] }
        do {
            return try store.database.read { db in
                var found: [String: String] = [:]
                // SQLite takes at most 32766 arguments per statement.
                for start in stride(from: 0, to: wanted.count, by: 500) {
                    let part = Array(wanted[start..<min(start + 500, wanted.count)])
                    let rows = try Row.fetchAll(db, sql: "SELECT address, fingerprint FROM continuity WHERE address IN ("
                                                + Array(repeating: "?", count: part.count).joined(separator: ",") + ")",
                                                arguments: StatementArguments(part))
                    for row in rows { found[row["address"]] = (row["fingerprint"] as String).uppercased() }
                }
                return found
            }
        } catch {
            throw KeyContinuityError(description: "cannot read the key continuity records in the store (\(LocalStore.describe(error)))")
        }
    }

    /// Remembers that `address` got a letter to `fingerprint`.
    public func record(_ address: String, fingerprint: String) throws(KeyContinuityError) {
        do {
            try store.database.write { db in try Self.record(address, fingerprint: fingerprint, at: Date().timeIntervalSince1970, in: db) }
        } catch {
            throw KeyContinuityError(description: "cannot write the key continuity records in the store (\(LocalStore.describe(error)))")
        }
    }

    /// Forgets `address` on purpose; true when there was a record.
    public func forget(_ address: String) throws(KeyContinuityError) -> Bool {
        do {
            return try store.database.write { db in
                try db.execute(sql: "DELETE FROM continuity WHERE address = ?", arguments: [address.lowercased()])
                return db.changesCount > 0
            }
        } catch {
            throw KeyContinuityError(description: "cannot write the key continuity records in the store (\(LocalStore.describe(error)))")
        }
    }

    /// Every record: address (lower case) and fingerprint.
    public func all() throws(KeyContinuityError) -> [String: String] {
        do {
            return try store.database.read { db in
                Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT address, fingerprint FROM continuity")
                    .map { ($0["address"] as String, $0["fingerprint"] as String) })
            }
        } catch {
            throw KeyContinuityError(description: "cannot read the key continuity records in the store (\(LocalStore.describe(error)))")
        }
    }

    static func record(_ address: String, fingerprint: String, at time: Double, in db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO continuity (address, fingerprint, recorded) VALUES (?, ?, ?)",
                       arguments: [address.lowercased(), fingerprint.uppercased(), time])
    }
}
