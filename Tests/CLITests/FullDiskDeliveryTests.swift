import Foundation
import TestSupport
import Testing

/// Issue 22, item 16: the store's disk filled while a copy streamed; the
/// server's 250 could not be recorded, the copy stayed `sending`, and the
/// next flush sent it again. The room to record a delivery is now set aside
/// before the first byte is sent. Tried on a small tmpfs left with exactly N
/// bytes free, for N across every step of a delivery.
@Suite("A full store disk during a delivery: every copy exactly once", .serialized)
struct FullDiskDeliveryTests {
    func mail(_ id: String) -> [UInt8] {
        Array("""
            From: Alice <alice@example.org>
            To: Bob <bob@example.org>
            Cc: nobody@example.net
            Subject: full disk
            Message-ID: <\(id)>

            """.utf8) + Array(String(repeating: "A line of text that makes the copy large enough to matter.\n", count: 5000).utf8)
    }

    /// Fills `folder`'s file system up to `free` bytes left (one file, `filler`).
    func fill(_ folder: String, leaving free: Int) -> Bool {
        var info = statvfs()
        guard statvfs(folder, &info) == 0 else { return false }
        let available = Int(info.f_bavail) * Int(info.f_frsize)
        guard available > free else { return true }
        let fd = open(folder + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        return posix_fallocate(fd, 0, off_t(available - free)) == 0
    }

    @Test("a flush with N bytes free on the store's disk, N from 0 up past a copy's size: 0 or 75; freed, every recipient has exactly one copy")
    func everyStep() throws {
        let setup = try SendingSetup()
        defer { setup.close() }
        let data = setup.folder + "/data"
        guard try setup.storeOnTmpfs(size: "6m", for: "full disk during a delivery") else { return }
        let first = try setup.mailsec(["send"], input: mail("fd.first@example.org"))
        #expect(first.status == 0, "\(first.errors)")
        let away = try setup.awayConfig()
        var random = SystemRandomNumberGenerator()
        var steps = Array(stride(from: 0, through: 1_100_000, by: 50_000))
        steps += (0..<4).map { _ in Int.random(in: 0...1_100_000, using: &random) }
        var deferred = 0
        for (number, free) in steps.enumerated() {
            let id = "fd.\(number)@example.org"
            let queued = try run(Paths.mailsecExecutable.path, ["send", "--config", away], input: mail(id), environment: setup.environment)
            #expect(queued.status == 75, "\(free): \(queued.errors)")
            #expect(fill(data, leaving: free), "\(free): cannot fill")
            let flushed = try setup.mailsec(["outbox", "flush"])
            #expect(flushed.status == 0 || flushed.status == 75, "\(free): \(flushed.status) \(flushed.errors)")
            if flushed.status == 75 {
                deferred += 1
                #expect(flushed.errors.split(separator: "\n").count == 1, "\(free): \(flushed.errors)")
            }
            unlink(data + "/filler")
            let again = try setup.mailsec(["outbox", "flush"])
            #expect(again.status == 0, "\(free): \(again.errors)")
            let delivered = setup.delivered().filter { $0.key.hasPrefix(id + " ") }
            #expect(delivered.count == 2 && delivered.values.allSatisfy { $0 == 1 }, "\(free) bytes free: \(delivered)")
        }
        print("full disk during a delivery: \(deferred) of \(steps.count) flushes deferred")
    }
}
