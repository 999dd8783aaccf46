import Pipeline

/// Where a sent composition goes: the outbox. "Sent" means queued there.
public protocol ComposeOutbox: Sendable {
    /// Queues every copy of `mail` (``OutgoingMail/copies``, in that order,
    /// the password notice among them) durably, all of them or none (a throw
    /// means nothing was queued), and returns one id per copy, in the same
    /// order. A destination that queues a notice must not hand the mail's
    /// postcards on before the notice was delivered. `draft` is the
    /// composition the copies were made from, for taking a failed entry back
    /// into a draft.
    func queue(_ mail: OutgoingMail, draft: ComposeDraft) throws -> [String]
}

/// Where drafts are kept. A store keeps them encrypted at rest.
public protocol DraftStore: Sendable {
    /// Saves `draft`, replacing the draft `id` when given; returns its id.
    func save(_ draft: ComposeDraft, replacing id: String?) throws -> String
    /// Removes the draft `id` (a draft that was sent).
    func delete(_ id: String) throws
}
