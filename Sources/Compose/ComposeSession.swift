import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy

/// A composition that changes step by step, with its security states
/// recomputed after every change by the pipeline's own planning
/// (``MailPipeline/prepare(_:original:envelopeSender:envelopeRecipients:keys:)``):
/// what the person sees while typing is what the pipeline decides at send time.
///
/// Keys are looked up once per change that brings new addresses, in one
/// listing for all of them, and kept for the session: adding twenty
/// recipients one by one runs at most twenty listings, adding them in one
/// step runs one, and changing text or options runs none.
///
/// Every state (after each change, and the output: discarded, saved as
/// draft, sent) is also delivered on ``states``.
public actor ComposeSession {
    /// Every state, in order, from the first; finishes after an output state.
    public nonisolated let states: AsyncStream<ComposeState>
    private let continuation: AsyncStream<ComposeState>.Continuation

    private let gnupg: GnuPG
    private let base: PipelineOptions
    private let outbox: any ComposeOutbox
    private let drafts: (any DraftStore)?
    /// How the session began: new, reply, reply-all, forward or a draft.
    public let mode: ComposeMode
    private var draft: ComposeDraft
    private var draftID: String?
    private var phase: ComposePhase = .editing
    private var book = KeyBook()
    private var keyLookups = 0
    /// The postcard recipients a downgrade was confirmed for (lower case):
    /// a confirmation covers those it named, never one added after it.
    private var confirmedDowngrade: Set<String> = []
    private func confirms(_ downgrade: [String]) -> Bool {
        !confirmedDowngrade.isEmpty && Set(downgrade.map { $0.lowercased() }).isSubset(of: confirmedDowngrade)
    }
    private var current: ComposeState!
    /// The outbox id of the password notice, once sent with one.
    private var noticeID: String?

    /// Starts a session on `draft` (a new mail, prefilled or empty). Keys of
    /// its recipients are looked up in one listing.
    public init(_ draft: ComposeDraft, gnupg: GnuPG, options: PipelineOptions = PipelineOptions(),
                outbox: any ComposeOutbox, drafts: (any DraftStore)? = nil, mode: ComposeMode = .new) async throws {
        (states, continuation) = AsyncStream.makeStream(of: ComposeState.self)
        self.gnupg = gnupg
        base = options
        self.outbox = outbox
        self.drafts = drafts
        self.mode = mode
        self.draft = draft
        if case .editingDraft(let id) = mode { draftID = id }
        try recompute()
    }

    /// Takes up the saved draft `id` again; saving replaces it, sending removes it.
    public init(editing draft: ComposeDraft, id: String, gnupg: GnuPG, options: PipelineOptions = PipelineOptions(),
                outbox: any ComposeOutbox, drafts: any DraftStore) async throws {
        try await self.init(draft, gnupg: gnupg, options: options, outbox: outbox, drafts: drafts, mode: .editingDraft(id: id))
    }

    /// The state now.
    public var state: ComposeState { current }

    // MARK: Changes

    /// Adds recipients in one role: one key listing for those not looked up before.
    @discardableResult
    public func add(_ people: [MailAddress], as role: RecipientRole) throws -> ComposeState {
        try change { draft in
            for person in people {
                guard GnuPG.isLookupAddress(person.address) else { throw ComposeError(.badAddress(person.address)) }
                guard !draft.recipients.contains(where: { $0.address.lowercased() == person.address.lowercased() }) else { continue }
                draft.recipients.append(.init(name: person.name, address: person.address, role: role))
            }
        }
    }

    /// Replaces every recipient at once (as an edited header block gives
    /// them): one key listing for the addresses not looked up before. An
    /// address given twice keeps its first role.
    @discardableResult
    public func setRecipients(_ people: [ComposeDraft.Person]) throws -> ComposeState {
        try change { draft in
            var kept: [ComposeDraft.Person] = []
            for person in people {
                guard GnuPG.isLookupAddress(person.address) else { throw ComposeError(.badAddress(person.address)) }
                guard !kept.contains(where: { $0.address.lowercased() == person.address.lowercased() }) else { continue }
                kept.append(person)
            }
            draft.recipients = kept
        }
    }

    /// Replaces the attachments.
    @discardableResult
    public func setAttachments(_ attachments: [ComposeDraft.Attachment]) throws -> ComposeState {
        try change { $0.mail.attachments = attachments }
    }

    /// Removes a recipient (whatever its role).
    @discardableResult
    public func remove(_ address: String) throws -> ComposeState {
        try change { draft in draft.recipients.removeAll { $0.address.lowercased() == address.lowercased() } }
    }

    /// Moves a recipient to another role (To, Cc, Bcc).
    @discardableResult
    public func move(_ address: String, to role: RecipientRole) throws -> ComposeState {
        try change { draft in
            for index in draft.recipients.indices where draft.recipients[index].address.lowercased() == address.lowercased() {
                draft.recipients[index].role = role
            }
        }
    }

    /// The Subject; markers in it mark private spans.
    @discardableResult
    public func setSubject(_ subject: String) throws -> ComposeState { try change { $0.mail.subject = subject } }

    /// The plain text; markers in it mark private spans.
    @discardableResult
    public func setText(_ text: String) throws -> ComposeState { try change { $0.mail.text = text } }

    /// An HTML alternative (nil: none).
    @discardableResult
    public func setHTML(_ html: String?) throws -> ComposeState { try change { $0.mail.html = html } }

    /// Adds an attached file.
    @discardableResult
    public func attach(_ attachment: ComposeDraft.Attachment) throws -> ComposeState {
        try change { $0.mail.attachments.append(attachment) }
    }

    /// Removes the attachments named `filename`.
    @discardableResult
    public func detach(_ filename: String) throws -> ComposeState {
        try change { $0.mail.attachments.removeAll { $0.filename == filename } }
    }

    /// Marks the characters `range` of the text private: markers are put
    /// around it. A range outside the text, or one whose markers would not
    /// pair up with those already there, is refused.
    @discardableResult
    public func markPrivate(_ range: Range<Int>) throws -> ComposeState {
        let redactor = base.redactor
        return try change { draft in
            let text = draft.mail.text
            guard range.lowerBound >= 0, range.upperBound <= text.count, !range.isEmpty else { throw ComposeError(.badRange) }
            let lower = text.index(text.startIndex, offsetBy: range.lowerBound)
            let upper = text.index(text.startIndex, offsetBy: range.upperBound)
            // Neither end may fall inside a marker that is there already.
            for marker in [redactor.open, redactor.close] {
                var from = text.startIndex
                while let found = text.range(of: marker, options: .caseInsensitive, range: from..<text.endIndex) {
                    if [lower, upper].contains(where: { found.lowerBound < $0 && $0 < found.upperBound }) {
                        throw ComposeError(.badRange)
                    }
                    from = found.upperBound
                }
            }
            let marked = text[..<lower] + redactor.open + text[lower..<upper] + redactor.close + text[upper...]
            // The new markers must pair up with those already there.
            guard (try? redactor.validate(marked, part: "text")) != nil else { throw ComposeError(.badRange) }
            draft.mail.text = marked
        }
    }

    /// Everybody gets a postcard, even recipients with keys.
    @discardableResult
    public func setEnforcePostcard(_ on: Bool) throws -> ComposeState { try change { $0.enforcePostcard = on } }

    /// Postcard recipients are invited to encrypted mail.
    @discardableResult
    public func setInvite(_ on: Bool) throws -> ComposeState { try change { $0.invite = on } }

    /// What postcards do with marked spans.
    @discardableResult
    public func setExtension(_ postcardExtension: PostcardExtension) throws -> ComposeState {
        try change { $0.postcardExtension = postcardExtension }
    }

    /// Confirms (or withdraws the confirmation) that content that arrived as
    /// a letter may reach the postcard recipients ``ComposeState/downgrade``
    /// names now. A postcard recipient added later needs a confirmation of its own.
    @discardableResult
    public func confirmDowngrade(_ confirmed: Bool = true) throws -> ComposeState {
        try checkEditable()
        confirmedDowngrade = confirmed ? confirmedDowngrade.union(current.downgrade.map { $0.lowercased() }) : []
        try recompute()
        return current
    }

    // MARK: Output

    /// Throws the composition away (a draft it was taken from stays).
    @discardableResult
    public func discard() throws -> ComposeState {
        try checkEditable()
        return finish(.discarded)
    }

    /// Keeps the composition as a draft (replacing the one it came from).
    @discardableResult
    public func saveAsDraft() throws -> ComposeState {
        try checkEditable()
        guard let drafts else { throw ComposeError(.noDraftStore) }
        let id = try drafts.save(draft, replacing: draftID)
        return finish(.savedAsDraft(id: id))
    }

    /// Writes every copy with the keys shown and queues them in the outbox.
    /// Refused before anything is written when the mail is not sendable or a
    /// downgrade is not confirmed. While it runs, every other step is refused
    /// with ``ComposeError/Code/sendInProgress``. A failure returns the
    /// session to editing with nothing queued.
    @discardableResult
    public func send() async throws -> ComposeState {
        try checkEditable()
        try recompute()
        // A remembered key that vanished holds the mail as `send` does: KeyLossError (temporary), nothing queued.
        if let plan = current.plan, !plan.keyLoss.isEmpty { try MailPipeline.checkNotRefused(plan) }
        if let problem = current.problem { throw ComposeError(.notSendable(problem)) }
        guard current.plan != nil else { throw ComposeError(.notSendable(PipelineError(.noRecipients).description)) }
        let unconfirmed = current.downgrade.filter { !confirmedDowngrade.contains($0.lowercased()) }
        if !unconfirmed.isEmpty { throw ComposeError(.downgrade(unconfirmed)) }
        phase = .sendInProgress
        publish()
        let (draft, book, options, gnupg, outbox) = (self.draft, self.book, pipelineOptions, self.gnupg, self.outbox)
        do {
            // Off the actor: the session answers (refusing) while gpg works.
            let (ids, notice) = try await Task.detached {
                let pipeline = MailPipeline(gnupg: gnupg, options: options)
                let prepared = try pipeline.prepare(try draft.message(), keys: book)
                // The password notice goes into the same transaction as the copies.
                return try pipeline.send(prepared, to: QueueDestination(outbox: outbox, draft: draft))
            }.value
            if let draftID { try? drafts?.delete(draftID) }
            noticeID = notice
            return finish(.sent(outboxIDs: ids))
        } catch {
            phase = .editing
            publish()
            throw error
        }
    }

    // MARK: Inside

    /// The session's outbox as a destination of ``MailPipeline/send(_:to:)``:
    /// every copy queued at once (all or none); the ids of the copies and of the notice.
    private struct QueueDestination: CopyDestination {
        let outbox: any ComposeOutbox
        let draft: ComposeDraft

        func finish(_ outgoing: OutgoingMail) throws -> (ids: [String], notice: String?) {
            let ids = try outbox.queue(outgoing, draft: draft)
            guard ids.count == outgoing.copies.count else {
                throw ComposeError(.notSendable("the outbox returned \(ids.count) ids for \(outgoing.copies.count) copies"))
            }
            return (ids, outgoing.notice.map { ids[$0] })
        }
    }

    private var pipelineOptions: PipelineOptions {
        var options = base
        options.mail.enforcePostcard = draft.enforcePostcard
        options.mail.invite = draft.invite
        options.mail.postcardExtension = draft.postcardExtension
        return options
    }

    private func checkEditable() throws {
        if phase == .sendInProgress { throw ComposeError(.sendInProgress) }
        if phase.isFinished { throw ComposeError(.finished) }
    }

    /// Applies `edit` and replans; a failed edit or look-up leaves everything as it was.
    private func change(_ edit: (inout ComposeDraft) throws -> Void) throws -> ComposeState {
        try checkEditable()
        let before = draft
        do {
            try edit(&draft)
            try recompute()
        } catch {
            draft = before
            throw error
        }
        return current
    }

    /// Looks up what is new (one listing, or none), plans, checks for a downgrade.
    private func recompute() throws {
        let pipeline = MailPipeline(gnupg: gnupg, options: pipelineOptions)
        var plan: Plan?
        var problem: String?
        var downgrade: [String] = []
        var notice: PlannedNotice?
        if !draft.recipients.isEmpty {
            let message = try draft.message()
            let missing = book.missing(from: try pipeline.keysWanted(for: message))
            if !missing.isEmpty {
                let found = try pipeline.lookUp(missing)
                keyLookups += 1
                book.merge(found)
            }
            do {
                let prepared = try pipeline.prepare(message, keys: book)
                plan = prepared.plan
                let kinds = Set(prepared.plan.copies.map(\.kind))
                if !prepared.plan.keyLoss.isEmpty,
                   case .failure(let loss) = Result(catching: { try MailPipeline.checkNotRefused(prepared.plan) }) {
                    problem = String(describing: loss)  // the key continuity line, as send then throws it
                } else if !prepared.plan.heldKeyChanges.isEmpty {
                    problem = KeyChangeError(changes: prepared.plan.heldKeyChanges).description  // as send then throws it
                } else if prepared.plan.isRefused {
                    problem = PipelineError(.refused, addresses: prepared.plan.refused.map(\.recipient.address)).description
                } else if prepared.signingKey == nil && (kinds.contains(.letter) || (kinds.contains(.postcard) && draft.invite)) {
                    problem = PipelineError(.noSigningKey, detail: base.signAs ?? draft.mail.from.address).description
                } else if case .failure(let error) = Result(catching: { () throws(PipelineError) in try pipeline.checkNotice(prepared) }) {
                    problem = error.description  // letter-required, and the sender cannot get the password in a letter
                }
                if prepared.publishesSpans && (try? pipeline.checkNotice(prepared)) != nil {
                    notice = PlannedNotice(address: prepared.envelopeSender, isLetter: prepared.senderCanReceiveLetter,
                                           isShown: !prepared.senderCanReceiveLetter && base.noticeMustBeLetter)
                }
                if let protected = draft.protected, kinds.contains(.postcard) {
                    let postcard = try prepared.censoredPostcard()
                    if protected.isShown(in: postcard) {
                        downgrade = prepared.plan.decisions.compactMap {
                            if case .postcard = $0.decision { $0.recipient.address } else { nil }
                        }
                    }
                }
            } catch let error as PolicyError {
                problem = error.description
            } catch let error as PipelineError {
                problem = error.description
            }
        }
        let decisions = Dictionary(plan?.decisions.map { ($0.recipient.address.lowercased(), $0.decision) } ?? [],
                                   uniquingKeysWith: { first, _ in first })
        let statuses = draft.recipients.map { person in
            RecipientStatus(person: person, key: book.availability(person.address) ?? .missing,
                            decision: decisions[person.address.lowercased()])
        }
        current = ComposeState(phase: phase, mode: mode, draft: draft, recipients: statuses, plan: plan, problem: problem,
                               downgrade: downgrade, downgradeConfirmed: confirms(downgrade), keyLookups: keyLookups,
                               passwordNotice: noticeID, plannedNotice: notice)
        continuation.yield(current)
    }

    private func publish() {
        current = ComposeState(phase: phase, mode: mode, draft: draft, recipients: current.recipients, plan: current.plan,
                               problem: current.problem, downgrade: current.downgrade,
                               downgradeConfirmed: confirms(current.downgrade), keyLookups: keyLookups,
                               passwordNotice: noticeID, plannedNotice: current.plannedNotice)
        continuation.yield(current)
    }

    private func finish(_ output: ComposePhase) -> ComposeState {
        phase = output
        publish()
        continuation.finish()
        return current
    }
}
