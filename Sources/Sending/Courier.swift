import Foundation
import MIME
import Platform
import Outbox

/// What one delivery run did.
public struct DeliveryReport: Sendable, Hashable {
    /// Recipients the server accepted in this run.
    public var delivered = 0
    /// Recipients left pending (a temporary failure), to be tried later.
    public var pending = 0
    /// Recipients that failed for good in this run.
    public var failed = 0
    /// The reasons seen, each once, in order.
    public var reasons: [String] = []
    /// True when another process held the delivery lock throughout the wait:
    /// the copies stay queued for it (or the next run).
    public var busy = false
    /// Problems filing the sender's own copy (the mail itself went out).
    public var filingProblems: [String] = []
    /// Postcards of this run's copies (every copy for a run without `only`)
    /// left pending at its end because their mail's password notice is not
    /// delivered: one entry per notice, oldest first. They are in none of
    /// the counts above.
    public var held: [HeldPostcards] = []

    mutating func note(_ reason: String) { if !reasons.contains(reason) { reasons.append(reason) } }
}

/// Postcard recipients that wait for one password notice (``OutboxEntry/waitingFor``).
public struct HeldPostcards: Sendable, Hashable {
    /// The notice's copy id.
    public let notice: Int64
    /// How many postcard recipients wait for it.
    public var recipients: Int
    /// True when the notice was refused for good: nothing goes until the
    /// person resends or discards it.
    public let noticeFailed: Bool
}

/// Delivers the outbox: takes the delivery lock, repairs what a crash left
/// (``Outbox/recoverInterrupted()``), then claims copy after copy, hands it to
/// the server over one session and records each recipient's outcome before
/// the next. A failure that ends the session (no connection, authentication
/// or TLS refused) is recorded for every copy of the run without another
/// connection attempt. A postcard whose mail has a password notice that was
/// not delivered yet is not claimed (``Outbox/claim(now:ignoringSchedule:only:skipping:)``):
/// it goes in the same run once the notice was accepted, else it stays pending
/// (``DeliveryReport/held`` counts it).
/// The sender's own copy is filed in `sent_maildir`
/// once every one of its recipients has it. At the end of each run, copies
/// sent `keepSent` seconds ago or longer leave the outbox
/// (``Outbox/purgeSent(olderThan:now:)``: `keep_sent_days`).
package struct Courier: Sendable {
    /// How long sent copies stay listed by default: 7 days.
    package static let defaultKeepSent: TimeInterval = 7 * 86400

    /// The outbox the copies are taken from.
    package let outbox: Outbox
    /// How copies reach the submission server.
    package let transport: any SubmissionTransport
    /// Where the sender's own copy is filed; nil: nowhere.
    package let sentFolder: SentFolder?
    /// Seconds a sent copy stays in the outbox (its recipients and states,
    /// not its bytes); 0 removes it at the end of the run that sent it.
    package let keepSent: TimeInterval

    /// A courier from `outbox` over `transport`, filing own copies in
    /// `sentFolder` and keeping sent copies listed for `keepSent` seconds.
    package init(outbox: Outbox, transport: any SubmissionTransport, sentFolder: SentFolder?,
                keepSent: TimeInterval = Courier.defaultKeepSent) {
        self.outbox = outbox
        self.transport = transport
        self.sentFolder = sentFolder
        self.keepSent = keepSent
    }

    /// One run. `only`: just these copies; `ignoringSchedule`: due or not
    /// (a person's flush, or the network came back); `lockWait`: how long to
    /// wait for another process's run to end.
    package func deliver(only: Set<Int64>? = nil, ignoringSchedule: Bool = false, lockWait: TimeInterval = 60,
                        now: @Sendable () -> Date = { Date() }) async throws(OutboxError) -> DeliveryReport {
        var report = DeliveryReport()
        guard let lock = try DeliveryLock(folder: outbox.store.folder, wait: lockWait) else {
            report.busy = true
            report.note("another mailsec is delivering the outbox")
            return report
        }
        defer { withExtendedLifetime(lock) {} }
        try outbox.recoverInterrupted()
        fileOwnCopies(&report)

        var session: (any SubmissionSession)?
        var sessionFailure: SubmissionFailure?
        var tried = Set<Int64>()
        while let copy = try outbox.claim(now: now(), ignoringSchedule: ignoringSchedule, only: only, skipping: tried) {
            tried.insert(copy.id)
            // The room to record the answer is set aside before the first byte goes.
            do { try outbox.reserveSpace(outbox.reserveSize(for: copy)) } catch {
                outbox.unclaim(copy)
                if let session { await session.quit() }
                throw error
            }
            var outcomes: [String: RecipientOutcome] = [:]
            if let failure = sessionFailure {
                for address in copy.recipients { outcomes[address] = failure.outcome }
            } else {
                do {
                    if session == nil { session = try await transport.open() }
                    outcomes = try await session!.send(from: copy.envelopeSender, to: copy.recipients, message: copy.message)
                } catch {
                    for address in copy.recipients { outcomes[address] = error.outcome }
                    if error.endsSession || session == nil {
                        sessionFailure = error
                        if let open = session { await open.quit() }
                        session = nil
                    }
                }
            }
            let entry = try outbox.recordWithReserve(copy, outcomes: outcomes, now: now())
            for address in copy.recipients {
                switch outcomes[address] ?? .temporary("no answer for this recipient") {
                case .accepted: report.delivered += 1
                case .temporary(let reason):
                    if entry?.recipients.first(where: { $0.address == address })?.state == .failed {
                        report.failed += 1
                    } else {
                        report.pending += 1
                    }
                    report.note(reason)
                case .permanent(let reason):
                    report.failed += 1
                    report.note(reason)
                }
            }
            if copy.isOwnCopy, entry?.state == .sent { fileOwnCopy(copy.id, &report) }
        }
        if let session { await session.quit() }
        outbox.shrinkReserve()
        noteHeld(only: only, &report)
        // Only the lock's holder purges; a failure here loses nothing (the next run tries again).
        _ = try? outbox.purgeSent(olderThan: keepSent, now: now())
        // The copies delivered in this run were dropped from the store; their
        // pages must not stay in the WAL either (another process may keep the
        // store open, and then SQLite does not truncate it by itself).
        outbox.store.forgetOldPages()
        return report
    }

    /// Counts the postcards (of `only`, or all) still waiting for their notice.
    private func noteHeld(only: Set<Int64>?, _ report: inout DeliveryReport) {
        guard let entries = try? outbox.entries() else { return }
        let failed = Set(entries.filter { $0.kind == NewCopy.noticeKind && $0.state == .failed }.map(\.id))
        for entry in entries where only?.contains(entry.id) ?? true {
            guard let notice = entry.waitingFor else { continue }
            let waiting = entry.recipients.filter { $0.state == .pending }.count
            if let index = report.held.firstIndex(where: { $0.notice == notice }) {
                report.held[index].recipients += waiting
            } else {
                report.held.append(HeldPostcards(notice: notice, recipients: waiting, noticeFailed: failed.contains(notice)))
            }
        }
    }

    /// The Maildir name an own copy is filed under (``SentFolder/file(_:now:key:)``):
    /// its mail's time, the copy's id and the store's folder, so that filing it
    /// again after a crash finds it, and another store's copy never matches.
    package func filingKey(_ entry: OutboxEntry) -> String {
        let store = Digest.sha256Hex(Array(outbox.store.folder.utf8)).prefix(12)
        return "\(Int(entry.created.timeIntervalSince1970)).mailsec\(entry.id)S\(store)"
    }

    /// Own copies delivered earlier whose filing failed (the folder was
    /// missing, say) are filed now.
    private func fileOwnCopies(_ report: inout DeliveryReport) {
        guard sentFolder != nil, let entries = try? outbox.entries() else { return }
        for entry in entries where entry.isOwnCopy && entry.state == .sent { fileOwnCopy(entry.id, &report) }
    }

    private func fileOwnCopy(_ id: Int64, _ report: inout DeliveryReport) {
        guard let sentFolder else { return }
        do {
            guard let bytes = try outbox.unfiledOwnCopy(id), let entry = try outbox.entry(id) else { return }
            try sentFolder.file(bytes, key: filingKey(entry))
            try outbox.markFiled(id)
        } catch let error as SentFolderError {
            report.filingProblems.append(error.description)
        } catch {
            report.filingProblems.append("\(error)")
        }
    }
}
