import Compose
import ComposeStore
import Foundation
import OpenPGP
import Outbox
import Store
import TestSupport
import Testing

@Suite("Drafts in the store", .serialized)
struct DraftStoreTests {
    @Test("saved, listed and taken up from a second store handle; the SQLite file and its WAL show none of the draft")
    func atRest() async throws {
        try await withHome { home in
            let gnupg = GnuPG(home: home.path)
            let folder = try makePrivateDirectory(prefix: "ms-drafts")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let (draft, secrets) = DraftSealTests.secretDraft()

            let first = SealedDraftStore(store: try LocalStore(folder: folder), gnupg: gnupg, owner: "alice@example.org")
            let session = try await ComposeSession(draft, gnupg: gnupg, outbox: HeldOutbox(), drafts: first)
            guard case .savedAsDraft(let id) = try await session.saveAsDraft().phase else { Issue.record("not saved"); return }
            let other = try await ComposeSession(ComposeDraft(from: alice), gnupg: gnupg, outbox: HeldOutbox(), drafts: first)
            try await other.setText("a second draft")
            try await other.saveAsDraft()

            // Every file of the store, the WAL included, searched as raw bytes.
            let files = try FileManager.default.contentsOfDirectory(atPath: folder).map { folder + "/" + $0 }
            #expect(files.contains { $0.hasSuffix("-wal") })
            var all = Data()
            for file in files { all += try Data(contentsOf: URL(fileURLWithPath: file)) }
            let raw = String(decoding: all, as: UTF8.self)
            #expect(raw.contains("BEGIN PGP MESSAGE"), "the search reads the files the drafts are in")
            for secret in secrets { #expect(!raw.localizedCaseInsensitiveContains(secret), "\(secret) readable at rest") }
            for file in files {
                let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
                #expect(mode & 0o077 == 0, "\(file) is \(String(mode, radix: 8))")
            }

            // Another handle on the same store (as another process would open it).
            let second = SealedDraftStore(store: try LocalStore(folder: folder), gnupg: gnupg, owner: "alice@example.org")
            let listed = try second.list()
            #expect(listed.count == 2 && listed.contains { $0.id == id && $0.draft == draft })
            // Sent into the real outbox of the same store.
            let outbox = Outbox(store: try LocalStore(folder: folder))
            let again = try await ComposeSession(editing: try #require(try second.draft(id)), id: id, gnupg: gnupg,
                                                 outbox: OutboxQueue(outbox), drafts: second)
            try await again.remove(draft.recipients[0].address)
            try await again.add([person("bob@example.org"), person("nobody@example.org")], as: .to)
            guard case .sent(let ids) = try await again.send().phase else { Issue.record("not sent"); return }
            let entries = try outbox.entries()
            #expect(ids.count == 2 && Set(entries.map { String($0.id) }) == Set(ids))
            #expect(Set(entries.map(\.kind)) == ["letter", "postcard"] && entries.allSatisfy { $0.state == .pending })
            #expect(entries.allSatisfy { $0.messageID == draft.mail.messageID })
            #expect(try first.draft(id) == nil && (try first.list().count) == 1, "a draft that is sent is removed")
            try first.delete(try #require(try first.list().first).id)
            #expect(try second.list().isEmpty)
        }
    }
}
