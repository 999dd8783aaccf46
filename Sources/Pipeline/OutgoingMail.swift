import Policy

/// Every copy of a written mail in the order it goes out, with the password
/// notice in its place: letters (and a mail passed on unchanged) first, then
/// the notice, then the postcards, so that the sender has the password
/// before anybody has a link to the reading page. Without a notice the
/// copies keep that order too (the plan's own: it puts the postcard last).
/// One arrangement for every destination of ``MailPipeline/send(_:to:)``:
/// the filter's hand-over, the outbox, a folder, a caller's closure.
public struct OutgoingMail: Sendable {
    /// The mail as the pipeline wrote it (the notice is not one of its copies).
    public let written: WrittenMail
    /// The copies in sending order, the notice among them.
    public let copies: [WrittenCopy]
    /// Where the password notice stands in ``copies``; nil when the mail
    /// published nothing.
    public let notice: Int?
    /// The password notice's own Message-ID (what the filter's loop tag
    /// covers); nil without a notice.
    package let noticeMessageID: String?
    /// For each of ``copies``, its index in `written.copies` (nil for the notice).
    private let origin: [Int?]

    /// `written` with `notice` (made by ``MailPipeline/passwordNotice(_:_:mustBeLetter:)``)
    /// placed just before the first postcard.
    init(_ written: WrittenMail, notice: WrittenCopy?, messageID: String? = nil) {
        self.written = written
        let indices = Array(written.copies.indices)
        // Letters first, postcards last (stable: the plan's order within each).
        let first = indices.filter { written.copies[$0].kind != .postcard }
        let last = indices.filter { written.copies[$0].kind == .postcard }
        noticeMessageID = notice == nil ? nil : messageID
        guard let notice else {
            origin = (first + last).map(Optional.some)
            copies = origin.map { written.copies[$0!] }
            self.notice = nil
            return
        }
        origin = first.map(Optional.some) + [nil] + last.map(Optional.some)
        copies = origin.map { $0.map { written.copies[$0] } ?? notice }
        self.notice = first.count
    }

    /// True when the copy at `index` is the password notice.
    public func isNotice(_ index: Int) -> Bool { index == notice }

    /// The sender's own copy (``WrittenMail/ownCopy(bcc:)``) as an index into
    /// ``copies``: never the notice.
    public func ownCopy(bcc: Set<String>) -> Int? {
        guard let own = written.ownCopy(bcc: bcc) else { return nil }
        return origin.firstIndex { $0 == own }
    }
}

extension MailPipeline {
    /// Refuses, before anything is written or published, a mail whose
    /// password notice could not be sent as the options demand: with
    /// ``PipelineOptions/noticeMustBeLetter`` a mail that publishes spans
    /// needs a sender who can receive a letter (``PipelineError/Code/noticeNeedsLetter``)
    /// or a terminal to show the password on (``PipelineOptions/showPassword``).
    package func checkNotice(_ prepared: PreparedMail) throws(PipelineError) {
        if prepared.publishesSpans && options.noticeMustBeLetter && !prepared.senderCanReceiveLetter && options.showPassword == nil {
            throw PipelineError(.noticeNeedsLetter, addresses: [prepared.envelopeSender])
        }
    }

    /// `written`'s copies in sending order with the password notice for the
    /// envelope sender when spans were published (``passwordNotice(_:_:mustBeLetter:)``,
    /// as ``PipelineOptions/noticeMustBeLetter`` says). Nothing is withdrawn
    /// here: a caller that fails after `write` calls ``withdraw(_:)``.
    package func outgoing(_ prepared: PreparedMail, _ written: WrittenMail) throws -> OutgoingMail {
        if options.noticeMustBeLetter && !prepared.senderCanReceiveLetter, let show = options.showPassword,
           let publication = written.publication, let password = written.password {
            // No letter for the sender: the password is shown to them, never mailed in clear.
            let recipients = written.copies.filter { $0.kind == .postcard }.flatMap(\.recipients)
            try show(PasswordNotice.shownText(password: password, publication: publication, recipients: recipients))
            return OutgoingMail(written, notice: nil)
        }
        let notice = try passwordNotice(prepared, written, mustBeLetter: options.noticeMustBeLetter)
        return OutgoingMail(written, notice: notice?.copy, messageID: notice?.messageID)
    }
}
