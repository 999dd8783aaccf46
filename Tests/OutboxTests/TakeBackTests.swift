import Foundation
import GRDB
import Outbox
import Store
import Synchronization
import Testing
import TestSupport

@Suite("Outbox: taking a failed mail back (outbox edit)")
struct TakeBackTests {
    /// The stored source of mail `id` (nil once dropped).
    func source(_ outbox: Outbox, mail id: Int64) throws -> Data? {
        try outbox.store.database.read { db in try Data.fetchOne(db, sql: "SELECT source FROM outboxMail WHERE id = ?", arguments: [id]) }
    }

    @Test("generated outboxes: a failed copy's mail leaves whole (less who has it), anything else is refused and changes nothing")
    func generated() throws {
        var (taken, refused) = (0, 0)
        for seed in 0..<12 { try generated(seed: UInt64(seed), taken: &taken, refused: &refused) }
        #expect(taken >= 3 && refused >= 10, "taken \(taken), refused \(refused): the generator reaches both")
    }

    func generated(seed: UInt64, taken takenCount: inout Int, refused: inout Int) throws {
        var random = SeededRandom(seed: 7_000 + seed)
        try withOutbox { outbox, _ in
            var sources: [Int64: [UInt8]] = [:]
            for mail in 0..<5 {
                let copies = (0..<Int.random(in: 1...3, using: &random)).map { copy in
                    NewCopy(kind: copy == 0 ? "letter" : "postcard",
                            recipients: (0..<Int.random(in: 1...3, using: &random)).map { "r\(mail)-\(copy)-\($0)@example.org" },
                            message: Array("copy \(mail) \(copy)".utf8))
                }
                let source: [UInt8]? = Bool.random(using: &random) || mail == 0 ? (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) } : nil
                let ids = try outbox.enqueue(sender: "a@example.org", messageID: "m\(mail)@x", origin: "test", copies: copies, source: source)
                if let source, let first = ids.first { sources[try #require(try outbox.entry(first)).mailID] = source }
            }
            // Deliver some copies with random outcomes per recipient; leave some claimed (sending).
            var claimedLeft: [ClaimedCopy] = []
            var skipping: Set<Int64> = []
            while let claimed = try outbox.claim(ignoringSchedule: true, skipping: skipping) {
                skipping.insert(claimed.id)
                switch Int.random(in: 0..<5, using: &random) {
                case 0: claimedLeft.append(claimed)
                case 1: try outbox.record(claimed, outcomes: [:])  // temporary: pending again
                default:
                    var outcomes: [String: RecipientOutcome] = [:]
                    for address in claimed.recipients { outcomes[address] = Bool.random(using: &random) ? .accepted : .permanent("550 no") }
                    try outbox.record(claimed, outcomes: outcomes)
                }
            }
            for entry in try outbox.entries() {
                let before = try outbox.entries()
                let siblings = before.filter { $0.mailID == entry.mailID }
                let allowed = entry.state == .failed && !siblings.contains { $0.recipients.contains { $0.state == .sending } }
                    && sources[entry.mailID] != nil
                guard allowed else {
                    refused += 1
                    #expect(throws: OutboxError.self) { try outbox.takeBack(entry.id) }
                    #expect(try outbox.entries() == before, "a refusal changes nothing")
                    continue
                }
                let taken = try outbox.takeBack(entry.id)
                #expect(taken.source == sources[entry.mailID])
                let delivered = Set(siblings.flatMap(\.recipients).filter { $0.state == .sent }.map(\.address))
                #expect(taken.delivered == delivered)
                try outbox.commitTakeBack(taken) { _ in }
                let after = try outbox.entries()
                #expect(after.filter { $0.mailID != entry.mailID } == before.filter { $0.mailID != entry.mailID }, "other mail untouched")
                let left = after.filter { $0.mailID == entry.mailID }
                #expect(left.allSatisfy { $0.state == .sent } && Set(left.flatMap(\.recipients).map(\.address)) == delivered)
                #expect(try source(outbox, mail: entry.mailID) == nil)
                #expect(throws: OutboxError.self) { try outbox.takeBack(entry.id) }
                takenCount += 1
                break
            }
            for claimed in claimedLeft { try outbox.record(claimed, outcomes: [:]) }
        }
    }

    @Test("a delivery run between reading and committing makes the commit refuse, changing nothing")
    func conflict() throws {
        try withOutbox { outbox, _ in
            let ids = try outbox.enqueue(sender: "a@example.org", messageID: "m@x", origin: "test", copies: [
                NewCopy(kind: "letter", recipients: ["b@example.org"], message: [1]),
                NewCopy(kind: "postcard", recipients: ["c@example.org"], message: [2])], source: [9, 9, 9])
            let first = try #require(try outbox.claim(ignoringSchedule: true, only: [ids[0]]))
            try outbox.record(first, outcomes: ["b@example.org": .permanent("550 no")])
            let taken = try outbox.takeBack(ids[0])
            let wrote = Mutex(false)
            _ = try #require(try outbox.claim(ignoringSchedule: true, only: [ids[1]]))  // the sibling is being sent now
            let before = try outbox.entries()
            #expect {
                try outbox.commitTakeBack(taken) { _ in wrote.withLock { $0 = true } }
            } throws: { ($0 as? OutboxError)?.isConflict == true }
            #expect(try outbox.entries() == before && !wrote.withLock { $0 })
            #expect(try source(outbox, mail: before[0].mailID) == Data([9, 9, 9]))
        }
    }

    @Test("the source is dropped once every recipient of the mail has it")
    func sourceDropped() throws {
        try withOutbox { outbox, _ in
            let ids = try outbox.enqueue(sender: "a@example.org", messageID: "m@x", origin: "test", copies: [
                NewCopy(kind: "letter", recipients: ["b@example.org"], message: [1]),
                NewCopy(kind: "postcard", recipients: ["c@example.org", "d@example.org"], message: [2])], source: [7])
            let mail = try #require(try outbox.entry(ids[0])).mailID
            let first = try #require(try outbox.claim(ignoringSchedule: true, only: [ids[0]]))
            try outbox.record(first, outcomes: ["b@example.org": .accepted])
            #expect(try source(outbox, mail: mail) == Data([7]), "kept while a recipient waits")
            let second = try #require(try outbox.claim(ignoringSchedule: true, only: [ids[1]]))
            try outbox.record(second, outcomes: ["c@example.org": .accepted, "d@example.org": .accepted])
            #expect(try source(outbox, mail: mail) == nil)
        }
    }
}
