import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy

extension ComposeSession {
    /// A reply (or with `all`, a reply to everybody) to `original`: To from
    /// Reply-To or From, with `all` also the original's To and Cc; none of
    /// `identities` (the sender's own addresses, `from` among them);
    /// `Re:` once; In-Reply-To and References; the text quoted.
    ///
    /// When the original arrived as a letter and the audience is mixed
    /// (letters and postcards), the quoted text and the subject are marked
    /// private: postcard recipients get them censored, letter recipients whole.
    public static func reply(to original: Original, all: Bool, from: MailAddress, identities: [String] = [],
                             gnupg: GnuPG, options: PipelineOptions = PipelineOptions(), outbox: any ComposeOutbox,
                             drafts: (any DraftStore)? = nil) async throws -> ComposeSession {
        let own = Set((identities + [from.address]).map { $0.lowercased() })
        var (primary, field) = original.replyTo.isEmpty ? (original.from, "From") : (original.replyTo, "Reply-To")
        // Answering one's own mail goes to its recipients, not back to oneself.
        if primary.allSatisfy({ own.contains($0.address.lowercased()) }) { (primary, field) = (original.to, "To") }
        var seen = own
        // Only plain addresses become recipients: anything else (a malformed
        // encoded-word's remains, say) refuses the reply rather than mailing it.
        func keep(_ addresses: [MailAddress], _ field: String) throws -> [MailAddress] {
            guard addresses.allSatisfy({ InertText.isPlainAddress($0.address) }) else { throw ComposeError(.badOriginal(field)) }
            return addresses.filter { seen.insert($0.address.lowercased()).inserted }
        }
        let to = try keep(primary, field) + (all ? keep(original.to, "To") : [])
        let cc = try all ? keep(original.cc, "Cc") : []
        let mode: ComposeMode = all ? .replyAll : .reply
        let draft = ComposeDraft(
            Composition(from: from, to: to, cc: cc, subject: original.replySubject, text: "\n\n" + original.quoted,
                        inReplyTo: original.messageID,
                        references: original.references + (original.messageID.map { [$0] } ?? [])),
            mode: mode, protected: original.protected)
        let session = try await ComposeSession(draft, gnupg: gnupg, options: options, outbox: outbox, drafts: drafts, mode: mode)
        if original.arrivedAsLetter, await session.state.isMixed {
            let redactor = options.redactor
            let quote = redactor.open + original.quoted.withoutMarkers(redactor) + redactor.close + "\n"
            try await session.setText("\n\n" + quote)
            let base = ProtectedContent.baseSubject(original.subject).withoutMarkers(redactor)
            if !base.isEmpty { try await session.setSubject("Re: " + redactor.open + base + redactor.close) }
        }
        return session
    }

    /// A forward of `original` to `recipients`: `Fwd:` once; inline (its
    /// header lines and text in the body, its attachments kept) or the whole
    /// (decrypted) mail attached as `message/rfc822`.
    public static func forward(_ original: Original, to recipients: [MailAddress], asAttachment: Bool, from: MailAddress,
                               gnupg: GnuPG, options: PipelineOptions = PipelineOptions(), outbox: any ComposeOutbox,
                               drafts: (any DraftStore)? = nil) async throws -> ComposeSession {
        let mode: ComposeMode = asAttachment ? .forwardAsAttachment : .forwardInline
        let draft = ComposeDraft(
            Composition(from: from, to: recipients, subject: original.forwardSubject,
                        text: asAttachment ? "" : "\n\n" + original.forwardedBlock.withoutMarkers(options.redactor),
                        attachments: asAttachment
                            ? [.init(filename: "forwarded-message.eml", contentType: "message/rfc822", data: original.bytes)]
                            : original.attachments),
            mode: mode, protected: original.protected)
        return try await ComposeSession(draft, gnupg: gnupg, options: options, outbox: outbox, drafts: drafts, mode: mode)
    }
}

extension ComposeState {
    /// True when the plan gives some recipients letters and others postcards.
    var isMixed: Bool {
        guard let plan else { return false }
        return plan.decisions.contains { $0.decision.isLetter }
            && plan.decisions.contains { if case .postcard = $0.decision { true } else { false } }
    }
}

extension String {
    /// The text with the markers taken out, so quoted text cannot open or
    /// close a span of the new mail.
    func withoutMarkers(_ redactor: Redactor) -> String {
        var text = self
        for marker in [redactor.open, redactor.close] {
            text = text.replacingOccurrences(of: marker, with: "", options: .caseInsensitive)
        }
        return text
    }
}
