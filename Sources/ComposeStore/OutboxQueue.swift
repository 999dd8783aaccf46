import Compose
import Contacts
import Foundation
import MIME
import Outbox
import Pipeline
import Sending

/// The outbox as a compose session's destination: "sent" means every copy
/// stored durably in the outbox (all or none), one outbox id per copy.
///
/// The same transaction notes the recipients in the contacts and, for
/// each letter, its key (key continuity: give the session's pipeline
/// `StoreContinuity` to refuse a mail whose remembered key vanished).
///
/// With `sources`, the composition itself is stored beside the copies,
/// sealed to the sender's own key as a draft is: the copies of a letter are
/// encrypted to the recipients, so only this sealed source lets `outbox
/// edit` (``SealedDraftStore/takeBack(_:from:)``) turn a failed mail back into
/// a draft. It goes once every recipient has the mail. A sender without a
/// usable key of their own (no drafts either) queues without a source.
public struct OutboxQueue: ComposeOutbox {
    /// The outbox copies are queued in.
    public let outbox: Outbox
    /// True when the sender's own copy is filed in a sent folder after
    /// delivery (`sent_maildir`): that copy is marked, as `send` marks it.
    public let fileOwnCopy: Bool
    /// Where sources are sealed (the drafts' owner and key); nil: none kept.
    public let sources: SealedDraftStore?

    /// Queues into `outbox`, marking the own copy when `fileOwnCopy`, and
    /// sealing each mail's source into `sources` when given.
    public init(_ outbox: Outbox, fileOwnCopy: Bool = false, sources: SealedDraftStore? = nil) {
        self.outbox = outbox
        self.fileOwnCopy = fileOwnCopy
        self.sources = sources
    }

    /// Queues every copy of `mail` durably, in one transaction; returns their
    /// ids in the order of ``OutgoingMail/copies``. The password notice is
    /// queued as kind ``NewCopy/noticeKind``: the outbox holds the postcards
    /// until it was delivered, and it is never the own copy.
    public func queue(_ mail: OutgoingMail, draft: ComposeDraft) throws -> [String] {
        let own = fileOwnCopy ? mail.ownCopy(bcc: Set(draft.mail.bcc.map(\.address))) : nil
        let copies = try Submission.newCopies(mail, ownCopy: own)
        let source = try sources?.sealedIfPossible(draft)
        let sender = mail.written.copies.first?.envelopeSender ?? draft.mail.from.address
        let note = SentNote(written: mail.written, named: draft.recipients.map { MailAddress(name: $0.name, address: $0.address) })
        return try outbox.enqueue(sender: sender, messageID: draft.mail.messageID, origin: "compose", copies: copies,
                                  source: source, alongside: { db in try ContactBook.noteSent(note, at: Date(), in: db) })
            .map(String.init)
    }
}
