import Foundation
import Outbox
import Store
import Testing
import TestSupport

/// Mails with a password notice: letters, the notice, postcards.
@Suite("Outbox: the password notice goes before its postcards")
struct NoticeOrderTests {
    /// A mail of `letters` letters, a notice (or not) and `postcards` postcards,
    /// in that order, the postcards possibly placed before the notice (an
    /// outbox must not rely on the order it was given).
    static func copies(letters: Int, notice: Bool, postcards: Int, shuffled: Bool, tag: String) -> [NewCopy] {
        var copies = (0..<letters).map { NewCopy(kind: "letter", recipients: ["l\($0)-\(tag)@example.org"], message: Array("letter".utf8)) }
        let cards = (0..<postcards).map {
            NewCopy(kind: "postcard", recipients: ["p\($0)-\(tag)@example.net", "q\($0)-\(tag)@example.net"], message: Array("postcard".utf8))
        }
        if shuffled { copies += cards }
        if notice { copies.append(NewCopy(kind: NewCopy.noticeKind, recipients: ["sender-\(tag)@example.org"], message: Array("notice".utf8))) }
        if !shuffled { copies += cards }
        return copies
    }

    @Test("random outcomes over many runs: no postcard is claimed while its notice is undelivered, letters are not held, each recipient gets its copy once", arguments: 0..<16)
    func randomRuns(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        try withOutbox { outbox, _ in
            var kinds: [Int64: String] = [:]
            var mails: [Int64: Int] = [:]
            for mail in 0..<Int.random(in: 1...4, using: &random) {
                let copies = Self.copies(letters: .random(in: 0...2, using: &random), notice: .random(using: &random),
                                         postcards: .random(in: 1...2, using: &random), shuffled: .random(using: &random), tag: "\(seed)-\(mail)")
                let ids = try outbox.enqueue(sender: "sender-\(seed)-\(mail)@example.org", messageID: "m\(mail)@x", origin: "test", copies: copies)
                for (id, copy) in zip(ids, copies) {
                    kinds[id] = copy.kind
                    mails[id] = mail
                }
            }
            var accepted: [String: Int] = [:]
            var noticeDelivered: Set<Int> = []
            var failedNotices: [Int64] = []
            var now = Date()
            for _ in 0..<40 {
                var tried = Set<Int64>()
                while let claimed = try outbox.claim(now: now, ignoringSchedule: .random(using: &random), skipping: tried) {
                    tried.insert(claimed.id)
                    let mail = mails[claimed.id]!
                    let mailHasNotice = kinds.contains { mails[$0.key] == mail && $0.value == NewCopy.noticeKind }
                    if claimed.kind == "postcard" && mailHasNotice {
                        #expect(noticeDelivered.contains(mail), "a postcard of mail \(mail) was claimed before its notice was delivered")
                    }
                    var outcomes: [String: RecipientOutcome] = [:]
                    for address in claimed.recipients {
                        switch Int.random(in: 0..<10, using: &random) {
                        case 0..<6: outcomes[address] = .accepted
                        case 6..<9: outcomes[address] = .temporary("451 later")
                        default: outcomes[address] = .permanent("550 no")
                        }
                    }
                    for (address, outcome) in outcomes where outcome == .accepted { accepted[address, default: 0] += 1 }
                    let entry = try outbox.record(claimed, outcomes: outcomes, now: now)
                    if claimed.kind == NewCopy.noticeKind {
                        if entry?.state == .sent { noticeDelivered.insert(mail) }
                        if entry?.state == .failed { failedNotices.append(claimed.id) }
                    }
                }
                // What waits is shown, and never due by itself (a watcher would spin on it).
                for entry in try outbox.entries() where entry.kind == "postcard" {
                    let notice = kinds.first { mails[$0.key] == mails[entry.id] && $0.value == NewCopy.noticeKind }?.key
                    #expect(entry.waitingFor == (notice != nil && !noticeDelivered.contains(mails[entry.id]!) ? notice : nil))
                }
                if let next = try outbox.nextTry() {
                    let due = try outbox.entries().filter { $0.nextTry != nil && $0.waitingFor == nil }.compactMap(\.nextTry).min()
                    #expect(next == due)
                }
                // Now and then the person sends a failed notice again.
                if let notice = failedNotices.popLast(), Bool.random(using: &random) { try outbox.resend(notice, now: now) }
                now = now.addingTimeInterval(3600)
            }
            #expect(accepted.values.allSatisfy { $0 == 1 }, "a recipient got a copy twice: \(accepted.filter { $0.value > 1 })")
        }
    }

    @Test("a notice refused for good holds the postcards; resend releases them after it; letters went at once")
    func failedThenResent() throws {
        try withOutbox { outbox, _ in
            let copies = Self.copies(letters: 1, notice: true, postcards: 1, shuffled: false, tag: "a")
            let ids = try outbox.enqueue(sender: "sender-a@example.org", messageID: "a@x", origin: "test", copies: copies)
            var order: [String] = []
            func run(_ outcome: (ClaimedCopy) -> RecipientOutcome) throws {
                var tried = Set<Int64>()
                while let claimed = try outbox.claim(ignoringSchedule: true, skipping: tried) {
                    tried.insert(claimed.id)
                    let result = outcome(claimed)
                    if result == .accepted { order.append(claimed.kind) }
                    try outbox.record(claimed, outcomes: Dictionary(uniqueKeysWithValues: claimed.recipients.map { ($0, result) }))
                }
            }
            try run { $0.kind == NewCopy.noticeKind ? .permanent("550 mailbox unavailable") : .accepted }
            #expect(order == ["letter"])
            let postcard = try #require(try outbox.entry(ids[2]))
            #expect(postcard.state == .pending && postcard.waitingFor == ids[1] && postcard.attempts == 0)
            #expect(try outbox.nextTry() == nil, "a held postcard is not due")
            // Take-back names the notice for a held postcard.
            do {
                _ = try outbox.takeBack(ids[2])
                Issue.record("a held postcard was taken back")
            } catch {
                #expect("\(error)".contains("password notice (copy \(ids[1]))"), "\(error)")
            }
            // Resending the held postcard itself names the notice to resend.
            do {
                try outbox.resend(ids[2])
                Issue.record("a held postcard was resent")
            } catch {
                #expect("\(error)".contains("password notice (copy \(ids[1]))") && "\(error)".contains("resend copy \(ids[1])"), "\(error)")
            }
            // A second run without the person: still nothing.
            try run { _ in .accepted }
            #expect(order == ["letter"])
            try outbox.resend(ids[1])
            try run { _ in .accepted }
            #expect(order == ["letter", NewCopy.noticeKind, "postcard"])
            #expect(try outbox.entry(ids[2])?.waitingFor == nil)
        }
    }

    @Test("discarding an undelivered notice discards the postcards waiting for it, not the letters; a delivered notice goes alone")
    func discardAlong() throws {
        try withOutbox { outbox, _ in
            let ids = try outbox.enqueue(sender: "s@example.org", messageID: "d@x", origin: "test",
                                         copies: Self.copies(letters: 1, notice: true, postcards: 2, shuffled: false, tag: "d"))
            let removed = try outbox.discard(ids[1])
            #expect(removed == [ids[1], ids[2], ids[3]])
            #expect(try outbox.entries().map(\.id) == [ids[0]])

            let more = try outbox.enqueue(sender: "s@example.org", messageID: "e@x", origin: "test",
                                          copies: Self.copies(letters: 0, notice: true, postcards: 1, shuffled: false, tag: "e"))
            let claimed = try #require(try outbox.claim(ignoringSchedule: true, only: [more[0]]))
            try outbox.record(claimed, outcomes: [claimed.recipients[0]: .accepted])
            #expect(try outbox.discard(more[0]) == [more[0]])
            #expect(try outbox.entry(more[1])?.waitingFor == nil)
            #expect(try outbox.claim(ignoringSchedule: true, only: [more[1]])?.id == more[1])
        }
    }
    @Test("take-back: a delivered notice does not count as the mail delivered to its sender (who may be a recipient too)")
    func takeBackIgnoresNotice() throws {
        try withOutbox { outbox, _ in
            let copies = [NewCopy(kind: "letter", recipients: ["s@example.org", "b@example.org"], message: Array("letter".utf8)),
                          NewCopy(kind: NewCopy.noticeKind, recipients: ["s@example.org"], message: Array("notice".utf8)),
                          NewCopy(kind: "postcard", recipients: ["d@example.net"], message: Array("postcard".utf8))]
            let ids = try outbox.enqueue(sender: "s@example.org", messageID: "t@x", origin: "test", copies: copies, source: [1, 2, 3])
            var tried = Set<Int64>()
            while let claimed = try outbox.claim(ignoringSchedule: true, skipping: tried) {
                tried.insert(claimed.id)
                let outcome: RecipientOutcome = claimed.kind == "letter" ? .permanent("550 no") : .accepted
                try outbox.record(claimed, outcomes: Dictionary(uniqueKeysWithValues: claimed.recipients.map { ($0, outcome) }))
            }
            let taken = try outbox.takeBack(ids[0])
            #expect(taken.delivered == ["d@example.net"], "\(taken.delivered)")
        }
    }

    @Test("a process killed while its notice was `sending` (before or after the server's 250): another process (a second Outbox on the store) never claims the postcards; after recovery the notice goes again, then the postcards, each recipient once")
    func crashWhileNoticeSending() throws {
        try withOutbox { outbox, folder in
            let ids = try outbox.enqueue(sender: "s@example.org", messageID: "k@x", origin: "test",
                                         copies: Self.copies(letters: 1, notice: true, postcards: 2, shuffled: true, tag: "k"))
            let notice = ids[3]
            let letter = try #require(try outbox.claim(ignoringSchedule: true))
            try outbox.record(letter, outcomes: [letter.recipients[0]: .accepted])
            let dying = try #require(try outbox.claim(ignoringSchedule: true))
            #expect(dying.id == notice, "the postcards were offered before the notice")
            // The process dies here (its 250 came or not: never recorded). Another process opens the store.
            let other = Outbox(store: try LocalStore(folder: folder))
            #expect(try other.claim(ignoringSchedule: true) == nil, "a postcard was claimed while the notice was sending")
            #expect(try other.entries().filter { $0.kind == "postcard" }.allSatisfy { $0.waitingFor == notice && $0.state == .pending })
            #expect(try other.nextTry() == nil)
            #expect(try other.recoverInterrupted() == 1)
            var sent: [Int64] = []
            var tried = Set<Int64>()
            while let claimed = try other.claim(ignoringSchedule: true, skipping: tried) {
                tried.insert(claimed.id)
                sent.append(claimed.id)
                try other.record(claimed, outcomes: Dictionary(uniqueKeysWithValues: claimed.recipients.map { ($0, .accepted) }))
            }
            #expect(sent == [notice, ids[1], ids[2]], "\(sent)")
            #expect(try other.entries().allSatisfy { $0.state == .sent })
        }
    }

    @Test("a delivered notice purged (keep_sent_days 0) while its postcards are still deferred: the postcards are due, not held for a notice that is gone, and are not purged")
    func purgedNoticeReleases() throws {
        try withOutbox { outbox, _ in
            let ids = try outbox.enqueue(sender: "s@example.org", messageID: "p@x", origin: "test",
                                         copies: Self.copies(letters: 0, notice: true, postcards: 1, shuffled: false, tag: "p"))
            let start = Date()
            let notice = try #require(try outbox.claim(now: start))
            try outbox.record(notice, outcomes: [notice.recipients[0]: .accepted], now: start)
            let postcard = try #require(try outbox.claim(now: start))
            #expect(postcard.id == ids[1])
            try outbox.record(postcard, outcomes: Dictionary(uniqueKeysWithValues: postcard.recipients.map { ($0, .temporary("451 later")) }), now: start)
            #expect(try outbox.purgeSent(olderThan: 0, now: start) == 1)
            #expect(try outbox.entries().map(\.id) == [ids[1]])
            #expect(try outbox.entry(ids[1])?.waitingFor == nil)
            let due = try #require(try outbox.nextTry())
            #expect(try outbox.claim(now: due)?.id == ids[1])
        }
    }
}
