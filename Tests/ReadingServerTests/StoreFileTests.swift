import Foundation
import GRDB
import PartialEncryption
import Platform
@testable import ReadingServer
import TestSupport
import Testing

@Suite("The store's file")
struct StoreFileTests {
    /// The table exactly as the hand-written store over CSQLite made it (journal mode DELETE, no migration records).
    static let oldSchema = """
        PRAGMA journal_mode = DELETE;
        CREATE TABLE IF NOT EXISTS postcards (
            id TEXT PRIMARY KEY,
            document BLOB NOT NULL,
            delete_token_sha256 BLOB NOT NULL,
            created INTEGER NOT NULL,
            expires INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS postcards_expires ON postcards(expires);
        """

    @Test("a documents file made by the store before GRDB opens: its entries are served, deleted and purged; new ones go beside them")
    func oldFile() throws {
        let folder = try makePrivateDirectory(prefix: "ms-oldstore")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/s.sqlite"
        let old = Array("{\"v\":1,\"old\":\"made by the old store\"}".utf8)
        do {
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: Self.oldSchema)
                try db.execute(sql: "INSERT INTO postcards VALUES (?, ?, ?, ?, ?)", arguments: ["old", Data(old), Data([7, 7]), 100, 500])
                try db.execute(sql: "INSERT INTO postcards VALUES (?, ?, ?, ?, ?)", arguments: ["gone", Data([1]), Data([8]), 100, 150])
            }
            try queue.close()
        }
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the old file is in journal mode DELETE")
        let store = try PostcardStore(path: path)
        #expect(try store.count() == 2)
        #expect(try store.find(id: "old", now: 200)?.document == old, "an entry stored before GRDB is served as it was stored")
        #expect(try store.deleteTokenDigest(id: "old") == [7, 7])
        try store.insert(id: "new", document: [9, 9, 9], deleteTokenDigest: [3], created: 200, expires: 900)
        #expect(try store.find(id: "new", now: 300)?.document == [9, 9, 9])
        #expect(try store.purge(now: 200) == 1)
        #expect(try store.delete(id: "old"))
        #expect(try store.count() == 1)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Opened again (a restart): the migrations are not run twice.
        #expect(try PostcardStore(path: path).find(id: "new", now: 300)?.document == [9, 9, 9])
    }

    @Test("deleted and purged documents leave neither the file nor its WAL while the store stays open")
    func deletedBytesGo() throws {
        let folder = try makePrivateDirectory(prefix: "ms-storewal")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/s.sqlite"
        let store = try PostcardStore(path: path)
        let marker = Array("MARKER-wqpzkvxj-".utf8) + Array(repeating: UInt8(ascii: "w"), count: 300)
        try store.insert(id: "a", document: marker, deleteTokenDigest: [1], created: 100, expires: 200)
        try store.insert(id: "b", document: marker.reversed(), deleteTokenDigest: [2], created: 100, expires: 900)
        #expect(try store.purge(now: 300) == 1)
        #expect(try store.delete(id: "b"))
        for name in ["", "-wal"] {
            let bytes = FileManager.default.contents(atPath: path + name) ?? Data()
            #expect(bytes.range(of: Data("MARKER-wqpzkvxj".utf8)) == nil, "s.sqlite\(name)")
            #expect(bytes.range(of: Data("jxvkzpqw-REKRAM".utf8)) == nil, "s.sqlite\(name)")
        }
        let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "the WAL is truncated after a deletion")
    }

    @Test("a damaged documents file (bytes flipped, cut short): one line and 75, never a crash, never another document")
    func damage() throws {
        let folder = try makePrivateDirectory(prefix: "ms-storedamage")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var generator = SystemRandomNumberGenerator()
        var refusedAtOpen = 0, readsRefused = 0, served = 0
        for round in 0..<60 {
            let path = folder + "/s\(round).sqlite"
            var documents: [String: [UInt8]] = [:]
            do {
                let store = try PostcardStore(path: path)
                for index in 0..<24 {
                    let id = "id\(index)"
                    let size = Int.random(in: 10...1500, using: &generator)
                    documents[id] = Array("DOC-\(index)-".utf8) + (0..<size).map { _ in UInt8.random(in: 32...126, using: &generator) }
                    try store.insert(id: id, document: documents[id]!, deleteTokenDigest: [UInt8(index)], created: 1, expires: 1000)
                }
            }
            var bytes = try #require(FileManager.default.contents(atPath: path).map(Array.init))
            if round % 3 == 0 {
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &generator))
            } else {
                for _ in 0..<Int.random(in: 1...16, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
                }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))

            func expectClear(_ error: StoreError, _ what: String) {
                #expect(!error.description.contains("\n") && !error.description.isEmpty, "\(round) \(what): \(error)")
                #expect(!error.description.contains("DOC-"), "\(round) \(what): no stored content in the line")
                #expect(error.exitStatus == .temporary, "\(round) \(what): \(error)")
            }
            // Through untyped closures: Swift 6.3's SILGen crashes on a catch
            // binding the error of a typed `throws(StoreError)` call here.
            let open: () throws -> PostcardStore = { try PostcardStore(path: path) }
            let store: PostcardStore
            do { store = try open() } catch let error as StoreError {
                expectClear(error, "open")
                refusedAtOpen += 1
                continue
            }
            for (id, document) in documents {
                let find: () throws -> StoredPostcard? = { try store.find(id: id, now: 500) }
                do {
                    if let found = try find() {
                        #expect(found.id == id && found.document == document, "\(round): \(id) served as it was stored, or not at all")
                        served += 1
                    }
                } catch let error as StoreError {
                    expectClear(error, "find \(id)")
                    readsRefused += 1
                }
            }
        }
        // Both outcomes were seen: damage found at opening, and after it.
        #expect(refusedAtOpen > 0 && served > 0, "\(refusedAtOpen) refused at open, \(readsRefused) reads refused, \(served) served")
    }

    @Test("mailsec serve on a damaged documents file: one line on stderr and 75")
    func serveRefusesDamage() throws {
        let folder = try makePrivateDirectory(prefix: "ms-servedamage")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/s.sqlite"
        do { try PostcardStore(path: path).insert(id: "a", document: [1, 2, 3], deleteTokenDigest: [1], created: 1, expires: 9) }
        _ = FileManager.default.createFile(atPath: folder + "/token", contents: Data("0123456789abcdefghij".utf8),
                                       attributes: [.posixPermissions: 0o600])
        for cut in [0, 100, 2000] {
            let bytes = try #require(FileManager.default.contents(atPath: path))
            if cut == 0 { try Data().write(to: URL(fileURLWithPath: path)) } else { try bytes.prefix(cut).write(to: URL(fileURLWithPath: path)) }
            let result = try run(Paths.mailsecExecutable.path, ["serve", "--port", "0", "--store", path, "--token-file", folder + "/token"])
            #expect(result.status == 75, "cut at \(cut): \(result.status) \(result.errors)")
            #expect(result.errors.split(separator: "\n").count == 1 && result.errors.contains(path), "cut at \(cut): \(result.errors)")
            #expect(!result.output.contains("listening"))
        }
    }
}
