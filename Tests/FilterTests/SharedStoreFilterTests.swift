import Foundation
@testable import Filter
import Settings
import SharedStore
import TestSupport
import Testing

@Suite("Key continuity in the shared store, through the filter", .serialized)
struct SharedStoreFilterTests {
    /// With `[store]`, the filter records in PostgreSQL (not the folder);
    /// PostgreSQL stopped, a mail is deferred (75) with one line and nothing
    /// is sent; started again, the same filter sends it.
    @Test func stoppedDatabaseDefersThenRecovers() throws {
        SharedStore.install()
        let server = try PostgresServer()
        let folder = try makePrivateDirectory(prefix: "ms-filter-store")
        let database = try server.makeDatabase()
        let table = try server.storeTable(database: database, passwordFile: folder + "/password")
        let store = try #require(try StoreSettings.read(TOMLKeys(try TOMLKeys.document(table), "")))
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let sendmail = try SendmailStandIn()
            var config = FilterConfig()
            config.gnupgHome = home.path
            config.journalDirectory = home.path + "/state/journal"
            config.reinjection = .sendmail([sendmail.script])
            config.log = .none
            config.store = store
            let filter = MailFilter(config: config)
            func mail() -> [UInt8] {
                Array("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: s\nMessage-ID: <ss.\(UUID())@example.org>\n\nhello\n".utf8)
            }
            #expect(filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"]).status == 0)
            let recorded = try server.superuser("COPY (SELECT fingerprint FROM key_continuity WHERE address = 'bob@example.org') TO STDOUT;",
                                                database: database)
            #expect(recorded.output.trimmingCharacters(in: .whitespacesAndNewlines).count == 40)
            #expect(!FileManager.default.fileExists(atPath: config.continuity.directory), "the folder was written beside the shared store")

            server.stop()
            let before = sendmail.copies.count
            let held = filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"])
            #expect(held.status == 75)
            let line = held.errorLine ?? ""
            #expect(line.contains("postgres://mailsec@127.0.0.1:\(server.port)/") && !line.contains("\n") && !line.contains(server.password))
            #expect(sendmail.copies.count == before, "a letter went without its record")

            try server.start()
            #expect(filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"]).status == 0)
            #expect(sendmail.copies.count == before + 1)
        }
    }
}
