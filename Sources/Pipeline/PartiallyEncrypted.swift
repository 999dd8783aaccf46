import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Policy
import Redaction

/// A partially encrypted postcard in the making: the mail with each span
/// replaced by its place `[#n]`, the reading document, and the password.
struct ReadingPostcard {
    let numbered: MIMEMessage
    let document: ReadingDocument
    let password: SpanPassword

    /// The reading document of `rebuilt`, a postcard rebuilt with its spans
    /// numbered in `catalog` (``Postcard/rebuilt(_:redactor:mode:opaque:check:made:stopped:)``):
    /// the document's From, Subject and text come from the same model as the
    /// postcard (decoded and cleaned, inline blocks cut out), never from the
    /// raw input; the spans are encrypted under a fresh password. Nothing is
    /// published yet. nil when no span has text to show (spans only in
    /// attributes or comments, which are dropped): the censored postcard is all there is.
    init?(_ rebuilt: RebuiltPostcard, catalog: SpanCatalog, redactor: Redactor, lifetime: Int?) throws {
        func converted(_ segments: [TextSegment]) throws -> [ReadingDocument.Segment] {
            try segments.map { segment in
                switch segment {
                case .text(let text):
                    // A marker that the span search did not pair can never be shown.
                    if redactor.hasMarkers(text) { throw PipelineError(.unredactable, detail: "the reading page's text") }
                    return .text(text)
                case .span(let number): return .span(number)
                }
            }
        }
        let body: [TextSegment]
        switch rebuilt.readingText {
        case .plain(let text): body = try redactor.segments(text, catalog: catalog, part: "the main text")
        // The same kept text and spans as the postcard's HTML, through the same allow-list.
        case .html(let html): body = try HTMLRebuild.segments(html, redactor: redactor, catalog: catalog, part: "the main text")
        case nil: body = []
        }
        let document = (try converted(redactor.segments(rebuilt.from, catalog: catalog, part: "From")),
                        try converted(redactor.segments(rebuilt.subject, catalog: catalog, part: "Subject")),
                        try converted(body))
        // Spans only in attributes or comments are dropped, never numbered: nothing to publish.
        guard !catalog.spans.isEmpty else { return nil }
        password = SpanPassword()
        let blob: SpanBlob
        do { blob = try SpanBlob.seal(catalog.spans, password: password) } catch {
            throw PipelineError(.publishFailed, detail: error.description)
        }
        self.document = ReadingDocument(from: document.0, subject: document.1, body: document.2,
                                        spanCount: catalog.spans.count, blob: blob, lifetime: lifetime)
        numbered = rebuilt.message
    }

    /// The postcard: the numbered mail and a part that says where the spans
    /// can be read and that the password comes from the sender.
    func postcard(_ publication: Publication) throws -> MIMEMessage {
        let copy = try numbered.copy()
        guard let body = copy.body else { return copy }
        let sender = numbered.addresses(.from).first
        let who = sender.map { $0.name.isEmpty ? $0.address : $0.name } ?? "The sender"
        let notice = MIMEEntity.text("""
            \(who) marked parts of this mail as private. They are not in this mail: each \
            one is replaced by a numbered place such as \(SpanCatalog.place(1)).

            You can read them on this page:
            \(publication.url)

            The page asks for a password. \(who) will give it to you another way, for \
            example by phone or messenger; it is in no mail. The page can be read until \
            \(publication.expires).

            """)
        notice.setHeader("Content-Description", "Where to read the private parts of this mail")
        copy.setBody(.multipart("mixed", [try body.copy(), notice]))
        return copy
    }
}

/// The notice that gives the sender the password of a partially encrypted
/// postcard, to pass on by another channel. Made by the filter, which has
/// nobody else to tell; a library caller gets the password in `WrittenMail`.
public enum PasswordNotice {
    /// The notice as a plain message to `sender` about the postcard that went
    /// to `recipients`. `subject` is the postcard's (spans already numbered).
    public static func message(password: SpanPassword, publication: Publication, sender: String,
                               recipients: [String], subject: String?, messageID: String?) throws -> MIMEMessage {
        let about = messageID.map { " (Message-ID \($0))" } ?? ""
        let text = """
            Your mail "\(subject ?? "")"\(about) went to \(recipients.joined(separator: ", ")) \
            as a partially encrypted postcard: they have no key for a letter, so the parts you \
            marked as private were left out of it and encrypted on a reading page instead.

            The reading page:
            \(publication.url)

            The password:

                \(password.grouped)

            Give the password to the recipients yourself, another way than by mail: read it \
            out on the phone, or send it by a messenger. Never forward this mail and never put \
            the password in a mail: whoever can read the postcard could then read the private \
            parts too. The page can be read until \(publication.expires).

            To delete the page earlier:
            \(deletion(publication))

            """
        let address = MailAddress(address: sender)
        let notice = try Composition(from: MailAddress(name: "mailsec", address: sender), to: [address],
                                     subject: "Password for your partially encrypted mail", text: text).message()
        notice.setHeader("Auto-Submitted", "auto-generated")
        return notice
    }
}

extension PasswordNotice {
    /// What the sender is shown on their terminal instead of a notice
    /// mailed in clear (no key of their own for a letter): the page, the
    /// password, and how to delete the page.
    public static func shownText(password: SpanPassword, publication: Publication, recipients: [String]) -> String {
        """
        The private parts of your mail to \(recipients.joined(separator: ", ")) are on a reading page:
            \(publication.url)
        The password (shown only here, once; it is not mailed, as you have no key of your own for a letter):

            \(password.grouped)

        Give it to them another way than by mail. The page can be read until \(publication.expires). To delete it earlier:
        \(deletion(publication))

        """
    }

    /// The command that deletes the page, indented, on two lines.
    static func deletion(_ publication: Publication) -> String {
        "    curl -X DELETE -H \"Authorization: Bearer \(publication.deleteToken)\" \\\n"
            + "      " + publication.url.replacingOccurrences(of: "/r/", with: "/api/postcards/")
    }
}

extension MailPipeline {
    /// The password notice for the envelope sender of `prepared`, when
    /// `written` published spans: a letter encrypted to the sender's key (and
    /// signed with it) when there is one, else a plain message, unless
    /// `mustBeLetter`, which then throws `noticeNeedsLetter`. Returns the copy
    /// and its Message-ID; nil when nothing was published.
    package func passwordNotice(_ prepared: PreparedMail, _ written: WrittenMail, mustBeLetter: Bool) throws
        -> (copy: WrittenCopy, messageID: String)? {
        guard let publication = written.publication, let password = written.password else { return nil }
        let sender = prepared.envelopeSender
        let recipients = written.copies.filter { $0.kind == .postcard }.flatMap(\.recipients)
        let canSeal = prepared.senderCanReceiveLetter
        if mustBeLetter && !canSeal { throw PipelineError(.noticeNeedsLetter, addresses: [sender]) }
        // A plain notice names the mail by its postcard Subject (spans numbered).
        let subject = try prepared.message.subject.map { canSeal ? $0 : try options.redactor.redact($0, mode: .censor) }
        let notice = try PasswordNotice.message(password: password, publication: publication, sender: sender,
                                                recipients: recipients, subject: subject,
                                                messageID: prepared.message.messageID)
        let messageID = notice.messageID ?? ""
        guard canSeal, let key = prepared.senderKey, let signer = prepared.signingKey else {
            return (WrittenCopy(kind: .postcard, recipients: [sender], fingerprints: [], envelopeSender: sender,
                                bytes: notice.serialize()), messageID)
        }
        let letter = try Letter.seal(notice, to: [key], signer: signer, using: gnupg, outerSubject: options.outerSubject)
        return (WrittenCopy(kind: .letter, recipients: [sender], fingerprints: [key.fingerprint], envelopeSender: sender,
                            bytes: letter.serialize()), messageID)
    }

    /// Deletes what `written` published, if anything; best effort (the entry
    /// expires anyway).
    package func withdraw(_ written: WrittenMail) {
        if let publication = written.publication { try? options.publisher?.withdraw(publication) }
    }
}
