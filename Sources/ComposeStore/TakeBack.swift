import Compose
import Foundation
import Outbox

extension SealedDraftStore {
    /// `outbox edit`: takes the failed mail of outbox copy `id` back into a
    /// draft (InboxKit's rollback: the local state returns to what it was
    /// before the send). The draft is the composition as it was queued, less
    /// the recipients the server already accepted (they have the mail); the
    /// mail leaves the outbox in the same transaction that stores the draft,
    /// so it is never in both, and never in neither. Returns the draft's id.
    ///
    /// Refused (``Outbox/takeBack(_:)``): no such copy; a copy being sent,
    /// sent, or still pending; a mail queued without a source. Also refused:
    /// a source not sealed by the owner's own key.
    public func takeBack(_ id: Int64, from outbox: Outbox) throws -> String {
        let taken = try outbox.takeBack(id)
        // The Message-ID stays: the same mail, to those who do not have it yet.
        var draft = try DraftSeal.open(taken.source, key: try DraftSeal.ownKey(owner, gnupg: gnupg), gnupg: gnupg)
        draft.recipients.removeAll { taken.delivered.contains($0.address.lowercased()) }
        let sealed = try seal(draft)
        let key = UUID().uuidString.lowercased()
        try outbox.commitTakeBack(taken) { db in try Self.insert(db, id: key, sealed: sealed) }
        return key
    }
}
