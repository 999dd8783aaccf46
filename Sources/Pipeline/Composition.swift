import Foundation
import MIME
import Policy
import Redaction

/// A mail composed in code rather than parsed: the pipeline's other input.
public struct Composition: Sendable, Hashable, Codable {
    /// An attached file.
    public struct Attachment: Sendable, Hashable, Codable {
        /// The file name shown to recipients.
        public var filename: String
        /// Media type, e.g. `application/pdf`; `message/rfc822` for a forwarded mail.
        public var contentType: String
        /// The file's bytes.
        public var data: [UInt8]

        /// An attachment named `filename` of media type `contentType`.
        public init(filename: String, contentType: String, data: [UInt8]) {
            self.filename = filename
            self.contentType = contentType
            self.data = data
        }
    }

    /// The sender.
    public var from: MailAddress
    /// The To recipients.
    public var to: [MailAddress]
    /// The Cc recipients.
    public var cc: [MailAddress]
    /// The Bcc recipients: envelope only, in no copy's header.
    public var bcc: [MailAddress]
    /// The Subject; may hold marked spans.
    public var subject: String
    /// The plain text body.
    public var text: String
    /// An HTML alternative to the text, if any.
    public var html: String?
    /// Attached files, in order.
    public var attachments: [Attachment]
    /// Message-ID of the mail this answers, without angle brackets.
    public var inReplyTo: String?
    /// Message-IDs of the thread, without angle brackets.
    public var references: [String]
    /// Defaults to now.
    public var date: Date
    /// Without angle brackets; made up from a UUID when nil.
    public var messageID: String?

    /// A mail from `from`; everything else may be filled in later.
    public init(from: MailAddress, to: [MailAddress] = [], cc: [MailAddress] = [], bcc: [MailAddress] = [],
                subject: String, text: String, html: String? = nil, attachments: [Attachment] = [],
                inReplyTo: String? = nil, references: [String] = [], date: Date = Date(), messageID: String? = nil) {
        self.from = from
        self.to = to
        self.cc = cc
        self.bcc = bcc
        self.subject = subject
        self.text = text
        self.html = html
        self.attachments = attachments
        self.inReplyTo = inReplyTo
        self.references = references
        self.date = date
        self.messageID = messageID
    }

    /// The RFC 5322 message: text, or text and HTML as `multipart/alternative`,
    /// wrapped in `multipart/mixed` when there are attachments.
    public func message() throws -> MIMEMessage {
        var body: MIMEEntity = .text(text)
        if let html { body = .multipart("alternative", [body, .text(html, subtype: "html")]) }
        if !attachments.isEmpty {
            let parts = try attachments.map { attachment in
                let type = attachment.contentType.split(separator: "/", maxSplits: 1).map(String.init)
                guard type.count == 2 else { throw MIMEError(.invalidArgument, detail: "media type \(attachment.contentType)") }
                // A forwarded mail is carried as a mail (message/rfc822 may not
                // be base64- or quoted-printable-encoded), so readers open it as one.
                if attachment.contentType.lowercased() == "message/rfc822" {
                    let part = MIMEEntity.message(try MIMEMessage.parse(attachment.data))
                    part.setHeader("Content-Disposition", "attachment")
                    return part
                }
                return try MIMEEntity.part(attachment.data, type: type[0], subtype: type[1], filename: attachment.filename)
            }
            body = .multipart("mixed", [body] + parts)
        }
        let message = MIMEMessage(body: body)
        message.add([from], to: .from)
        message.add(to, to: .to)
        message.add(cc, to: .cc)
        message.add(bcc, to: .bcc)
        message.setSubject(subject)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        message.setHeader("Date", formatter.string(from: date))
        let domain = from.address.split(separator: "@").last.map(String.init) ?? "localhost"
        message.setHeader("Message-ID", "<\(messageID ?? UUID().uuidString.lowercased() + "@" + domain)>")
        if let inReplyTo { message.setHeader("In-Reply-To", "<\(inReplyTo)>") }
        if !references.isEmpty { message.setHeader("References", references.map { "<\($0)>" }.joined(separator: " ")) }
        return message
    }
}

/// Postcards made without any key: what `mailsec redact` prints.
public enum Postcard {
    /// The censored postcard of `message`: for a mail with marked spans
    /// rebuilt from what mailsec reads of it (``PostcardRebuild``), opaque
    /// parts as `opaque` says; otherwise the mail as it is, Bcc removed. A
    /// signed mail with marked spans is refused. A mail with marked spans in
    /// which some place cannot be read with certainty is refused
    /// (``PipelineError/Code/unreadable``).
    public static func censored(_ message: MIMEMessage, redactor: Redactor = .standard,
                                opaque: OpaqueParts = .withhold) throws -> MIMEMessage {
        guard let found = try spans(message, redactor: redactor, opaque: opaque) else { return try unchanged(message) }
        return try rebuilt(message, redactor: redactor, mode: .censor, opaque: opaque, made: found.model).message
    }

    /// ``censored(_:redactor:opaque:)`` handed to `body` in pieces as it is written. A rebuilt
    /// postcard goes out as the bytes its check read (``MailPipeline/check(_:redactor:wholeAbove:)``),
    /// where GMime wrote them: not copied, nor parsed from them and written again (at 100 MB that
    /// was a fifth of the time and two copies; issue 24, row 5).
    public static func writeCensored(_ message: MIMEMessage, redactor: Redactor = .standard, opaque: OpaqueParts = .withhold,
                                     _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let found = try spans(message, redactor: redactor, opaque: opaque) else { return try unchanged(message).write(body) }
        let postcard = try rebuilt(message, redactor: redactor, mode: .censor, opaque: opaque, check: false, made: found.model).message
        try postcard.withSerialized { written in
            try MailPipeline.check(written, redactor: redactor)
            try body(written)
        }
    }

    /// What decides whether a censored postcard is rebuilt: nil for a mail without marked spans;
    /// refuses a falsely encrypted mail, and one with spans and a place not read with certainty.
    static func spans(_ message: MIMEMessage, redactor: Redactor, opaque: OpaqueParts) throws -> SpanFinding? {
        try refuseFalseEncryption(message)
        let readings = redactor.readings(of: message)
        let found = try hasMarkedSpans(message, redactor: redactor, readings: readings, mode: .censor, opaque: opaque)
        if found.hasSpans, let place = readings.uncertain.first { throw PipelineError(.unreadable, detail: place) }
        return found.hasSpans ? found : nil
    }

    /// Refuses (`falselyEncrypted`, 65) a message labelled encrypted whose
    /// content is not ciphertext (``EncryptedAlready``): sent on unchanged it
    /// would pass as encrypted mail, while any reader opens it as plain
    /// content — markers inside a literal or compressed OpenPGP message
    /// included, which mailsec does not read.
    static func refuseFalseEncryption(_ message: MIMEMessage) throws {
        guard let body = message.body, EncryptedAlready.claimsEncryption(body), !EncryptedAlready.isEncrypted(body) else { return }
        throw PipelineError(.falselyEncrypted, detail: body.contentType.description)
    }

    /// Whether a mail has marked spans, and the rebuild made to find out, if one was.
    struct SpanFinding {
        /// True when the mail has marked spans.
        let hasSpans: Bool
        /// The rebuild that read the model: the postcard is written from it when it
        /// serves (``PostcardRebuild/ModelReading/serves(_:opaque:)``).
        let model: PostcardRebuild.ModelReading?
    }

    /// Whether `message` has marked spans: in some reading of it (`readings`),
    /// in GMime's text, where markers must pair up, or in the model a rebuild
    /// reads (``PostcardRebuild/read(_:redactor:mode:opaque:)``: what recipients'
    /// programs show, hidden HTML and escape sequences gone). Markers that do not
    /// pair up in GMime's text but do in the rebuilt model count as spans (GMime's
    /// text of a part stops at a NUL, which the model strips); else the error stands.
    ///
    /// The model is read by rebuilding the postcard as it would be written (`mode`,
    /// `opaque`), so that a mail with spans is rebuilt once: ``rebuilt(_:redactor:mode:opaque:check:made:stopped:)``
    /// takes the rebuild made here. A mail whose raw readings show a marker is not rebuilt here.
    static func hasMarkedSpans(_ message: MIMEMessage, redactor: Redactor, readings: Redactor.ReadingsFinding,
                               mode: Redactor.Mode, opaque: OpaqueParts) throws -> SpanFinding {
        do {
            if try redactor.hasMarkedSpans(message) || readings.marker != nil { return SpanFinding(hasSpans: true, model: nil) }
        } catch let error as PolicyError {
            guard let model = try? PostcardRebuild.read(message, redactor: redactor, mode: mode, opaque: opaque),
                  model.hasSpans != nil else { throw error }
            return SpanFinding(hasSpans: true, model: model)
        }
        let model = try PostcardRebuild.read(message, redactor: redactor, mode: mode, opaque: opaque)
        return SpanFinding(hasSpans: model.hasSpans ?? false, model: model)
    }

    /// A postcard of a mail without marked spans: the mail as it is, Bcc
    /// removed, header fields 7-bit and folded.
    static func unchanged(_ message: MIMEMessage) throws -> MIMEMessage {
        let copy = try message.copySharingContent()
        copy.removeHeader("Bcc")
        copy.removeHeader("Resent-Bcc")
        // A postcard's header fields are 7-bit, as a letter's are (RFC 2047).
        copy.encodeEightBitHeaders()
        // And folded: a long Subject of a parsed mail is one line otherwise.
        copy.foldLongHeaders()
        return copy
    }

    /// The one path every postcard of a mail with marked spans comes from
    /// (`redact`, `encrypt`, the filters, `send`, `sendmail`, `compose`, and
    /// the partially encrypted postcard with `.number`): the mail rebuilt
    /// (``PostcardRebuild/rebuild(_:redactor:mode:opaque:)``), written, parsed
    /// again as written and its reading searched (``MailPipeline/checked(_:redactor:wholeAbove:)``);
    /// a marker there refuses the mail. The message returned is the one parsed from what was written.
    ///
    /// `check: false` leaves the check to the caller, which checks the postcard as it is finally
    /// written (``MailPipeline/write(_:)``); `stopped` is told what the rebuild had found when it stopped.
    /// `made`, the rebuild that decided whether the mail has spans, is taken when it was made in `mode`
    /// and `opaque`, instead of rebuilding the mail again.
    static func rebuilt(_ message: MIMEMessage, redactor: Redactor, mode: Redactor.Mode, opaque: OpaqueParts,
                        check: Bool = true, made: PostcardRebuild.ModelReading? = nil,
                        stopped: ((PostcardParts) -> Void)? = nil) throws -> RebuiltPostcard {
        let rebuilt: RebuiltPostcard
        do {
            if let made, made.serves(mode, opaque: opaque) {
                rebuilt = try made.rebuilt.get()
            } else {
                rebuilt = try PostcardRebuild.rebuild(message, redactor: redactor, mode: mode, opaque: opaque)
            }
        } catch let error as RebuildError {
            stopped?(error.parts)
            throw PipelineError(error)
        }
        guard check else { return rebuilt }
        let checked = try MailPipeline.checkedMessage(rebuilt.message.serialize(), redactor: redactor)
        let written = try checked.message ?? MIMEMessage.parse(checked.bytes, options: .unlimited)
        return RebuiltPostcard(message: written, parts: rebuilt.parts, from: rebuilt.from, subject: rebuilt.subject,
                               readingText: rebuilt.readingText)
    }
}

extension PipelineError {
    /// The pipeline's error for a rebuild that stopped.
    init(_ error: RebuildError) {
        switch error.code {
        case .signed: self.init(.signedMailNeedsRedaction)
        case .refusedParts: self.init(.opaquePartRefused, detail: error.place)
        case .markerInPassedPart, .tooDeep: self.init(.unredactable, detail: error.place)
        }
    }
}
