import Compose
import ComposeStore
import Contacts
import Foundation
import MIME
import OpenPGP
import Outbox
import Pipeline
import Store
import TestSupport
import Testing

@Suite("Compose with the contacts", .serialized)
struct ComposeContactsTests {
    @Test("a sent session is noted in the contacts and key continuity; suggestions leave out its recipients; a vanished key holds the next send")
    func contactsAndContinuity() async throws {
        try await withHome { home in
            let gnupg = GnuPG(home: home.path)
            let folder = try makePrivateDirectory(prefix: "ms-ccont")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let store = try LocalStore(folder: folder)
            let book = ContactBook(store: store), outbox = Outbox(store: store)
            var options = PipelineOptions()
            options.continuity = book.continuity

            let first = try await ComposeSession(ComposeDraft(from: alice), gnupg: gnupg, options: options, outbox: OutboxQueue(outbox))
            try await first.add([MailAddress(name: "Bob B", address: "bob@example.org"), person("nobody@example.org")], as: .to)
            try await first.setText("Hi.")
            guard case .sent = try await first.send().phase else { Issue.record("not sent"); return }
            let bob = try #require(try book.contact("bob@example.org"))
            #expect(bob.sentCount == 1 && bob.sentName == "Bob B" && bob.lastSent != nil)
            #expect(try book.contact("nobody@example.org")?.sentCount == 1)
            let remembered = try book.continuity.remembered(["bob@example.org", "nobody@example.org"])
            #expect(remembered.keys.sorted() == ["bob@example.org"], "only the letter recipient's key")

            // Suggestions while typing the next mail leave out who is in it already.
            try book.refreshKeys(gnupg: gnupg)
            let second = try await ComposeSession(ComposeDraft(from: alice), gnupg: gnupg, options: options, outbox: OutboxQueue(outbox))
            #expect(try await second.suggestions(prefix: "b", from: book).first?.contact.address == "bob@example.org")
            try await second.add([person("bob@example.org")], as: .cc)
            #expect(!(try await second.suggestions(prefix: "b", from: book).contains { $0.contact.address == "bob@example.org" }))

            // Bob's key deleted: the next send is held and nothing is queued.
            #expect(try home.gpg(["--delete-key", remembered["bob@example.org"]!]).status == 0)
            let before = try outbox.entries().count
            let third = try await ComposeSession(ComposeDraft(from: alice), gnupg: gnupg, options: options, outbox: OutboxQueue(outbox))
            try await third.add([person("bob@example.org")], as: .to)
            try await third.setText("Again.")
            do {
                try await third.send()
                Issue.record("sent although Bob's remembered key is gone")
            } catch {
                #expect(String(describing: error).contains("bob@example.org"), "\(error)")
            }
            let held = try #require(await third.state.recipients.first { $0.person.address == "bob@example.org" }?.decision)
            #expect(String(describing: held).lowercased().contains("vanish") || String(describing: held).contains("refused"), "\(held)")
            #expect(try outbox.entries().count == before)
            #expect(try book.continuity.forget("bob@example.org"))
        }
    }
}
