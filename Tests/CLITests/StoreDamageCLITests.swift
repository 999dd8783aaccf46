import Foundation
import TestSupport
import Testing

/// Issue 22, item 18, at the command line: `outbox list` on a store file cut
/// to 0 bytes said "the outbox is empty" and exited 0.
@Suite("A damaged store at the command line", .serialized)
struct StoreDamageCLITests {
    @Test("the store file emptied: outbox list, outbox flush and send exit 75 with one line naming it; the file is left as it was")
    func emptiedStore() throws {
        let setup = try SendingSetup()
        defer { setup.close() }
        let away = try setup.awayConfig()
        let mail = Array("From: Alice <alice@example.org>\nTo: nobody@example.org\nSubject: s\nMessage-ID: <sd.1@example.org>\n\nhi\n".utf8)
        let queued = try run(Paths.mailsecExecutable.path, ["send", "--config", away], input: mail, environment: setup.environment)
        #expect(queued.status == 75, "\(queued.errors)")
        let file = setup.store + "/mailsec.sqlite"
        #expect(truncate(file, 0) == 0)
        for arguments in [["outbox", "list"], ["outbox", "list", "--json"], ["outbox", "flush"], ["send"]] {
            let result = try setup.mailsec(arguments, input: mail)
            #expect(result.status == 75, "\(arguments): \(result.status) \(result.output) \(result.errors)")
            expectOneLine(result)
            #expect(result.errors.contains(file), "\(result.errors)")
            #expect(!result.output.contains("empty"))
        }
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_size == 0, "the emptied store was made anew")
        #expect(!setup.peer.sawMail)
    }
}
