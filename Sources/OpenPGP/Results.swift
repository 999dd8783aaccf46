internal import CGPGME
internal import CMailsecShims
import Foundation

/// The state of one signature (from `gpgme_signature_t.status`).
public enum SignatureStatus: Sendable, Hashable, CustomStringConvertible {
    /// Mathematically good and made by a key that was valid when it signed.
    case good
    /// The signature does not match the data.
    case bad
    /// The signing key is not in the keyring.
    case noPublicKey
    /// The signature itself has expired.
    case expiredSignature
    /// Good, but the signing key has expired since.
    case expiredKey
    /// Good, but the signing key has been revoked.
    case revokedKey
    /// Another GPGME error code.
    case error(GPGMEError.Code)

    init(_ err: gpgme_error_t) {
        switch mailsec_gpgme_err_code(err) {
        case GPG_ERR_NO_ERROR.rawValue: self = .good
        case GPG_ERR_BAD_SIGNATURE.rawValue: self = .bad
        case GPG_ERR_NO_PUBKEY.rawValue: self = .noPublicKey
        case GPG_ERR_SIG_EXPIRED.rawValue: self = .expiredSignature
        case GPG_ERR_KEY_EXPIRED.rawValue: self = .expiredKey
        case GPG_ERR_CERT_REVOKED.rawValue: self = .revokedKey
        case let code: self = .error(GPGMEError.Code(rawValue: code))
        }
    }

    /// The status in words (`good`, `bad`, `no public key` …).
    public var description: String {
        switch self {
        case .good: "good"
        case .bad: "bad"
        case .noPublicKey: "no public key"
        case .expiredSignature: "signature expired"
        case .expiredKey: "key expired"
        case .revokedKey: "key revoked"
        case .error(let code): "error \(code.rawValue)"
        }
    }
}

/// One verified signature (`gpgme_signature_t`), copied out.
public struct Signature: Sendable, Hashable {
    /// Fingerprint of the signing key, or its key id when the key is unknown.
    public let fingerprint: String
    /// What the check found (from `gpgme_signature_t`'s summary and status).
    public let status: SignatureStatus
    /// When the signature was made.
    public let created: Date?
    /// The validity of the signing key's user IDs.
    public let validity: Validity
    /// The hash algorithm, e.g. `SHA256`.
    public let hashAlgorithm: String

    /// True for a good signature.
    public var isGood: Bool { status == .good }

    init(_ sig: gpgme_signature_t) {
        let s = sig.pointee
        fingerprint = s.fpr.map { String(cString: $0) } ?? ""
        status = SignatureStatus(s.status)
        created = s.timestamp > 0 ? Date(timeIntervalSince1970: TimeInterval(s.timestamp)) : nil
        validity = Validity(s.validity)
        hashAlgorithm = gpgme_hash_algo_name(s.hash_algo).map { String(cString: $0) } ?? ""
    }

    static func list(_ context: Context) -> [Signature] {
        var result: [Signature] = []
        var pointer = gpgme_op_verify_result(context.raw)?.pointee.signatures
        while let sig = pointer {
            result.append(Signature(sig))
            pointer = sig.pointee.next
        }
        return result
    }
}

/// A detached signature and the hash it used.
public struct DetachedSignature: Sendable, Hashable {
    /// The signature, ASCII-armored.
    public let armored: [UInt8]
    /// The hash algorithm as GPGME names it, e.g. `SHA256`.
    public let hashAlgorithm: String

    /// The RFC 3156 `micalg` parameter, e.g. `pgp-sha256`.
    public var micalg: String { "pgp-" + hashAlgorithm.lowercased() }
}

/// What a decryption found out, besides the plaintext.
public struct DecryptionInfo: Sendable, Hashable {
    /// Key ids the message was encrypted to (`0000000000000000` for hidden ones).
    public let recipientKeyIDs: [String]
    /// Signatures found inside the encrypted data, verified in the same pass.
    public let signatures: [Signature]
    /// The file name stored in the literal data packet, if any.
    public let fileName: String?

    init(_ context: Context) {
        var ids: [String] = []
        let result = gpgme_op_decrypt_result(context.raw)?.pointee
        var pointer = result?.recipients
        while let recipient = pointer {
            ids.append(recipient.pointee.keyid.map { String(cString: $0) } ?? "")
            pointer = recipient.pointee.next
        }
        recipientKeyIDs = ids
        fileName = result?.file_name.map { String(cString: $0) }
        signatures = Signature.list(context)
    }
}

/// Decrypted bytes and what the decryption found out.
public struct Decrypted: Sendable {
    /// The plaintext, returned only when its integrity is confirmed.
    public let plaintext: [UInt8]
    /// Recipients, signatures and the file name, from `gpgme_op_decrypt_result` and `gpgme_op_verify_result`.
    public let info: DecryptionInfo
}

/// The outcome of a key import (`gpgme_import_result_t`).
public struct ImportSummary: Sendable, Hashable {
    /// Keys found in the input.
    public let considered: Int
    /// Keys new to the keyring.
    public let imported: Int
    /// Keys already present without change.
    public let unchanged: Int
    /// Secret keys read.
    public let secretRead: Int
    /// Fingerprints of every key the import touched.
    public let fingerprints: [String]
    /// Fingerprints (upper case) of the keys that were new to the keyring or
    /// gained a user ID (`GPGME_IMPORT_NEW`, `GPGME_IMPORT_UID`): what an
    /// import from mail taught the keyring, as opposed to what was there.
    public let gainedUserIDs: Set<String>
}
