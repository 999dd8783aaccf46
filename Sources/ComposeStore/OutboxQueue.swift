import Compose
import Outbox
import Pipeline

/// The outbox as a compose session's destination: "sent" means every copy
/// stored durably in the outbox (all or none), one outbox id per copy.
///
/// Not yet here: marking the sender's own copy for `sent_maildir` (the
/// `Sending` target's `Submission` decides that from the plan).
public struct OutboxQueue: ComposeOutbox {
    /// The outbox copies are queued in.
    public let outbox: Outbox

    /// Queues into `outbox`.
    public init(_ outbox: Outbox) { self.outbox = outbox }

    /// Queues every copy of `mail` durably, in one transaction; returns their ids.
    public func queue(_ mail: WrittenMail, draft: ComposeDraft) throws -> [String] {
        let copies = try mail.copies.map { copy in
            NewCopy(kind: copy.kind.rawValue, recipients: copy.recipients, message: try copy.bytes)
        }
        let sender = mail.copies.first?.envelopeSender ?? draft.mail.from.address
        return try outbox.enqueue(sender: sender, messageID: draft.mail.messageID, origin: "compose", copies: copies)
            .map(String.init)
    }
}
