import Foundation

/// Where a copy, or one recipient of it, stands.
///
/// `pending` → `sending` → `sent`; or `failed` (with the reason), which waits
/// for the person: resend (back to `pending`) or discard. A temporary failure
/// (no network, refused connection, time-out, 4xx) leaves `pending` with a
/// later next try.
public enum DeliveryState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Waiting for its next try.
    case pending
    /// Handed to the server right now (or interrupted by a crash: see ``Outbox/recoverInterrupted()``).
    case sending
    /// The server accepted it (250/251/252).
    case sent
    /// Refused for good (5xx, authentication failed, TLS verification failed), or given up.
    case failed
}

/// What one delivery attempt did for one recipient.
public enum RecipientOutcome: Sendable, Hashable {
    /// Accepted by the server.
    case accepted
    /// Not this time; try again later. The reason is one line, never content.
    case temporary(String)
    /// Refused for good; the person decides (resend or discard).
    case permanent(String)
}

/// One recipient of a copy in the outbox.
public struct OutboxRecipient: Sendable, Hashable, Codable {
    /// The recipient's address.
    public let address: String
    /// Where this recipient's copy stands.
    public let state: DeliveryState
    /// Why it failed, or why its last try did not succeed; nil once sent.
    public let reason: String?
}

/// One copy in the outbox (a letter, a postcard, a mail passed on
/// unchanged, or the password notice to the sender), with its recipients. Its ``id`` is what `outbox resend ID`
/// and `outbox discard ID` take.
public struct OutboxEntry: Sendable, Hashable, Identifiable {
    /// The copy's id, as the CLI shows it.
    public let id: Int64
    /// The mail it is a copy of (several copies share one).
    public let mailID: Int64
    /// When the copy was queued.
    public let created: Date
    /// `letter`, `postcard`, `unchanged` or `notice` (``NewCopy/noticeKind``).
    public let kind: String
    /// The envelope sender (MAIL FROM).
    public let envelopeSender: String
    /// The mail's Message-ID, without angle brackets, when it has one.
    public let messageID: String?
    /// Each recipient with its state.
    public let recipients: [OutboxRecipient]
    /// How many times sending was tried.
    public let attempts: Int
    /// The last failure's reason, when the last try failed.
    public let lastError: String?
    /// When it is tried next; nil when nothing is pending.
    public let nextTry: Date?
    /// True for the copy filed in `sent_maildir` after delivery.
    public let isOwnCopy: Bool
    /// For a postcard of a mail with a password notice: the notice's id
    /// while it is not delivered. The postcard stays `pending` and is not
    /// handed to the server before the notice was (its recipients could
    /// not open the link); nil when it waits for nothing.
    public let waitingFor: Int64?

    /// The copy's state, from its recipients': `sending` while any is being
    /// sent, else `pending` while any waits, else `failed` when any failed,
    /// else `sent`.
    public var state: DeliveryState {
        let states = Set(recipients.map(\.state))
        if states.contains(.sending) { return .sending }
        if states.contains(.pending) { return .pending }
        if states.contains(.failed) { return .failed }
        return .sent
    }
}

/// A change to the outbox, as ``Outbox/changes()`` reports it.
public enum OutboxChange: Sendable, Hashable {
    /// A copy was added or changed state; it is given as it is now.
    case updated(OutboxEntry)
    /// A copy was discarded (or removed after it was sent).
    case removed(id: Int64)
}

/// A copy to put into the outbox.
public struct NewCopy: Sendable {
    /// The kind of the password notice that gives the sender the password of
    /// the mail's partially encrypted postcards (a letter to the sender's own
    /// key, or plain). The mail's postcards wait until it was delivered.
    public static let noticeKind = "notice"

    /// `letter`, `postcard`, `unchanged` or ``noticeKind``.
    public var kind: String
    /// The envelope recipients.
    public var recipients: [String]
    /// The message as it goes out.
    public var message: [UInt8]
    /// The copy to file in `sent_maildir` once delivered.
    public var isOwnCopy: Bool

    /// A copy of `kind` for `recipients`; `isOwnCopy` for the sender's own.
    public init(kind: String, recipients: [String], message: [UInt8], isOwnCopy: Bool = false) {
        self.kind = kind
        self.recipients = recipients
        self.message = message
        self.isOwnCopy = isOwnCopy
    }
}

/// A copy claimed for one delivery attempt: its recipients are `sending`
/// until ``Outbox/record(_:outcomes:)`` says how it went.
public struct ClaimedCopy: Sendable {
    /// The copy's id.
    public let id: Int64
    /// `letter`, `postcard`, `unchanged` or `notice`.
    public let kind: String
    /// The envelope sender (MAIL FROM).
    public let envelopeSender: String
    /// The recipients claimed (those that were pending), in the stored order.
    public let recipients: [String]
    /// The message as it goes out.
    public let message: [UInt8]
    /// True for the copy that is filed in the sender's sent folder once delivered.
    public let isOwnCopy: Bool
}
