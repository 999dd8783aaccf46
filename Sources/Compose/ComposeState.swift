import OpenPGP
import Pipeline
import Policy

/// Where a session stands.
public enum ComposePhase: Sendable, Hashable {
    /// Open for changes.
    case editing
    /// A send runs: a second send and every change are refused.
    case sendInProgress
    /// Output: thrown away.
    case discarded
    /// Output: kept as the draft with this id.
    case savedAsDraft(id: String)
    /// Output: queued in the outbox, one id per copy.
    case sent(outboxIDs: [String])

    /// True for the three output states, after which the session takes no change.
    public var isFinished: Bool {
        switch self {
        case .editing, .sendInProgress: false
        case .discarded, .savedAsDraft, .sent: true
        }
    }
}

/// One recipient as the person sees it while typing: the key found for the
/// address (or why none is usable) and what the plan decides.
public struct RecipientStatus: Sendable, Hashable {
    /// The recipient as the draft lists them.
    public let person: ComposeDraft.Person
    /// What the key look-up found.
    public let key: KeyAvailability
    /// Letter, postcard or refused, with the reason; nil when no plan could
    /// be made (see ``ComposeState/problem``).
    public let decision: Decision?
}

/// A snapshot of a session after a step: what an application shows.
public struct ComposeState: Sendable {
    /// Editing, a send in progress, or how it ended (discarded, saved as a draft, sent).
    public let phase: ComposePhase
    /// New, reply, reply-all, forward or a draft.
    public let mode: ComposeMode
    /// The draft as it stands.
    public let draft: ComposeDraft
    /// Each recipient with their key and decision.
    public let recipients: [RecipientStatus]
    /// The pipeline's plan for the mail as it stands; nil without recipients
    /// or when the mail cannot be planned (``problem`` says why).
    public let plan: Plan?
    /// Why the mail cannot be sent as it stands (unbalanced markers, a letter
    /// required without a key, no signing key); nil when it can.
    public let problem: String?
    /// Postcard recipients who would get content that arrived as a letter;
    /// sending needs ``downgradeConfirmed`` while this is not empty.
    public let downgrade: [String]
    /// True when a confirmation covers every recipient in ``downgrade``
    /// (it covers those named when it was given, not one added later).
    public let downgradeConfirmed: Bool
    /// How many key listings (gpg processes) the session has run so far.
    public let keyLookups: Int
    /// Once sent: the outbox id (one of ``ComposePhase/sent(outboxIDs:)``)
    /// of the password notice queued to the sender, when the mail's
    /// partially encrypted postcards published spans; nil otherwise. The
    /// password itself is in no state.
    public let passwordNotice: String?
    /// The password notice the mail would get as it stands: its partially
    /// encrypted postcards publish spans, and the notice can go as the
    /// options demand. Nil when nothing would be published, or when
    /// ``problem`` says why it cannot go (`letter-required`).
    public let plannedNotice: PlannedNotice?

    /// `none` without recipients; nil when no plan could be made.
    public var recipientState: RecipientSecurityState? {
        draft.recipients.isEmpty ? RecipientSecurityState.none : plan?.recipientState
    }

    /// `letter`, `postcard` or `extendedPostcard`; nil without a plan.
    public var mailState: MailSecurityState? { plan?.mailState }
}

/// Why a session refused a step. The description never quotes mail content.
public struct ComposeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was refused.
    public enum Code: Sendable, Equatable {
        /// A send runs; nothing else may happen until it ends.
        case sendInProgress
        /// The session ended (discarded, saved as draft, or sent).
        case finished
        /// Postcard recipients (named) would get content that arrived as a letter.
        case downgrade([String])
        /// The mail cannot be sent as it stands (the reason, without content).
        case notSendable(String)
        /// A range to mark lies outside the text, or would cut into a marker.
        case badRange
        /// A recipient address that is not `local@domain`.
        case badAddress(String)
        /// Saving needs a draft store, and the session has none.
        case noDraftStore
        /// The mail answered has something that is not a plain mail address in
        /// the field named: nothing of it becomes a recipient.
        case badOriginal(String)
    }

    /// What was refused.
    public let code: Code

    /// An error with `code`.
    public init(_ code: Code) { self.code = code }

    /// One line naming what was refused and why.
    public var description: String {
        switch code {
        case .sendInProgress: "a send is in progress"
        case .finished: "the composition is finished (sent, saved or discarded)"
        case .downgrade(let who):
            "content that arrived encrypted would reach " + who.joined(separator: ", ")
                + " as a postcard (unencrypted); confirm the downgrade, or mark it private"
        case .notSendable(let why): why
        case .badRange: "the range lies outside the text or cuts into a marker"
        case .badAddress(let address): "not a mail address: \(address)"
        case .noDraftStore: "there is no draft store"
        case .badOriginal(let field): "the mail answered has something that is not a mail address (local@domain) in its \(field)"
        }
    }
}

/// The password notice a compose session plans (``ComposeState/plannedNotice``):
/// it goes to the envelope sender after the letters, before the postcards.
public struct PlannedNotice: Sendable, Hashable {
    /// Who gets it: the envelope sender.
    public let address: String
    /// True when it goes as a letter to the sender's own key; false: plain.
    public let isLetter: Bool
    /// True when it is not mailed at all: the password is shown to the
    /// sender on their terminal (``PipelineOptions/showPassword``).
    public let isShown: Bool

    /// A notice to `address`, as a letter when `isLetter`, shown instead of mailed when `isShown`.
    public init(address: String, isLetter: Bool, isShown: Bool = false) {
        self.address = address
        self.isLetter = isLetter
        self.isShown = isShown
    }
}
