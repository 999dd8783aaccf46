import Foundation
@testable import MIME
import Testing

/// A file is checked before GMime reads it (NULs, encoded-words, bare CRs): a
/// single message is read once and GMime parses the bytes checked; a mailbox
/// is streamed (read twice), so one that changed between the two reads is
/// refused, to be read again (``MIMEMessage/FileStamp``).
@Suite("A mail file that changes while it is read is refused, not parsed unchecked")
struct FileChangeTests {
    private func mailFile(_ text: String) throws -> (path: String, fd: Int32) {
        let path = NSTemporaryDirectory() + "/ms-change-\(UInt64.random(in: 0...UInt64.max)).eml"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        let fd = open(path, O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        return (path, fd)
    }

    private func randomMail(_ rng: inout some RandomNumberGenerator) -> String {
        let words = (0..<Int.random(in: 1...200, using: &rng)).map { _ in String(repeating: "x", count: Int.random(in: 1...12, using: &rng)) }
        return "From: a@example.org\nTo: b@example.org\nSubject: s\(Int.random(in: 0...999, using: &rng))\n\n" + words.joined(separator: " ") + "\n"
    }

    @Test("a byte of a header flipped to NUL and back through a shared memory mapping while the file is parsed: refused or parsed whole, never parsed unchecked")
    func storesThroughASharedMapping() throws {
        // Stores into a page already written change no time of the file, so no stamp sees
        // them: only parsing the bytes that were checked holds (a hostile review: 14 of 200
        // runs of `mailsec redact` parsed a header the NUL check never saw).
        var rng = SystemRandomNumberGenerator()
        var refused = 0, parsed = 0
        for _ in 0..<6 {
            let text = "From: a@example.org\nSubject: s X\(Int.random(in: 0...999, using: &rng))\nTo: b@example.org\n\n"
                + randomMail(&rng).split(separator: "\n\n", maxSplits: 1)[1]
            let (path, fd) = try mailFile(text)
            defer { close(fd); unlink(path) }
            let at = Array(text.utf8).firstIndex(of: UInt8(ascii: "X"))!
            // Another process stores into the file's page through its own shared mapping.
            let flipper = Process()
            flipper.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            flipper.arguments = ["-c", """
                import mmap, os, sys
                fd = os.open(sys.argv[1], os.O_RDWR); m = mmap.mmap(fd, 0, mmap.MAP_SHARED); at = int(sys.argv[2])
                print("ready", flush=True)
                while True:
                    m[at] = 0; m[at] = 88
                """, path, String(at)]
            let ready = Pipe()
            flipper.standardOutput = ready
            try flipper.run()
            // SIGKILL: a child of the test runner may inherit SIGTERM blocked, and run on.
            defer { kill(flipper.processIdentifier, SIGKILL); flipper.waitUntilExit() }
            _ = ready.fileHandleForReading.availableData  // "ready": the mapping is written
            for _ in 0..<400 {
                do {
                    let message = try MIMEMessage.parse(contentsOf: path)
                    parsed += 1
                    // Checked with an X, or checked with a NUL and refused: never a field cut at a NUL.
                    #expect(message.header("To") == "b@example.org" && message.subject?.hasPrefix("s X") == true,
                            "parsed bytes that were not checked: To \(message.header("To") ?? "none"), Subject \(message.subject ?? "none")")
                } catch let error as MIMEError {
                    refused += 1
                    #expect(error.code == .nulInHeader, "\(error)")
                }
            }
        }
        print("shared mapping: \(parsed) parsed, \(refused) refused")
        #expect(parsed > 0 && refused > 0, "the flips raced the parse both ways")
    }

    @Test("an mbox written to after its first message was handed on: the next is not handed on")
    func mboxChangedMidway() throws {
        var rng = SystemRandomNumberGenerator()
        let count = Int.random(in: 3...8, using: &rng)
        let text = (0..<count).map { _ in "From a@example.org Thu Nov 26 10:00:00 2026\n" + randomMail(&rng) }.joined(separator: "\n")
        let (path, fd) = try mailFile(text)
        defer { close(fd); unlink(path) }
        var seen = 0
        try MIMEMessage.forEachInMbox(contentsOf: path) { _ in seen += 1 }
        #expect(seen == count, "unchanged: every message")
        seen = 0
        #expect(throws: MIMEError.self) {
            try MIMEMessage.forEachInMbox(contentsOf: path) { _ in
                seen += 1
                _ = Array("x".utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(text.utf8.count - 2)) }
            }
        }
        #expect(seen == 1, "after the change, no further message (\(seen) handed on)")
    }
}

