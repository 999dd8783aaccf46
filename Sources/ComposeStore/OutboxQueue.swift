import Compose
import Contacts
import Foundation
import MIME
import Outbox
import Pipeline

/// The outbox as a compose session's destination: "sent" means every copy
/// stored durably in the outbox (all or none), one outbox id per copy.
///
/// The same transaction notes the recipients in the contacts and, for
/// each letter, its key (key continuity: give the session's pipeline
/// `StoreContinuity` to refuse a mail whose remembered key vanished).
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
        let note = SentNote(written: mail, named: draft.recipients.map { MailAddress(name: $0.name, address: $0.address) })
        return try outbox.enqueue(sender: sender, messageID: draft.mail.messageID, origin: "compose", copies: copies,
                                  alongside: { db in try ContactBook.noteSent(note, at: Date(), in: db) })
            .map(String.init)
    }
}
