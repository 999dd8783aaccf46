import Contacts
import Foundation
import MIME
import OpenPGP
import Outbox
import Pipeline
import Platform
import Policy
import Settings
import SMTP
import Store

/// A change an application may show: the outbox's copies, and the
/// connection to the submission server.
public enum SendingEvent: Sendable, Hashable {
    case outbox(OutboxChange)
    case connection(ConnectionState)
}

/// A copy of the mail is something SMTP cannot carry (a header line over
/// 998 octets, say): the whole mail is refused, nothing is queued. Bad input (65).
public struct UnsendableMessageError: Error, Sendable, CustomStringConvertible {
    /// One line naming the copy and what SMTP cannot carry, without its content.
    public let description: String
}

/// The mail as queued: its plan and the ids of its copies in the outbox.
public struct QueuedMail: Sendable {
    /// The plan the copies were written by.
    public let plan: Plan
    /// One id per copy, in the order they are sent (the password notice among them).
    public let copies: [Int64]
    /// The outbox id of the password notice to the envelope sender, when the
    /// mail published spans (partially encrypted postcards): the only way the
    /// sender learns the password. Its postcards wait until it was delivered.
    public let notice: Int64?
    /// The envelope sender (the notice's recipient).
    public let envelopeSender: String
}

/// Sending as a person does. `queue` plans the mail, writes every copy with
/// the pipeline (all cryptography before anything is stored) and stores them
/// in the outbox durably; `deliver` hands them to the submission server;
/// `watch` follows the connection and delivers when it can.
///
/// ```swift
/// let submission = try Submission(config: UserConfig.load())
/// let queued = try submission.queue(bytes)
/// let report = try await submission.deliver(only: Set(queued.copies))
/// ```
public final class Submission: Sendable {
    /// The configuration it was made from.
    public let config: UserConfig
    /// The durable queue every copy goes into before sending.
    public let outbox: Outbox
    /// What delivers the queued copies.
    package let courier: Courier
    private let states: AsyncStream<ConnectionState>.Continuation
    private let stateStream: AsyncStream<ConnectionState>

    /// Opens the store (`LocalStore()` by default) and uses `transport`
    /// (by default SMTP to the configured `[submission]` server).
    public init(config: UserConfig, store: LocalStore? = nil, transport: (any SubmissionTransport)? = nil) throws {
        self.config = config
        outbox = Outbox(store: try store ?? LocalStore())
        courier = Courier(outbox: outbox, transport: transport ?? SMTPTransport(config: config),
                          sentFolder: config.sentMaildir.map(SentFolder.init(path:)),
                          keepSent: TimeInterval(config.keepSentDays) * 86400)
        (stateStream, states) = AsyncStream<ConnectionState>.makeStream(bufferingPolicy: .bufferingNewest(16))
    }

    /// The pipeline as the configuration sets it up, with key continuity
    /// kept in the store (a recipient whose remembered key vanished holds the mail).
    public var pipeline: MailPipeline {
        MailPipeline(gnupg: GnuPG(home: config.gnupgHome), options: PipelineOptions(policy: config.policy, reading: config.reading))
        .with(continuity: StoreContinuity(store: outbox.store))
    }

    /// Plans and writes every copy of the mail in `bytes`, and stores them
    /// all in the outbox (or none). A missing From (the envelope sender,
    /// named `fullName`), Date or Message-ID is added first, as sendmail does. Recipients: `envelopeRecipients` when
    /// given (those not in To/Cc are Bcc), else To, Cc and Bcc. The envelope
    /// sender: `envelopeSender`, else `from` of the configuration. Throws the
    /// pipeline's errors (bad message, refused by policy, ``KeyLossError`` when
    /// key continuity holds it) before anything is stored. Each letter
    /// recipient's key is remembered before the copies are stored.
    ///
    /// A mail that publishes spans (partially encrypted postcards) gets the
    /// password notice for the envelope sender in the same transaction
    /// (``OutgoingMail``: after the letters, before the postcards, which the
    /// outbox holds until it was delivered). `[reading] notice =
    /// "letter-required"` (the default) with a sender who cannot get a letter
    /// hands the password to `showPassword` instead (the person's terminal),
    /// or without one refuses the mail before anything is published; any
    /// failure after publishing withdraws the page.
    public func queue(_ bytes: [UInt8], envelopeSender: String? = nil, envelopeRecipients: [String]? = nil,
                      origin: String = "library", parseOptions: ParseOptions = .standard, fullName: String? = nil,
                      showPassword: (@Sendable (String) throws -> Void)? = nil) throws -> QueuedMail {
        let sender = envelopeSender ?? config.from
        var bytes = bytes
        var message = try MIMEMessage.parse(bytes, options: parseOptions)
        if let completed = Self.completedHeaders(bytes, message: message, sender: sender, fullName: fullName) {
            bytes = completed
            message = try MIMEMessage.parse(bytes, options: parseOptions)
        }
        var options = pipeline.options
        options.showPassword = showPassword
        let pipeline = MailPipeline(gnupg: pipeline.gnupg, options: options)
        let prepared = try pipeline.prepare(message, original: MailPipeline.withoutBcc(bytes),
                                            envelopeSender: sender, envelopeRecipients: envelopeRecipients)
        // A held or refused plan says so before the notice's refusal can.
        try MailPipeline.checkNotRefused(prepared.plan)
        return try pipeline.send(prepared, to: OutboxDestination(
            submission: self, message: message, origin: origin, plan: prepared.plan, sender: prepared.envelopeSender,
            bcc: Set(prepared.plan.decisions.filter { $0.recipient.role == .bcc }.map(\.recipient.address))))
    }

    /// The outbox as a destination of ``MailPipeline/send(_:to:)``: every
    /// copy stored in one transaction (all or none), the recipients noted in
    /// the contacts and each letter's key in key continuity in the same one.
    struct OutboxDestination: CopyDestination {
        let submission: Submission
        let message: MIMEMessage
        let origin: String
        let plan: Plan
        let sender: String
        let bcc: Set<String>

        func finish(_ outgoing: OutgoingMail) throws -> QueuedMail {
            let config = submission.config
            let copies = try Submission.newCopies(outgoing, ownCopy: config.sentMaildir != nil ? outgoing.ownCopy(bcc: bcc) : nil)
            let note = SentNote(written: outgoing.written, named: [.to, .cc, .bcc].flatMap(message.addresses))
            let ids = try submission.outbox.enqueue(sender: sender, messageID: message.messageID, origin: origin, copies: copies,
                                                    alongside: { db in try ContactBook.noteSent(note, at: Date(), in: db) })
            return QueuedMail(plan: plan, copies: ids, notice: outgoing.notice.map { ids[$0] }, envelopeSender: sender)
        }
    }

    /// The outbox's copies of `mail`, the notice as kind ``NewCopy/noticeKind``;
    /// `ownCopy` is marked for `sent_maildir`. Throws ``UnsendableMessageError``
    /// for a copy no server can take (it would fail after the others went out: half sent).
    package static func newCopies(_ mail: OutgoingMail, ownCopy: Int?) throws -> [NewCopy] {
        try mail.copies.enumerated().map { index, copy in
            let bytes = try copy.bytes
            let kind = mail.isNotice(index) ? NewCopy.noticeKind : copy.kind.rawValue
            if let problem = SMTPCarriage.problem(bytes) {
                throw UnsendableMessageError(description: "copy \(index + 1) of \(mail.copies.count) (\(kind)) cannot be sent: \(problem)")
            }
            return NewCopy(kind: kind, recipients: copy.recipients, message: bytes, isOwnCopy: index == ownCopy)
        }
    }

    /// One delivery run (see ``Courier/deliver(only:ignoringSchedule:lockWait:now:)``).
    public func deliver(only: Set<Int64>? = nil, ignoringSchedule: Bool = false, lockWait: TimeInterval = 60)
        async throws(OutboxError) -> DeliveryReport {
        try await courier.deliver(only: only, ignoringSchedule: ignoringSchedule, lockWait: lockWait)
    }

    /// Changes of the outbox (made by this process) and of the connection state.
    public func events() -> AsyncStream<SendingEvent> {
        let changes = outbox.changes()
        let states = stateStream
        return AsyncStream { continuation in
            let first = Task { for await change in changes { continuation.yield(.outbox(change)) } }
            let second = Task { for await state in states { continuation.yield(.connection(state)) } }
            continuation.onTermination = { _ in first.cancel(); second.cancel() }
        }
    }

    /// Follows the connection until cancelled: reports each state change to
    /// `report` (and ``events()``), delivers everything pending as soon as the
    /// state becomes online, and delivers what falls due while online. It
    /// looks again on every netlink link, address or route event, and at
    /// least every `interval` seconds.
    public func watch(interval: TimeInterval = 30, report: @Sendable (ConnectionState, DeliveryReport?) -> Void) async {
        let events = NetworkEvents()
        var last: ConnectionState?
        while !Task.isCancelled {
            let state = await courier.transport.probe()
            var delivered: DeliveryReport?
            if state == .online {
                let due = (try? outbox.nextTry()).flatMap { $0 } 
                if last != .online || (due.map { $0 <= Date() } ?? false) {
                    delivered = try? await deliver(ignoringSchedule: last != .online, lockWait: 5)
                }
            }
            if state != last || (delivered.map { $0.delivered + $0.failed + $0.pending > 0 } ?? false) {
                if state != last { states.yield(state) }
                report(state, delivered)
            }
            last = state
            var wait = interval
            if state == .online, let due = (try? outbox.nextTry()).flatMap({ $0 }) {
                wait = max(1, min(interval, due.timeIntervalSinceNow))
            }
            // The netlink wait blocks a thread: keep it off the cooperative pool.
            let waited = wait
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread { _ = events.wait(timeout: waited); done.resume() }
            }
        }
    }
}
