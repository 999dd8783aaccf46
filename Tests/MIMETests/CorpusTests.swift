import Foundation
@testable import MIME
import TestSupport
import Testing

/// The messages of `../shared/corpora/public` (see its SOURCES.tsv): every
/// file but the keys, the expected-output files (`*.json`, MimeKit's mbox
/// `*.html` and `*-summary.txt`), licences and READMEs. `*.mbox.txt` files hold many
/// messages each.
func corpusFiles(_ root: URL) -> [URL] {
    let skipped = ["json", "asc", "key", "tsv"]
    let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
    var files: [URL] = []
    while let url = enumerator?.nextObject() as? URL {
        guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
        let name = url.lastPathComponent
        if skipped.contains(url.pathExtension) || name == "COPYING" || name.hasPrefix("README") || name.hasSuffix("-summary.txt")
            || (url.path.contains("/mbox/") && url.pathExtension == "html") { continue }
        files.append(url)
    }
    return files.sorted { $0.path < $1.path }
}

/// The line endings a serialisation would have to keep for a byte-identical
/// round trip: nil when the input mixes them.
func lineEnding(of bytes: [UInt8]) -> Newline? {
    var crlf = 0, lf = 0
    for index in bytes.indices where bytes[index] == 10 {
        if index > 0 && bytes[index - 1] == 13 { crlf += 1 } else { lf += 1 }
    }
    if crlf > 0 && lf > 0 { return nil }
    return crlf > 0 ? .crlf : .lf
}

@Suite("The public corpus")
struct CorpusTests {
    @Test("every corpus message parses and writes back out; byte-identical ones are counted",
          .enabled(if: Paths.publicCorpus != nil,
                   "../shared/corpora/public is absent (a fresh clone has no ../shared): corpus NOT tested"))
    func corpus() throws {
        let root = try #require(Paths.publicCorpus)
        var messages = 0, parsed = 0, identical = 0, comparable = 0, withIssues = 0
        var failures: [String] = []
        var refused: [String] = []
        for url in corpusFiles(root) {
            let bytes = Array(try Data(contentsOf: url))
            let relative = String(url.path.dropFirst(root.path.count + 1))
            let isMbox = url.lastPathComponent.hasSuffix(".mbox.txt")
            do {
                let found = isMbox ? try MIMEMessage.parseMbox(bytes) : [try MIMEMessage.parse(bytes)]
                messages += found.count
                for message in found {
                    let ending = lineEnding(of: bytes) ?? .lf
                    let written = message.serialize(newline: ending)
                    guard !written.isEmpty else { failures.append("\(relative): wrote nothing"); continue }
                    _ = try MIMEMessage.parse(written)  // what we write must parse again
                    parsed += 1
                    if !message.parseIssues.isEmpty { withIssues += 1 }
                    if !isMbox, lineEnding(of: bytes) != nil {
                        comparable += 1
                        if written == bytes { identical += 1 }
                    }
                }
            } catch let error as MIMEError where error.code == .notParsable {
                // A clean refusal (for example a file with no header block), not a crash.
                messages += 1
                refused.append(relative)
            } catch {
                messages += 1
                failures.append("\(relative): \(error)")
            }
        }
        print("corpus: \(messages) messages, \(parsed) parsed and written back, \(refused.count) refused as "
              + "not a message \(refused), \(failures.count) failed, "
              + "\(identical) of \(comparable) single-file messages with uniform line endings byte-identical, "
              + "\(withIssues) with parse issues reported")
        #expect(messages > 500, "the corpus shrank: \(messages) messages")
        #expect(failures.isEmpty, "\(failures)")
        #expect(refused.count * 100 <= messages, "more than 1% refused: \(refused)")
    }
}

@Suite("Copies that share content, and the canonical form written in pieces")
struct SharingCopyTests {
    /// What `writeCanonicalForm(to:)` writes into a pipe, read back.
    func streamedCanonicalForm(_ entity: MIMEEntity) throws -> [UInt8] {
        final class Reader: @unchecked Sendable {  // written by the thread, read after `done`
            var bytes: [UInt8] = []
            let done = DispatchSemaphore(value: 0)
        }
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let reader = Reader(), readEnd = ends[0]
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                reader.bytes += chunk[..<count]
            }
            close(readEnd)
            reader.done.signal()
        }
        try entity.writeCanonicalForm(to: ends[1])
        reader.done.wait()
        return reader.bytes
    }

    @Test("over the corpus: a sharing copy writes out as the original, changing it leaves the original alone, the streamed canonical form is the one made in memory",
          .enabled(if: Paths.publicCorpus != nil,
                   "../shared/corpora/public is absent (a fresh clone has no ../shared): corpus NOT tested"))
    func corpus() throws {
        let root = try #require(Paths.publicCorpus)
        var checked = 0
        var failures: [String] = []
        for url in corpusFiles(root) where !url.lastPathComponent.hasSuffix(".mbox.txt") {
            let relative = String(url.path.dropFirst(root.path.count + 1))
            guard let message = try? MIMEMessage.parse(Array(try Data(contentsOf: url))) else { continue }
            let before = message.serialize()
            guard let copy = try? message.copySharingContent() else { failures.append("\(relative): no copy"); continue }
            if copy.serialize() != before {
                failures.append("\(relative): copy differs"); continue
            }
            guard let body = copy.body else { continue }
            copy.setHeader("Subject", "changed")
            let inner = try body.copySharingContent()
            inner.prependHeader("X-Inner", "yes")
            inner.setContentTypeParameter("hp", "cipher")
            let inMemory = try inner.copySharingContent().canonicalBytes()
            if try streamedCanonicalForm(inner) != inMemory { failures.append("\(relative): streamed canonical form differs") }
            if message.serialize() != before { failures.append("\(relative): the original changed") }
            checked += 1
        }
        print("sharing copies: \(checked) corpus messages checked, \(failures.count) failed")
        #expect(checked > 400)
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test("the line scan finds a From line and white space at a line end across any split into pieces")
    func lineScanAcrossPieces() throws {
        let cases: [(String, Bool, Bool)] = [
            ("a\nFrom here\nb\n", true, false), ("a \nb\n", false, true), ("a\t\r\nb\r\n", false, true),
            ("From", false, false), ("x\nFrom x", true, false), ("a\nb", false, false), ("end ", false, true),
            (">From x\n", false, false), ("a\r\nFrom x\r\n", true, false),
        ]
        for (text, from, space) in cases {
            let bytes = Array(text.utf8)
            for split in 0...bytes.count {
                var scan = LineScan()
                Array(bytes[..<split]).withUnsafeBytes { scan.feed($0) }
                Array(bytes[split...]).withUnsafeBytes { scan.feed($0) }
                scan.finish()
                #expect(scan.fromLine == from && scan.trailingSpace == space, "\(text.debugDescription) split at \(split)")
            }
        }
    }
}
