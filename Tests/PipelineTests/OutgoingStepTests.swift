import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Policy
import TestSupport
import Testing

/// A destination that takes every copy at once and fails doing so (a full
/// disk under the outbox's transaction, a folder that cannot be made).
private struct FailingAtOnce: CopyDestination {
    struct Full: Error {}
    func finish(_ mail: OutgoingMail) throws { throw Full() }
}

@Suite("The one send step (MailPipeline.send(_:to:))", .serialized)
struct OutgoingStepTests {
    struct Refused: Error {}

    /// Reading pages published (201) and withdrawn (204), from the server's log.
    func pages(_ server: ReadingServerProcess) throws -> (published: Int, withdrawn: Int) {
        let lines = try String(contentsOfFile: server.logPath, encoding: .utf8).split(separator: "\n")
        return (lines.filter { $0.contains("POST /api/postcards 201") }.count,
                lines.filter { $0.contains("DELETE /api/postcards/") && $0.hasSuffix(" 204") }.count)
    }

    @Test("a closure failing at copy k of n: the page withdrawn (no postcard of the mail went), only the letters before k in key continuity, never the notice's key; all going: the page stays, every letter recorded")
    func closureFailingAtEveryCopy() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let publisher = try HTTPPublisher(url: server.url, token: server.token)
            // Letters, the notice (a letter to Alice's own key), the postcard: n = 3.
            var copies: [(kind: PlannedCopy.Kind, notice: Bool, recipients: [String])] = []
            do {
                let folder = try makePrivateDirectory(prefix: "continuity")
                defer { try? FileManager.default.removeItem(atPath: folder) }
                let pipeline = partiallyEncrypted(home, publisher).with(continuity: KeyContinuity(directory: folder))
                try pipeline.send(try pipeline.prepare(try parse(mixedMailText)), to: HandingTo { copy, notice in
                    copies.append((copy.kind, notice, copy.recipients))
                })
                let remembered = try KeyContinuity(directory: folder).remembered(["bob@example.org", "alice@example.org"])
                #expect(remembered.keys.sorted() == ["bob@example.org"], "the letter's key, not the notice's")
            }
            try #require(copies.count == 3)
            #expect(copies.map(\.kind) == [.letter, .letter, .postcard] && copies.map(\.notice) == [false, true, false])
            let first = try pages(server)
            #expect(first.published == 1 && first.withdrawn == 0, "a mail that went out keeps its page")

            for failing in 0..<copies.count {
                let folder = try makePrivateDirectory(prefix: "continuity")
                defer { try? FileManager.default.removeItem(atPath: folder) }
                let pipeline = partiallyEncrypted(home, publisher).with(continuity: KeyContinuity(directory: folder))
                var handed = 0
                do {
                    try pipeline.send(try pipeline.prepare(try parse(mixedMailText)), to: HandingTo { _, _ in
                        if handed == failing { throw Refused() }
                        handed += 1
                    })
                    Issue.record("copy \(failing + 1) failed, and the step did not say so")
                } catch let failure as CopyNotHanded {
                    #expect(failure.index == failing && failure.isNotice == (failing == 1) && failure.error is Refused)
                }
                let counted = try pages(server)
                #expect(counted.published == failing + 2 && counted.withdrawn == failing + 1, "copy \(failing + 1): withdrawn")
                let remembered = try KeyContinuity(directory: folder).remembered(["bob@example.org", "alice@example.org"])
                #expect(remembered.keys.sorted() == (failing > 0 ? ["bob@example.org"] : []), "copy \(failing + 1)")
            }

            // A destination taking every copy at once that fails: withdrawn, nothing remembered.
            let folder = try makePrivateDirectory(prefix: "continuity")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let pipeline = partiallyEncrypted(home, publisher).with(continuity: KeyContinuity(directory: folder))
            #expect(throws: FailingAtOnce.Full.self) {
                try pipeline.send(try pipeline.prepare(try parse(mixedMailText)), to: FailingAtOnce())
            }
            let counted = try pages(server)
            #expect(counted.published == counted.withdrawn + 1, "only the first mail's page stays")
            #expect(try KeyContinuity(directory: folder).remembered(["bob@example.org", "alice@example.org"]).isEmpty)
        }
    }
}
