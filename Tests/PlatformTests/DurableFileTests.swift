import Foundation
import Glibc
import Platform
import Synchronization
import Testing
import TestSupport

@Suite("DurableFile: whole or not at all, nothing left behind", .serialized)
struct DurableFileTests {
    /// Names in `folder` other than `keep`: what a failed or finished write left behind.
    func leftovers(_ folder: String, keeping keep: Set<String>) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { !keep.contains($0) }
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    @Test("random contents and sizes, written over each other: the last one whole, 0600, no temporary left")
    func randomContents() throws {
        let folder = try makePrivateDirectory(prefix: "durable")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var random = SeededRandom(seed: UInt64.random(in: 0...UInt64.max))
        let path = folder + "/record"
        for _ in 0..<24 {
            let count = [0, 1, Int.random(in: 2...4096, using: &random), Int.random(in: 4097...(1 << 20), using: &random)]
                .randomElement(using: &random)!
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            try DurableFile.replace(path, with: bytes, sync: Bool.random(using: &random))
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == bytes)
            #expect(mode(path) == 0o600)
            #expect(try leftovers(folder, keeping: ["record"]).isEmpty)
        }
    }

    @Test("a full disk (bytes, then inodes): .write or .create, the old file as it was, no temporary left; freed, it writes")
    func fullDisk() throws {
        let folder = try makePrivateDirectory(prefix: "durable-full")
        defer { _ = try? run("/bin/umount", [folder]); try? FileManager.default.removeItem(atPath: folder) }
        let mounted = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=256k,nr_inodes=4,mode=700", "tmpfs", folder])
        guard mounted.status == 0 else {
            Issue.record("cannot mount a tmpfs here: \(mounted.errors)")
            return
        }
        let path = folder + "/record", old = Array(repeating: UInt8(ascii: "o"), count: 64 << 10)
        try DurableFile.replace(path, with: old)
        for size in [200 << 10, 300 << 10, 1 << 20] {
            let bytes = Array(repeating: UInt8(ascii: "n"), count: size)
            #expect {
                try DurableFile.replace(path, with: bytes)
            } throws: { error in
                (error as? DurableFile.Failure)?.step == .write && (error as? DurableFile.Failure)?.reason.rawValue == ENOSPC
            }
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == old)
            #expect(try leftovers(folder, keeping: ["record"]).isEmpty)
        }
        // Inodes: the root, the record and two more names take all four.
        try DurableFile.replace(folder + "/a", with: [1])
        try DurableFile.replace(folder + "/b", with: [2])
        #expect {
            try DurableFile.replace(path, with: [3])
        } throws: { error in
            (error as? DurableFile.Failure)?.step == .create
        }
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == old)
        unlink(folder + "/a")
        let new = Array(repeating: UInt8(ascii: "n"), count: 100 << 10)
        try DurableFile.replace(path, with: new)
        #expect(FileManager.default.contents(atPath: path).map(Array.init) == new)
        #expect(try leftovers(folder, keeping: ["record", "b"]).isEmpty)
    }

    @Test("a folder where the file goes: .rename, the temporary removed; a planted temporary name: .create, its target untouched")
    func cannotPlace() throws {
        let folder = try makePrivateDirectory(prefix: "durable-place")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/record", withIntermediateDirectories: false)
        #expect {
            try DurableFile.replace(folder + "/record", with: [1, 2, 3])
        } throws: { error in
            (error as? DurableFile.Failure)?.step == .rename
        }
        #expect(try leftovers(folder, keeping: ["record"]).isEmpty)
        // A link planted at the temporary's name is never followed.
        try Data("victim".utf8).write(to: URL(fileURLWithPath: folder + "/victim"))
        symlink(folder + "/victim", folder + "/planted")
        #expect {
            try DurableFile.replace(folder + "/other", with: [1], temporary: folder + "/planted")
        } throws: { error in
            (error as? DurableFile.Failure)?.step == .create
        }
        #expect(FileManager.default.contents(atPath: folder + "/victim") == Data("victim".utf8))
        #expect(!FileManager.default.fileExists(atPath: folder + "/other"))
    }

    @Test("create from 8 threads at once: one wins, the others see .exists and the winner's bytes whole")
    func firstWins() throws {
        for round in 0..<20 {
            let folder = try makePrivateDirectory(prefix: "durable-create")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = folder + "/secret"
            let outcomes = Mutex([Int: DurableFile.Failure.Step?]())
            DispatchQueue.concurrentPerform(iterations: 8) { writer in
                let bytes = Array(repeating: UInt8(writer), count: 4096 + round)
                do throws(DurableFile.Failure) {
                    try DurableFile.create(path, with: bytes)
                    outcomes.withLock { $0[writer] = .some(nil) }
                } catch {
                    outcomes.withLock { $0[writer] = error.step }
                }
            }
            let all = outcomes.withLock { $0 }
            let winners = all.filter { $0.value == nil }.map(\.key)
            #expect(winners.count == 1)
            #expect(all.values.filter { $0 == .exists }.count == 7)
            if let winner = winners.first {
                #expect(FileManager.default.contents(atPath: path).map(Array.init) == Array(repeating: UInt8(winner), count: 4096 + round))
            }
            #expect(try leftovers(folder, keeping: ["secret"]).isEmpty)
        }
    }
}
