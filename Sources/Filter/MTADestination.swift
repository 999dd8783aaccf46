import MIME
import Pipeline
import Platform
import Policy

/// The filter's destination for ``MailPipeline/send(_:to:)``: the MTA, one
/// copy at a time, each with its loop tag, each recorded in the mail's
/// journal record as it goes, so that a retry sends only the rest.
final class MTADestination: CopyDestination {
    /// A signal asked the filter to stop; thrown between copies (nothing withdrawn).
    struct Stopped: Error {}

    let handover: Handover
    let record: MailRecord
    /// Every envelope recipient of the mail (the journal's intent covers all of them).
    let recipients: [String]
    let secret: [UInt8]
    /// The mail's Message-ID ("" without one), which its copies' tags cover.
    let messageID: String
    let sender: String
    /// The mail's copies (the notice not counted), known once it was written.
    private(set) var total = 0
    /// What went, by kind, for the log line.
    private(set) var counts = HandedCopies()
    /// The mail's copies handed on so far (the notice not counted).
    var handed: Int { counts.letters + counts.postcards + counts.unchanged }

    init(handover: Handover, record: MailRecord, recipients: [String], secret: [UInt8], messageID: String, sender: String) {
        self.handover = handover
        self.record = record
        self.recipients = recipients
        self.secret = secret
        self.messageID = messageID
        self.sender = sender
    }

    var handsOneByOne: Bool { true }

    /// The intent for every recipient, with the key of each one's letter, is
    /// on disk before anything is handed on: a full disk defers here, with nothing sent.
    func begin(_ mail: OutgoingMail) throws {
        total = mail.written.copies.count
        try record.commit(recipients, keys: MailFilter.letterKeys(mail.written.copies))
    }

    func hand(_ index: Int, of mail: OutgoingMail) throws {
        // A signal stops the hand-over between copies: what went out is in the journal.
        // The notice and the first postcard after it go together.
        if !(index > 0 && mail.isNotice(index - 1)) && Stop.isRequested { throw Stopped() }
        let copy = mail.copies[index]
        var out = try copy.bytes
        if mail.isNotice(index) {
            let tag = MailFilter.tag(secret, mail.noticeMessageID ?? "", copy.recipients, MailFilter.body(of: out))
            out = Array("\(MailFilter.tagHeader): \(tag)\n".utf8) + out
        } else if copy.kind != .unchanged {
            let tag = MailFilter.tag(secret, messageID, copy.recipients, MailFilter.body(of: out))
            out = Array("\(MailFilter.tagHeader): \(tag)\n".utf8) + out
        }
        do {
            try handover.send(out, sender: sender, recipients: copy.recipients)
        } catch {
            throw CopyNotHanded(index, of: mail, error)
        }
        if !mail.isNotice(index) { try record.markSent(copy.recipients) }
    }

    func handed(_ index: Int, of mail: OutgoingMail) {
        if mail.isNotice(index) {
            counts.notices += 1
            return
        }
        switch mail.copies[index].kind {
        case .letter: counts.letters += 1
        case .postcard: counts.postcards += 1
        case .unchanged: counts.unchanged += 1
        }
    }

    func finish(_ mail: OutgoingMail) {
        handover.close()
    }
}
