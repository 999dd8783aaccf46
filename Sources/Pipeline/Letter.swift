import Foundation
import MIME
import OpenPGP

/// An error of the letter pipeline.
public struct LetterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: Sendable, Equatable {
        /// The message has no body to seal.
        case noBody
        /// The message is not a PGP/MIME `multipart/encrypted` letter.
        case notEncrypted
        /// No recipient key was given.
        case noRecipients
    }

    /// What went wrong.
    public let code: Code

    /// An error with `code`.
    public init(_ code: Code) { self.code = code }

    /// One line naming the problem, without message content.
    public var description: String {
        switch code {
        case .noBody: "message has no body"
        case .notEncrypted: "message is not a PGP/MIME encrypted letter"
        case .noRecipients: "no recipient key"
        }
    }
}

/// A decrypted letter.
public struct OpenedLetter {
    /// The decrypted MIME body.
    public let body: MIMEEntity
    /// Signatures found inside the encryption, verified.
    public let signatures: [Signature]
    /// Key ids the letter was encrypted to.
    public let recipientKeyIDs: [String]
    /// Problems the parser noticed in the decrypted body.
    public let parseIssues: [ParseIssue]
}

/// Letters: PGP/MIME (RFC 3156) `multipart/encrypted`, signed and encrypted
/// in one OpenPGP operation (RFC 3156 §6.2), with the header fields protected
/// inside (RFC 9788).
public enum Letter {
    /// Header fields that describe the body, and so are never copied from the
    /// original, and Bcc, which no copy may carry.
    static let bodyHeaders: Set<String> = ["content-type", "content-transfer-encoding", "content-disposition",
                                           "content-description", "content-id", "mime-version", "bcc", "resent-bcc"]

    /// Trace and transport fields: they stay outside only.
    static let traceHeaders: Set<String> = ["received", "return-path", "dkim-signature", "arc-seal",
                                            "arc-message-signature", "arc-authentication-results",
                                            "authentication-results", "delivered-to", "autocrypt"]

    /// The only fields shown outside a letter besides trace fields: what mail
    /// servers and threading need. Everything else (X- fields, Thread-Topic,
    /// Organization …) travels inside only.
    static let outerHeaders: Set<String> = ["from", "sender", "to", "cc", "reply-to", "date", "message-id",
                                            "in-reply-to", "references"]

    /// A letter before its encryption: the body to encrypt and the fields
    /// that will stand outside.
    public struct Draft {
        /// The body with every header field of the message inside
        /// (`hp="cipher"`) and `HP-Outer` fields recording the outside. A copy
        /// of its own: encrypting it re-encodes it in place.
        public let inner: MIMEEntity
        /// The fields shown outside, in order.
        public let outer: [(name: String, value: String)]
    }

    /// Makes a letter of `message` for `recipients`, signed by `signer`.
    ///
    /// Inside the encryption the body carries all of the message's header
    /// fields (`hp="cipher"`, and `protected-headers="v1"` for older readers) and `HP-Outer` fields that record what the
    /// outside shows. Outside stand only the fields in ``outerHeaders`` and
    /// trace fields, with their values from `outside` (the censored copy when
    /// the mail has marked spans), the Subject `outerSubject`, and `autocrypt`
    /// (a complete header value) when given. The body is encrypted in its
    /// canonical form (7-bit clean, CRLF). Neither message is changed.
    public static func seal(_ message: MIMEMessage, outside: MIMEMessage? = nil, to recipients: [Key], signer: Key,
                            using gnupg: GnuPG, hideRecipients: Bool = false, autocrypt: String? = nil,
                            outerSubject: String = "...") throws -> MIMEMessage {
        guard !recipients.isEmpty else { throw LetterError(.noRecipients) }
        let draft = try self.draft(message, outside: outside, outerSubject: outerSubject)
        let ciphertext = try Spool()
        try encrypt(draft, to: recipients, signer: signer, using: gnupg, into: ciphertext.fd, hideRecipients: hideRecipients)
        return try assemble(draft, ciphertext: try ciphertext.bytes(), autocrypt: autocrypt)
    }

    /// The first half of ``seal(_:outside:to:signer:using:hideRecipients:autocrypt:outerSubject:)``:
    /// the body to encrypt and the outside fields. No cryptography.
    package static func draft(_ message: MIMEMessage, outside: MIMEMessage? = nil, outerSubject: String = "...") throws -> Draft {
        guard let original = message.body else { throw LetterError(.noBody) }
        let headers = message.headers.filter { !bodyHeaders.contains($0.name.lowercased()) && !$0.value.isEmpty }

        var outer: [(name: String, value: String)] = []
        for header in (outside ?? message).headers where !header.value.isEmpty {
            let name = header.name.lowercased()
            if name == "subject" {
                outer.append((header.name, outerSubject))
            } else if outerHeaders.contains(name) || traceHeaders.contains(name) && name != "autocrypt" {
                outer.append((header.name, header.value))
            }
        }

        let inner = try original.copySharingContent()
        let protected = headers.filter { !traceHeaders.contains($0.name.lowercased()) }
        let hpOuter = outer.filter { !traceHeaders.contains($0.name.lowercased()) }.map { ("HP-Outer", "\($0.name): \($0.value)") }
        for (name, value) in (protected.map { ($0.name, $0.value) } + hpOuter).reversed() {
            inner.prependHeader(name, value)
        }
        // Both markers: RFC 9788's, and the older draft's that readers such as
        // notmuch 0.37 and Thunderbird before 128 know (else they show "...").
        inner.setContentTypeParameter("hp", "cipher")
        inner.setContentTypeParameter("protected-headers", "v1")
        inner.foldLongHeaders()
        return Draft(inner: inner, outer: outer)
    }

    /// Signs and encrypts the draft's body in its canonical form, armored,
    /// into `output` (a file). The body streams: a thread writes it into a
    /// pipe that gpg reads, so it is never whole in memory. The draft's body
    /// is re-encoded in place, and is not touched by this thread meanwhile.
    /// If the body could not be written in full, nothing counts: the
    /// ciphertext of a cut-off body is thrown away with an error.
    package static func encrypt(_ draft: Draft, to recipients: [Key], signer: Key, using gnupg: GnuPG,
                               into output: Int32, hideRecipients: Bool = false) throws {
        guard !recipients.isEmpty else { throw LetterError(.noRecipients) }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw StreamingError(description: "cannot make a pipe") }
        // Not inherited by gpg: its stdin must see the end of the body when the writer closes.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // The body is used by the writing thread alone until `wait()` returns.
        // It shares content streams with the mail and its other copies
        // (copySharingContent), so nothing else may touch GMime objects of this
        // mail meanwhile: letters are encrypted one at a time, and this thread
        // only waits for GPGME.
        let inner = draft.inner, writeEnd = ends[1]
        let writer: Background<Void>
        do {
            writer = try Background { try inner.writeCanonicalForm(to: writeEnd) }  // closes writeEnd
        } catch {
            for end in ends { close(end) }
            throw error
        }
        let result = Result { try gnupg.encrypt(from: ends[0], to: output, recipients: recipients, signer: signer,
                                                hideRecipients: hideRecipients) }
        // A writer still waiting on gpg (which failed) now gets EPIPE and ends
        // (SIGPIPE is ignored: gpgme_check_version sets that up).
        close(ends[0])
        let written = writer.wait()
        try result.get()
        if case .failure = written {
            // gpg saw the end of a cut-off body: its ciphertext must not be used.
            throw StreamingError(description: "the letter's body could not be written in full")
        }
    }

    /// The second half: the letter around `ciphertext` (armored), with the
    /// draft's outside fields and `autocrypt`.
    package static func assemble(_ draft: Draft, ciphertext: [UInt8], autocrypt: String? = nil) throws -> MIMEMessage {
        let letter = MIMEMessage(body: try PGPMIME.encrypted(armoredCiphertext: ciphertext))
        for (name, value) in draft.outer { letter.appendHeader(name, value) }
        if let autocrypt { try letter.appendRawHeader("Autocrypt", autocrypt) }
        letter.foldLongHeaders()
        return letter
    }

    /// Decrypts a letter and verifies the signature inside it.
    public static func open(_ message: MIMEMessage, using gnupg: GnuPG, options: ParseOptions = .standard) throws -> OpenedLetter {
        guard let body = message.body, let ciphertext = PGPMIME.ciphertext(of: body) else {
            throw LetterError(.notEncrypted)
        }
        let decrypted = try gnupg.decrypt(ciphertext)
        let (entity, issues) = try MIMEEntity.parse(decrypted.plaintext, options: options)
        return OpenedLetter(body: entity, signatures: decrypted.info.signatures,
                            recipientKeyIDs: decrypted.info.recipientKeyIDs, parseIssues: issues)
    }
}
