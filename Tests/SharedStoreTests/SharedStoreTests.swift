import Foundation
import Pipeline
import Platform
import ReadingServer
import Settings
import Synchronization
import Testing
import TestSupport
@testable import SharedStore

/// A client's settings for `database` on `server`, the password from a 0600 file.
func settings(_ server: PostgresServer, _ database: String, folder: String) throws -> StoreSettings {
    let file = folder + "/password-\(UInt32.random(in: 0...UInt32.max))"
    let text = try server.storeTable(database: database, passwordFile: file)
    let top = TOMLKeys(try TOMLKeys.document(text), "")
    return try #require(try StoreSettings.read(top))
}

/// `count` fresh clients of one new database on the shared server.
func clients(_ count: Int, server: PostgresServer = .shared) throws -> (databases: [SharedDatabase], name: String, folder: String) {
    let folder = try makePrivateDirectory(prefix: "ms-store")
    let name = try server.makeDatabase()
    let store = try settings(server, name, folder: folder)
    return (try (0..<count).map { _ in try SharedDatabase(store) }, name, folder)
}

let fingerprints = (0..<6).map { String(repeating: String(UnicodeScalar(UInt8(0x41 + $0))), count: 40) }

/// Runs `body` on a thread of its own, as the resident filter's workers do, and waits for it.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let work: @Sendable () -> Void = { continuation.resume(with: Result { try body() }) }
        Thread(block: work).start()
    }
}

@Suite(.serialized) struct SharedSchemaTests {
    /// Two (and then eight) nodes starting at once: every one migrates or finds
    /// it done, and each version is applied once (a second apply would fail
    /// its version row's primary key, and its CREATE TABLE).
    @Test func migrationsRunOnceWhenClientsStartAtOnce() async throws {
        for count in [2, 8] {
            let (databases, name, _) = try clients(count)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for database in databases {
                    group.addTask { _ = try await database.query("SELECT count(*) FROM key_continuity") }
                }
                try await group.waitForAll()
            }
            let versions = try PostgresServer.shared.superuser("COPY (SELECT version FROM schema_version ORDER BY version) TO STDOUT;",
                                                               database: name)
            #expect(versions.output == (1...SharedSchema.version).map { "\($0)\n" }.joined())
            for database in databases { database.close() }
        }
    }

    /// A database whose schema is newer than this program's is refused, not written.
    @Test func newerSchemaRefused() async throws {
        let (databases, name, _) = try clients(1)
        _ = try await databases[0].query("SELECT 1")
        databases[0].close()
        try PostgresServer.shared.superuser("INSERT INTO schema_version (version) VALUES (\(SharedSchema.version + 1));", database: name)
        let fresh = try SharedDatabase(databases[0].settings)
        await #expect { _ = try await fresh.query("SELECT 1") } throws: { error in
            "\(error)".contains("newer than this mailsec knows")
        }
    }
}

@Suite(.serialized) struct SharedContinuityTests {
    /// The basics: nothing remembered, a record, the same for another node, forgetting.
    @Test func recordRememberForget() throws {
        let (databases, _, _) = try clients(2)
        let a = SharedContinuity(databases[0]), b = SharedContinuity(databases[1])
        #expect(try a.remembered(["Bob@Example.org"]).isEmpty)
        try a.record("Bob@Example.org", fingerprint: fingerprints[0].lowercased())
        #expect(try b.remembered(["bob@example.org"]) == ["bob@example.org": fingerprints[0]])
        #expect(try b.forget("BOB@example.org"))
        #expect(try a.remembered(["bob@example.org"]).isEmpty)
        #expect(try !b.forget("bob@example.org"))
        #expect(try !a.forget("nobody@example.org"))
    }

    /// A node with an older view never overwrites a newer record: B read
    /// before A's change, so B's write is refused (75) and A's key stays.
    @Test func olderViewRefused() throws {
        let (databases, _, _) = try clients(2)
        let a = SharedContinuity(databases[0]), b = SharedContinuity(databases[1])
        _ = try a.remembered(["bob@example.org"])
        _ = try b.remembered(["bob@example.org"])
        try a.record("bob@example.org", fingerprint: fingerprints[1])
        #expect { try b.record("bob@example.org", fingerprint: fingerprints[2]) } throws: { error in
            (error as? KeyContinuityError)?.exitStatus == .temporary
        }
        #expect(try b.remembered(["bob@example.org"]) == ["bob@example.org": fingerprints[1]])
        // Having read the newer record, B may move it forward.
        try b.record("bob@example.org", fingerprint: fingerprints[2])
        #expect(try a.remembered(["bob@example.org"]) == ["bob@example.org": fingerprints[2]])
        // A view from before a forgetting is refused too.
        _ = try a.remembered(["bob@example.org"])
        #expect(try b.forget("bob@example.org"))
        #expect(throws: KeyContinuityError.self) { try a.record("bob@example.org", fingerprint: fingerprints[3]) }
        #expect(try b.remembered(["bob@example.org"]).isEmpty)
        // Recording the key already there is no change, whatever the view.
        _ = try a.remembered(["carol@example.org"])
        _ = try b.remembered(["carol@example.org"])
        try a.record("carol@example.org", fingerprint: fingerprints[4])
        try b.record("carol@example.org", fingerprint: fingerprints[4])
        // Without a view (a retry recording a letter handed on before) a record is only made where there is none.
        try a.record("carol@example.org", fingerprint: fingerprints[5])
        #expect(try b.remembered(["carol@example.org"]) == ["carol@example.org": fingerprints[4]])
        try a.record("dave@example.org", fingerprint: fingerprints[5])
        #expect(try b.remembered(["dave@example.org"]) == ["dave@example.org": fingerprints[5]])
    }

    /// Random interleavings of two nodes reading and writing one address,
    /// step by step, against a model: a write succeeds exactly when the
    /// node's view is the current record (or it writes the key already
    /// there), and the database always holds what the model says.
    @Test(arguments: 0..<4) func randomInterleavingsMatchTheModel(seed: Int) throws {
        let (databases, _, _) = try clients(3)
        let nodes = [SharedContinuity(databases[0]), SharedContinuity(databases[1])]
        let observer = SharedContinuity(databases[2])
        var random = SeededRandom(seed: UInt64(seed + 1) &* 0x9E37_79B9_7F4A_7C15)  // the interleavings as before
        // The model: whether the row exists, its key and generation; each node's view (nil: used, or never read).
        var exists = false, current: String?, generation = 0
        var views: [Int?] = [nil, nil]
        var refusals = 0, writes = 0
        for _ in 0..<200 {
            let node = Int(random.next() % 2)
            switch random.next() % 5 {
            case 0, 1:
                let seen = try nodes[node].remembered(["bob@example.org"])
                #expect(seen["bob@example.org"] == current)
                views[node] = exists ? generation : 0
            case 2, 3:
                let key = fingerprints[Int(random.next() % 3)]
                let view = views[node]
                views[node] = nil
                let allowed: Bool, writes_: Bool
                if let view, view > 0 {
                    (allowed, writes_) = view == generation ? (true, true) : (current == key, false)
                } else if !exists {
                    (allowed, writes_) = (true, true)
                } else {
                    (allowed, writes_) = view == nil ? (true, false) : (current == key, false)
                }
                do {
                    try nodes[node].record("bob@example.org", fingerprint: key)
                    #expect(allowed, "a write on an older view was taken")
                } catch {
                    #expect(!allowed, "refused although the view was current")
                    refusals += 1
                }
                if writes_ {
                    current = key
                    generation = exists ? generation + 1 : 1
                    exists = true
                    writes += 1
                }
            default:
                let had = try nodes[node].forget("bob@example.org")
                #expect(had == (current != nil))
                if exists { generation += 1 }
                current = nil
            }
            #expect(try observer.remembered(["bob@example.org"])["bob@example.org"] == current)
        }
        #expect(refusals > 0 && writes > 0)
    }

    /// Two nodes racing for real, each on threads of its own (as the
    /// resident filter's workers): every successful write was made on the
    /// view its thread read, so the generations of successful writes are
    /// all different and the final record is the last one written.
    @Test func concurrentNodesNeverOverwriteNewer() async throws {
        let (databases, name, _) = try clients(2)
        let nodes = [SharedContinuity(databases[0]), SharedContinuity(databases[1])]
        let (wins, refusals) = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for worker in 0..<4 {
                group.addTask {
                    try await onThread {
                        let node = nodes[worker % 2]
                        var wins = 0, refusals = 0
                        for round in 0..<60 {
                            _ = try node.remembered(["bob@example.org"])
                            do {
                                try node.record("bob@example.org", fingerprint: fingerprints[(worker + round) % fingerprints.count])
                                wins += 1
                            } catch {
                                refusals += 1
                            }
                        }
                        return (wins, refusals)
                    }
                }
            }
            return try await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
        #expect(wins + refusals == 240)
        #expect(refusals > 0, "four writers on one address never collided")
        // Every success moved the generation by one at most (a success with the key already there moves it not at all).
        let row = try PostgresServer.shared.superuser("COPY (SELECT generation FROM key_continuity) TO STDOUT;", database: name)
        let generation = try #require(Int(row.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(generation >= 1 && generation <= wins)
    }
}
