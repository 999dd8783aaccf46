import Foundation
import MIME
import OpenPGP

/// An error of the letter pipeline.
public struct LetterError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// The message has no body to seal.
        case noBody
        /// The message is not a PGP/MIME `multipart/encrypted` letter.
        case notEncrypted
        /// No recipient key was given.
        case noRecipients
    }

    public let code: Code

    public init(_ code: Code) { self.code = code }

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
/// in one OpenPGP operation (RFC 3156 §6.2).
public enum Letter {
    /// Header fields that describe the body and so are never copied from the
    /// original onto the letter, and Bcc, which no copy may carry.
    static let bodyHeaders: Set<String> = ["content-type", "content-transfer-encoding", "content-disposition",
                                           "content-description", "content-id", "mime-version", "bcc"]

    /// Makes a letter of `message` for `recipients`, signed by `signer`.
    ///
    /// The body is encrypted in its canonical form (7-bit clean, CRLF); the
    /// letter keeps the original's other header fields and drops Bcc. The
    /// original message is not changed.
    public static func seal(_ message: MIMEMessage, to recipients: [Key], signer: Key, using gnupg: GnuPG,
                            hideRecipients: Bool = false) throws -> MIMEMessage {
        guard let body = message.body else { throw LetterError(.noBody) }
        guard !recipients.isEmpty else { throw LetterError(.noRecipients) }
        let ciphertext = try gnupg.encrypt(body.canonicalBytes(), to: recipients, signer: signer,
                                           hideRecipients: hideRecipients)
        let letter = MIMEMessage(body: try PGPMIME.encrypted(armoredCiphertext: ciphertext))
        for header in message.headers where !bodyHeaders.contains(header.name.lowercased()) && !header.value.isEmpty {
            letter.appendHeader(header.name, header.value)
        }
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
