import Foundation
import MIME
import OpenPGP

/// What decrypting a mail did, or why it did not.
public struct DecryptionReport: Sendable, Equatable, Codable {
    /// True when the message was decrypted.
    public let decrypted: Bool
    /// `pgp-mime` or `inline`; nil when nothing encrypted was found.
    public let kind: Protection.Kind?
    /// True when header fields from inside the encryption (RFC 9788, or
    /// protected-headers="v1") replaced the outer ones.
    public let protectedHeaders: Bool
    /// The signature inside, judged as `mailsec verify` judges (coverage is
    /// that inside the encryption); nil when there is none.
    public let signature: VerificationReport?
    /// Why nothing was decrypted; never message content.
    public let refused: String?
    /// The names of the outer header fields left out because the protected
    /// part lacks them (a `Reply-To` added on the way, say), in order; empty
    /// when nothing was left out or the part carries no protected fields.
    public let droppedOuterFields: [String]
    /// `exchange` when the mail was PGP/MIME mangled by Microsoft Exchange
    /// and read as the `multipart/encrypted` it was; nil otherwise.
    public let repaired: String?

    /// The report for a mail that was not decrypted.
    public static func refusal(_ reason: String) -> DecryptionReport {
        DecryptionReport(decrypted: false, kind: nil, protectedHeaders: false, signature: nil, refused: reason,
                         droppedOuterFields: [], repaired: nil)
    }
}

/// Why a mail is not decrypted.
public struct DecryptionRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// One line naming why; never message content.
    public let description: String
    /// True when there is nothing encrypted at all (bad input rather than an unsafe shape).
    public let notEncrypted: Bool
    /// True for what mailsec does not read (S/MIME).
    public let unsupported: Bool
    init(_ description: String, notEncrypted: Bool = false, unsupported: Bool = false) {
        self.description = description
        self.notEncrypted = notEncrypted
        self.unsupported = unsupported
    }
}

/// Decrypts mail, but only where decrypting is safe: the encrypted part must
/// be the whole body (never spliced into surrounding content: EFAIL's direct
/// exfiltration and reply oracles), never from an attached or quoted mail,
/// and never ciphertext without integrity protection.
public struct MailDecryptor: Sendable {
    /// The GnuPG home whose secret keys decrypt.
    public let gnupg: GnuPG
    /// Limits for parsing the mail and the decrypted part.
    public let options: ParseOptions

    /// A decryptor with `gnupg`'s keys and the parsing limits `options`.
    public init(gnupg: GnuPG, options: ParseOptions = .standard) {
        self.gnupg = gnupg
        self.options = options
    }

    /// Decrypts `raw`. Returns the decrypted message (protected headers
    /// restored) and the report; throws ``DecryptionRefusal`` for unsafe
    /// shapes, ``IntegrityError`` for ciphertext without MDC.
    public func decrypt(_ raw: [UInt8]) throws -> (message: MIMEMessage, report: DecryptionReport) {
        let message = try MIMEMessage.parse(raw, options: options)
        let structure = MailStructure(message)
        guard let protection = structure.encrypted.first(where: { $0.place == .whole }) else {
            if let nested = structure.encrypted.first {
                switch nested.place {
                case .attached:
                    throw DecryptionRefusal("the encrypted part \(nested.partName) is inside an attached message: "
                                            + "save that message and decrypt it on its own")
                case .partial where nested.kind == .inline:
                    throw DecryptionRefusal("part \(nested.partName) has ciphertext with other text around it "
                                            + "(quoted or embedded): it is not decrypted into that text")
                default:
                    throw DecryptionRefusal("the encrypted part \(nested.partName) is not the whole message but one part "
                                            + "among others: it is not decrypted into them (the EFAIL shape)")
                }
            }
            if structure.smime { throw DecryptionRefusal("S/MIME is not supported", unsupported: true) }
            throw DecryptionRefusal("the message is not encrypted", notEncrypted: true)
        }
        let repaired = protection.mangledByExchange ? "exchange" : nil
        switch protection.kind {
        case .pgpMIME:
            guard let ciphertext = protection.ciphertext else {
                throw DecryptionRefusal("the multipart/encrypted part is malformed")
            }
            let decrypted = try gnupg.decrypt(ciphertext)
            let (entity, _) = try MIMEEntity.parse(decrypted.plaintext, options: options)
            return try finish(message, entity: entity, kind: .pgpMIME, signatures: decrypted.info.signatures,
                              plaintext: decrypted.plaintext, repaired: repaired)
        case .inline:
            guard let text = protection.entity.text else { throw DecryptionRefusal("the text part cannot be read") }
            let decrypted = try gnupg.decrypt(Array(text.utf8))
            let entity = MIMEEntity.text(String(decoding: decrypted.plaintext, as: UTF8.self))
            return try finish(message, entity: entity, kind: .inline, signatures: decrypted.info.signatures,
                              plaintext: nil, repaired: nil)
        }
    }

    /// The decrypted message, with the signature judged. Its header section:
    /// when the decrypted part is marked as carrying protected header fields
    /// (`hp="cipher"` or `hp="clear"`, RFC 9788; `protected-headers="v1"`, the
    /// older draft), those fields and no others, outer fields it lacks left
    /// out and named in the report; otherwise the outer fields, any fields of
    /// the decrypted part taking their place.
    func finish(_ outer: MIMEMessage, entity: MIMEEntity, kind: Protection.Kind, signatures: [Signature],
                plaintext: [UInt8]?, repaired: String?) throws -> (message: MIMEMessage, report: DecryptionReport) {
        var body = entity
        var signatureReport: VerificationReport?
        // Signed, then encrypted: a multipart/signed inside.
        if body.contentType.is("multipart", "signed"), let plaintext {
            let children = body.children
            if children.count == 2, let boundary = body.contentType.parameters["boundary"],
               let signed = RawParts.firstPart(in: plaintext, boundary: boundary), let signature = children[1].content {
                let found = try gnupg.verifyDetached(signature: signature, signedData: signed)
                let protection = Protection(kind: .pgpMIME, place: .whole, path: [], entity: body)
                signatureReport = try MailVerifier(gnupg: gnupg).judge(found, protection: protection, message: outer,
                                                                       signedHeaders: children[0])
            }
            body = children.first ?? body
        } else if !signatures.isEmpty {
            let protection = Protection(kind: kind, place: .whole, path: [], entity: body)
            signatureReport = try MailVerifier(gnupg: gnupg).judge(signatures, protection: protection, message: outer,
                                                                   signedHeaders: body)
        }

        // Protected header fields: every field of the decrypted part that does
        // not describe the body (RFC 9788 §4.10; protected-headers="v1").
        func describesBody(_ name: String) -> Bool { name.hasPrefix("content-") || name == "mime-version" }
        let protectedFields = body.headers.filter { header in
            let name = header.name.lowercased()
            return !describesBody(name) && name != "hp-outer"
        }
        let parameters = body.contentType.parameters
        let marked = ["cipher", "clear"].contains(parameters["hp"]?.lowercased() ?? "")
            || parameters["protected-headers"]?.lowercased() == "v1"
        let decrypted = try body.copy()
        for field in Set(protectedFields.map { $0.name.lowercased() }) { decrypted.removeHeader(field) }
        decrypted.removeHeader("HP-Outer")
        let result = MIMEMessage(body: decrypted)
        let replaced = Set(protectedFields.map { $0.name.lowercased() })
        var dropped: [String] = []
        for header in outer.headers {
            let name = header.name.lowercased()
            if describesBody(name) || replaced.contains(name) { continue }
            if marked {
                if !dropped.contains(where: { $0.lowercased() == name }) { dropped.append(header.name) }
            } else {
                result.appendHeader(header.name, header.value)
            }
        }
        for header in protectedFields { result.appendHeader(header.name, header.value) }
        return (result, DecryptionReport(decrypted: true, kind: kind, protectedHeaders: !protectedFields.isEmpty,
                                         signature: signatureReport, refused: nil, droppedOuterFields: dropped,
                                         repaired: repaired))
    }
}
