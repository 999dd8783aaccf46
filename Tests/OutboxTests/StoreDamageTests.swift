import Foundation
import GRDB
import Outbox
@testable import Store
import Testing
import TestSupport

/// Issue 22, item 18: a store file cut to 0 bytes was taken for a new store
/// (the outbox "empty"), and a WAL cut in half or overwritten lost 3 of 4
/// queued mails in silence: SQLite's recovery stops at the first frame that
/// fails its checksum. A store that exists is never made anew; a WAL that
/// fails its checksums is reported (75), and kept.
@Suite("A damaged store is reported, never taken for an empty one", .serialized)
struct StoreDamageTests {
    func copy(_ from: String, _ to: String) throws {
        guard let data = FileManager.default.contents(atPath: from) else { return }
        try data.write(to: URL(fileURLWithPath: to))
        chmod(to, 0o600)
    }

    /// A store with four mails queued, each in its own transaction, still open
    /// (so its WAL holds them), and `body` given a crash image of it made anew
    /// for each call of the closure it gets: the folder of a copy of the
    /// database, its WAL and (unless `withIndex` is false) its index.
    func withQueuedStore(_ body: (_ image: (_ withIndex: Bool) throws -> String) throws -> Void) throws {
        let folder = try makePrivateDirectory(prefix: "ms-storedmg")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try LocalStore(folder: folder + "/live")
        let outbox = Outbox(store: store)
        for number in 0..<4 {
            try outbox.enqueue(sender: "a@example.org", messageID: "m\(number)@x", origin: "test",
                               copies: [NewCopy(kind: "postcard", recipients: ["b\(number)@example.org"],
                                                message: Array(String(repeating: "mail \(number) ", count: 500).utf8))])
        }
        var made = 0
        try withExtendedLifetime(store) {
            try body { withIndex in
                made += 1
                let image = folder + "/image\(made)"
                mkdir(image, 0o700)
                for suffix in ["", "-wal"] + (withIndex ? ["-shm"] : []) {
                    try copy(folder + "/live/mailsec.sqlite" + suffix, image + "/mailsec.sqlite" + suffix)
                }
                return image
            }
        }
    }

    /// Opens the store in `folder`: nil when it refused as damaged, else how many mails its outbox has.
    func opened(_ folder: String) throws -> Int? {
        do {
            return try Outbox(store: LocalStore(folder: folder)).entries().count
        } catch LocalStoreError.Code.damaged {
            return nil
        }
    }

    @Test("a crash image of the store opens with all four mails; its WAL cut, overwritten or a frame damaged: refused as damaged, never fewer mails")
    func damagedWAL() throws {
        try withQueuedStore { image in
            let whole = try image(true)
            let wal = try [UInt8](Data(contentsOf: URL(fileURLWithPath: whole + "/mailsec.sqlite-wal")))
            #expect(wal.count > 4 * 4096, "the WAL holds the four mails (\(wal.count) bytes)")
            #expect(try opened(whole) == 4)
            var random = SystemRandomNumberGenerator()
            let pageSize = 4096, frame = pageSize + 24
            let frames = (wal.count - 32) / frame
            var damages: [(String, Bool, [UInt8])] = [
                ("cut in half", true, Array(wal.prefix(wal.count / 2))),
                ("overwritten", true, (0..<wal.count).map { _ in UInt8.random(in: 0...255, using: &random) }),
                ("zeroed", true, [UInt8](repeating: 0, count: wal.count)),
                ("the header overwritten, no index", false, (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) } + wal.dropFirst(32)),
            ]
            for _ in 0..<6 {
                damages.append(("cut at a random byte", true, Array(wal.prefix(Int.random(in: 1..<wal.count, using: &random)))))
                var flipped = wal
                let at = 32 + Int.random(in: 0..<(frames * frame), using: &random)
                flipped[at] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
                damages.append(("a bit flipped at \(at)", true, flipped))
                // Without the index only a frame with intact ones after it can be told from a torn last write.
                var middle = wal
                let inner = Int.random(in: 0..<(frames - 1), using: &random)
                middle[32 + inner * frame + 24 + Int.random(in: 0..<pageSize, using: &random)] ^= 0x10
                damages.append(("frame \(inner + 1) of \(frames) damaged, no index", false, middle))
            }
            for (what, withIndex, bytes) in damages {
                let folder = try image(withIndex)
                try Data(bytes).write(to: URL(fileURLWithPath: folder + "/mailsec.sqlite-wal"))
                do {
                    _ = try LocalStore(folder: folder)
                    Issue.record("\(what): opened")
                } catch LocalStoreError.Code.damaged {
                    let error = try #require(throws: LocalStoreError.self) { _ = try LocalStore(folder: folder) }
                    #expect(error.description.contains(folder + "/mailsec.sqlite-wal") && !error.description.contains("\n"), "\(error)")
                    #expect(FileManager.default.contents(atPath: folder + "/mailsec.sqlite-wal.damaged") == Data(bytes), "\(what): kept aside")
                    #expect(FileManager.default.contents(atPath: folder + "/mailsec.sqlite-wal") == Data(bytes), "\(what): left as it was")
                }
            }
        }
    }

    /// submission-e2e, kill -9 during DATA: the store was refused as damaged ("frame 915
    /// fails its checksum, later frames do not") after a process died in a transaction
    /// that had rewritten a spilled frame in place. With the index, frames past the
    /// committed ones are no sign of damage: the store opens with every committed mail.
    @Test("an uncommitted tail with a broken frame and intact ones after it, the index intact: the store opens with all four mails")
    func uncommittedTailAfterCrash() throws {
        try withQueuedStore { image in
            let folder = try image(true)
            let path = folder + "/mailsec.sqlite-wal"
            let wal = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let frame = 4096 + 24
            let last = Array(wal.suffix(frame))
            // Two more frames of this WAL (its salts), the first with a broken checksum.
            var broken = last
            broken[24 + 100] ^= 0x20
            try Data(wal + broken + last).write(to: URL(fileURLWithPath: path))
            #expect(try opened(folder) == 4, "the committed mails are all there")
            // Without the index, the same WAL cannot be told from damage inside committed frames.
            let bare = try image(false)
            try Data(wal + broken + last).write(to: URL(fileURLWithPath: bare + "/mailsec.sqlite-wal"))
            #expect(throws: LocalStoreError.self) { _ = try LocalStore(folder: bare) }
        }
    }

    @Test("the store file emptied, not SQLite, or a folder: refused (damaged) with one line naming it, and not made anew")
    func damagedFile() throws {
        let folder = try makePrivateDirectory(prefix: "ms-storedmg")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            let store = try LocalStore(folder: folder + "/data")
            try Outbox(store: store).enqueue(sender: "a@example.org", messageID: "m@x", origin: "test",
                                             copies: [NewCopy(kind: "postcard", recipients: ["b@example.org"], message: Array("hi".utf8))])
        }
        let file = folder + "/data/mailsec.sqlite"
        #expect(access(file + "-wal", F_OK) != 0, "closed: the WAL was checkpointed and removed")
        for (what, damage) in [("emptied", Data()), ("not SQLite", Data(repeating: 0x41, count: 8192))] {
            try damage.write(to: URL(fileURLWithPath: file))
            let error = try #require(throws: LocalStoreError.self, "\(what)") { _ = try LocalStore(folder: folder + "/data") }
            #expect(error.code == .damaged && error.description.contains(file) && !error.description.contains("\n"), "\(error)")
            #expect(FileManager.default.contents(atPath: file) == damage, "\(what): left as it was")
        }
        unlink(file)
        mkdir(file, 0o700)
        #expect(throws: LocalStoreError.self) { _ = try LocalStore(folder: folder + "/data") }
    }

    @Test("a new store is made whole under another name and linked into place: the store's own name never holds an empty file")
    func newStore() throws {
        let folder = try makePrivateDirectory(prefix: "ms-storedmg")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try LocalStore(folder: folder + "/data")
        #expect(try Outbox(store: store).entries().isEmpty)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder + "/data")
        #expect(!names.contains { $0.contains(".new.") }, "\(names)")
        let header = try #require(FileManager.default.contents(atPath: folder + "/data/mailsec.sqlite")).prefix(16)
        #expect(header == Data("SQLite format 3\0".utf8))
    }
}
