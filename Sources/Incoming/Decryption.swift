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

    /// The report for a mail that was not decrypted.
    public static func refusal(_ reason: String) -> DecryptionReport {
        DecryptionReport(decrypted: false, kind: nil, protectedHeaders: false, signature: nil, refused: reason)
    }
}

/// Why a mail is not decrypted.
public struct DecryptionRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    /// True when there is nothing encrypted at all (bad input rather than an unsafe shape).
    public let notEncrypted: Bool
    init(_ description: String, notEncrypted: Bool = false) {
        self.description = description
        self.notEncrypted = notEncrypted
    }
}

/// Decrypts mail, but only where decrypting is safe: the encrypted part must
/// be the whole body (never spliced into surrounding content: EFAIL's direct
/// exfiltration and reply oracles), never from an attached or quoted mail,
/// and never ciphertext without integrity protection.
public struct MailDecryptor: Sendable {
    public let gnupg: GnuPG
    public let options: ParseOptions

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
            throw DecryptionRefusal("the message is not encrypted", notEncrypted: true)
        }
        switch protection.kind {
        case .pgpMIME:
            guard let ciphertext = PGPMIME.ciphertext(of: protection.entity) else {
                throw DecryptionRefusal("the multipart/encrypted part is malformed")
            }
            let decrypted = try gnupg.decrypt(ciphertext)
            let (entity, _) = try MIMEEntity.parse(decrypted.plaintext, options: options)
            return try finish(message, entity: entity, kind: .pgpMIME, signatures: decrypted.info.signatures,
                              plaintext: decrypted.plaintext)
        case .inline:
            guard let text = protection.entity.text else { throw DecryptionRefusal("the text part cannot be read") }
            let decrypted = try gnupg.decrypt(Array(text.utf8))
            let entity = MIMEEntity.text(String(decoding: decrypted.plaintext, as: UTF8.self))
            return try finish(message, entity: entity, kind: .inline, signatures: decrypted.info.signatures,
                              plaintext: nil)
        }
    }

    /// The decrypted message: the outer header fields, those protected inside
    /// taking their place, and the decrypted body; with the signature judged.
    func finish(_ outer: MIMEMessage, entity: MIMEEntity, kind: Protection.Kind, signatures: [Signature],
                plaintext: [UInt8]?) throws -> (message: MIMEMessage, report: DecryptionReport) {
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
        let protectedFields = body.headers.filter { header in
            let name = header.name.lowercased()
            return !name.hasPrefix("content-") && name != "mime-version" && name != "hp-outer"
        }
        let decrypted = try body.copy()
        for field in Set(protectedFields.map { $0.name.lowercased() }) { decrypted.removeHeader(field) }
        for field in decrypted.headers where field.name.lowercased() == "hp-outer" { decrypted.removeHeader(field.name) }
        let result = MIMEMessage(body: decrypted)
        let replaced = Set(protectedFields.map { $0.name.lowercased() })
        for header in outer.headers {
            let name = header.name.lowercased()
            if name.hasPrefix("content-") || name == "mime-version" || replaced.contains(name) { continue }
            result.appendHeader(header.name, header.value)
        }
        for header in protectedFields { result.appendHeader(header.name, header.value) }
        return (result, DecryptionReport(decrypted: true, kind: kind, protectedHeaders: !protectedFields.isEmpty,
                                         signature: signatureReport, refused: nil))
    }
}
