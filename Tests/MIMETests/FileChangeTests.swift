import Foundation
@testable import MIME
import Testing

/// A file is checked before GMime reads it (NULs, encoded-words, bare CRs:
/// ``MIMEMessage/Source``), and GMime then reads it again: a file written in
/// between would be parsed unchecked. So a file that changed between the two
/// is refused, to be read again; one that did not is parsed as before.
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

    @Test("written in place, appended to, cut short or touched between the checks and GMime's read: refused; left alone: parsed")
    func changedBetweenChecksAndRead() throws {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<40 {
            let text = randomMail(&rng)
            let (path, fd) = try mailFile(text)
            defer { close(fd); unlink(path) }
            let source = try MIMEMessage.Source(fd, options: .standard, mbox: false)
            let change = round % 5
            switch change {
            case 0: break  // unchanged: parses
            case 1:  // the same size, a header written over the body's start: a NUL the checks never saw
                let header = Array("Subject: x\0y\n".utf8)
                _ = header.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(text.utf8.count - header.count)) }
            case 2: _ = Array("more\n".utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(text.utf8.count)) }
            case 3: _ = ftruncate(fd, off_t(text.utf8.count / 2))
            default:  // the same bytes written again: its times change
                _ = Array(text.utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            }
            if change == 0 {
                let message = try MIMEMessage.parse(source, fd: fd, options: .standard)
                #expect(message.header("To") == "b@example.org")
            } else {
                #expect(throws: MIMEError.self, "change \(change) went unnoticed") { try MIMEMessage.parse(source, fd: fd, options: .standard) }
            }
        }
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
