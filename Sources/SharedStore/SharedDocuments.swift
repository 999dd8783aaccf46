import Foundation
import PostgresNIO
import ReadingServer

/// The reading server's documents in the shared database: a page published
/// through one server opens on every other. The same entries as the SQLite
/// file's (``PostcardStore``): identifier, document, the deletion token's
/// SHA-256, creation and expiry; expired entries are never returned and are
/// deleted by ``purge(now:)``. Asynchronous, for the server's handlers.
package final class SharedDocuments: DocumentStore {
    let database: SharedDatabase

    /// The documents in `database`.
    package init(_ database: SharedDatabase) { self.database = database }

    private func run(_ what: String, _ query: PostgresQuery) async throws(StoreError) -> PostgresQueryResult {
        do { return try await database.query(query) } catch {
            // Unreachable or refused: temporary (75), like a busy SQLite file.
            throw StoreError(code: .error, description: "\(what): \(error.description)")
        }
    }

    private func damaged() -> StoreError {
        StoreError(code: .corrupt, description: "the shared store \(database.settings.displayURL) holds a damaged entry")
    }

    /// Stores a document.
    package func insert(id: String, document: [UInt8], deleteTokenDigest: [UInt8], created: Int64, expires: Int64) async throws(StoreError) {
        _ = try await run("cannot store the document", """
            INSERT INTO postcards (id, document, delete_token_sha256, created, expires)
            VALUES (\(id), \(ByteBuffer(bytes: document)), \(ByteBuffer(bytes: deleteTokenDigest)), \(created), \(expires))
            """)
    }

    /// The entry `id` if it exists and has not expired at `now`.
    package func find(id: String, now: Int64) async throws(StoreError) -> StoredPostcard? {
        let rows = try await run("cannot read the store",
                                 "SELECT id, document, created, expires FROM postcards WHERE id = \(id) AND expires > \(now)")
        guard let row = rows.first else { return nil }
        guard let (found, document, created, expires) = try? row.decode((String, ByteBuffer, Int64, Int64).self), found == id else {
            throw damaged()
        }
        return StoredPostcard(id: id, document: Array(document.readableBytesView), created: created, expires: expires)
    }

    /// The SHA-256 of the deletion token of `id`, nil when there is no such entry.
    package func deleteTokenDigest(id: String) async throws(StoreError) -> [UInt8]? {
        let rows = try await run("cannot read the store", "SELECT delete_token_sha256 FROM postcards WHERE id = \(id)")
        guard let row = rows.first else { return nil }
        guard let digest = try? row.decode(ByteBuffer.self) else { throw damaged() }
        return Array(digest.readableBytesView)
    }

    /// Deletes `id`; true when there was such an entry.
    @discardableResult
    package func delete(id: String) async throws(StoreError) -> Bool {
        try await run("cannot delete from the store", "DELETE FROM postcards WHERE id = \(id)").metadata.rows ?? 0 > 0
    }

    /// Deletes every entry expired at `now`; returns how many.
    @discardableResult
    package func purge(now: Int64) async throws(StoreError) -> Int {
        try await run("cannot purge the store", "DELETE FROM postcards WHERE expires <= \(now)").metadata.rows ?? 0
    }

    /// How many entries there are.
    package func count() async throws(StoreError) -> Int {
        let rows = try await run("cannot read the store", "SELECT count(*) FROM postcards")
        guard let row = rows.first, let count = try? row.decode(Int64.self) else { throw damaged() }
        return Int(count)
    }
}
