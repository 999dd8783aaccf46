import Foundation
import MIME
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
