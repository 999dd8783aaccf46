internal import CGPGME
internal import CMailsecShims
import Foundation

/// Keeps one `gpgme_key_t` alive so that a listed key can be handed to
/// encrypt and sign without a second look-up.
///
/// `@unchecked Sendable`: GPGME never changes a key object after the listing
/// returns it, and `gpgme_key_ref`/`gpgme_key_unref` take GPGME's own lock, so
/// several threads may hold and read the same key.
final class KeyHandle: @unchecked Sendable {
    let raw: gpgme_key_t

    /// Takes over the reference that `gpgme_op_keylist_next` handed us.
    init(taking raw: gpgme_key_t) { self.raw = raw }

    deinit { gpgme_key_unref(raw) }
}

/// How far GnuPG's trust model believes that a user ID belongs to its key
/// (`gpgme_validity_t`). Ordered from least to most trusted.
public enum Validity: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible, Codable {
    /// `GPGME_VALIDITY_NEVER`: explicitly distrusted.
    case never
    /// `GPGME_VALIDITY_UNKNOWN` or `GPGME_VALIDITY_UNDEFINED`.
    case unknown
    /// `GPGME_VALIDITY_MARGINAL`
    case marginal
    /// `GPGME_VALIDITY_FULL`
    case full
    /// `GPGME_VALIDITY_ULTIMATE`
    case ultimate

    init(_ value: gpgme_validity_t) {
        switch value {
        case GPGME_VALIDITY_NEVER: self = .never
        case GPGME_VALIDITY_MARGINAL: self = .marginal
        case GPGME_VALIDITY_FULL: self = .full
        case GPGME_VALIDITY_ULTIMATE: self = .ultimate
        default: self = .unknown
        }
    }

    /// Ordered from never to ultimate.
    public static func < (lhs: Validity, rhs: Validity) -> Bool { lhs.rawValue < rhs.rawValue }

    /// GnuPG's name for the level.
    public var description: String {
        switch self {
        case .never: "never"
        case .unknown: "unknown"
        case .marginal: "marginal"
        case .full: "full"
        case .ultimate: "ultimate"
        }
    }
}

/// A user ID of a key (`gpgme_user_id_t`), copied out as a value.
public struct UserID: Sendable, Hashable {
    /// The whole user ID as stored, e.g. `Alice <alice@example.org>`.
    public let uid: String
    /// The name part, possibly empty.
    public let name: String
    /// The mail address as GPGME normalised it (`address`), or the `email` field.
    public let address: String
    /// The validity GnuPG computed for this user ID.
    public let validity: Validity
    /// The user ID was revoked.
    public let isRevoked: Bool
    /// The user ID is invalid (for example, a bad self-signature).
    public let isInvalid: Bool
    /// The signatures on this user ID, as gpg checked them; empty unless the
    /// listing asked for them (``GnuPG/lookup(_:requirements:fingerprints:)`` does).
    public let certifications: [Certification]
}

/// A signature on a user ID (`gpgme_key_sig_t`), as a listing with
/// `GPGME_KEYLIST_MODE_SIGS` (gpg's `--check-sigs`) checked it.
public struct Certification: Sendable, Hashable {
    /// The signing key's 64-bit key ID (upper-case hex, `keyid`).
    public let issuer: String
    /// gpg verified the signature (`status` is no error): the issuer's key is
    /// in the keyring and the signature is good.
    public let isGood: Bool
    /// A revocation of an earlier certification (`revoked`).
    public let isRevocation: Bool
    /// The signature has expired (`expired`).
    public let isExpired: Bool
    /// `invalid`
    public let isInvalid: Bool
    /// The OpenPGP signature class (`sig_class`): 0x10–0x13 certify.
    public let signatureClass: UInt32
    /// When it was made, if known.
    public let created: Date?
}

/// A subkey (`gpgme_subkey_t`), copied out as a value.
public struct Subkey: Sendable, Hashable {
    /// The subkey's fingerprint (upper-case hex).
    public let fingerprint: String
    /// The algorithm as GnuPG spells it, e.g. `ed25519`, `cv25519`, `rsa3072`.
    public let algorithm: String
    /// When the subkey was created, if known.
    public let created: Date?
    /// When the subkey expires; nil if it does not.
    public let expires: Date?
    /// The subkey may encrypt (`gpgme_subkey_t.can_encrypt`).
    public let canEncrypt: Bool
    /// The subkey may sign (`gpgme_subkey_t.can_sign`).
    public let canSign: Bool
    /// `gpgme_subkey_t.revoked`
    public let isRevoked: Bool
    /// `gpgme_subkey_t.expired`
    public let isExpired: Bool
    /// `gpgme_subkey_t.disabled`
    public let isDisabled: Bool
    /// `gpgme_subkey_t.invalid`
    public let isInvalid: Bool

    /// Usable for encryption now: encryption-capable and not revoked, expired,
    /// disabled or invalid.
    public var isUsableForEncryption: Bool {
        canEncrypt && !isRevoked && !isExpired && !isDisabled && !isInvalid
    }

    /// Usable for signing now.
    public var isUsableForSigning: Bool {
        canSign && !isRevoked && !isExpired && !isDisabled && !isInvalid
    }
}

/// An OpenPGP key as listed by GnuPG (`gpgme_key_t`), copied out into a value.
///
/// The key also keeps GPGME's key object, so encrypting or signing with it
/// needs no further look-up. Two keys are equal when their fingerprints are.
public struct Key: Sendable, Hashable, CustomStringConvertible {
    /// The primary key's fingerprint (upper-case hex).
    public let fingerprint: String
    /// The user IDs, in the key's order (`gpgme_key_t.uids`).
    public let userIDs: [UserID]
    /// The subkeys; the first is the primary key.
    public let subkeys: [Subkey]
    /// `gpgme_key_t.revoked`
    public let isRevoked: Bool
    /// `gpgme_key_t.expired`
    public let isExpired: Bool
    /// `gpgme_key_t.disabled`
    public let isDisabled: Bool
    /// `gpgme_key_t.invalid`
    public let isInvalid: Bool
    /// GnuPG holds the secret part of this key.
    public let hasSecret: Bool

    let handle: KeyHandle

    init(taking raw: gpgme_key_t) {
        handle = KeyHandle(taking: raw)
        let key = raw.pointee
        fingerprint = key.fpr.map { String(cString: $0) } ?? ""
        isRevoked = key.revoked != 0
        isExpired = key.expired != 0
        isDisabled = key.disabled != 0
        isInvalid = key.invalid != 0
        hasSecret = key.secret != 0
        var uids: [UserID] = []
        var uidPointer = key.uids
        while let uid = uidPointer {
            let u = uid.pointee
            let email = (u.address ?? u.email).map { String(cString: $0) } ?? ""
            uids.append(UserID(
                uid: u.uid.map { String(cString: $0) } ?? "",
                name: u.name.map { String(cString: $0) } ?? "",
                address: email,
                validity: Validity(u.validity),
                isRevoked: u.revoked != 0,
                isInvalid: u.invalid != 0,
                certifications: Self.certifications(u.signatures)))
            uidPointer = u.next
        }
        userIDs = uids
        var subs: [Subkey] = []
        var subPointer = key.subkeys
        while let sub = subPointer {
            let s = sub.pointee
            var algorithm = ""
            if let name = gpgme_pubkey_algo_string(sub) {
                algorithm = String(cString: name)
                gpgme_free(name)
            }
            subs.append(Subkey(
                fingerprint: s.fpr.map { String(cString: $0) } ?? "",
                algorithm: algorithm,
                created: s.timestamp > 0 ? Date(timeIntervalSince1970: TimeInterval(s.timestamp)) : nil,
                expires: s.expires > 0 ? Date(timeIntervalSince1970: TimeInterval(s.expires)) : nil,
                canEncrypt: s.can_encrypt != 0,
                canSign: s.can_sign != 0,
                isRevoked: s.revoked != 0,
                isExpired: s.expired != 0,
                isDisabled: s.disabled != 0,
                isInvalid: s.invalid != 0))
            subPointer = s.next
        }
        subkeys = subs
    }

    static func certifications(_ first: gpgme_key_sig_t?) -> [Certification] {
        var found: [Certification] = []
        var pointer = first
        while let sig = pointer {
            let s = sig.pointee
            found.append(Certification(
                issuer: s.keyid.map { String(cString: $0).uppercased() } ?? "",
                isGood: mailsec_gpgme_err_code(s.status) == 0,
                isRevocation: s.revoked != 0,
                isExpired: s.expired != 0,
                isInvalid: s.invalid != 0,
                signatureClass: s.sig_class,
                created: s.timestamp > 0 ? Date(timeIntervalSince1970: TimeInterval(s.timestamp)) : nil))
            pointer = s.next
        }
        return found
    }

    /// When the primary key was created.
    public var created: Date? { subkeys.first?.created }

    /// The 64-bit key ID of a fingerprint: the last 16 digits of a v4
    /// fingerprint, the first 16 of a v5 or v6 one.
    public static func keyID(of fingerprint: String) -> String {
        let upper = fingerprint.uppercased()
        return String(upper.count == 64 ? upper.prefix(16) : upper.suffix(16))
    }

    /// True when a live user ID of this key for `address` carries a good,
    /// unexpired certification (class 0x10–0x13) by the key `fingerprint`
    /// that the same key has not revoked since: how a rotation shows that the
    /// old key vouches for the new one. Needs a listing with signatures.
    public func isCertified(by fingerprint: String, for address: String) -> Bool {
        let issuer = Self.keyID(of: fingerprint)
        guard issuer != Self.keyID(of: self.fingerprint) else { return false }
        return userIDs(matching: address).contains { uid in
            guard !uid.isRevoked, !uid.isInvalid else { return false }
            let byIssuer = uid.certifications.filter { $0.issuer == issuer && $0.isGood && !$0.isInvalid }
            let revoked = byIssuer.filter { $0.isRevocation || $0.signatureClass == 0x30 }.compactMap(\.created).max()
            return byIssuer.contains { sig in
                (0x10...0x13).contains(sig.signatureClass) && !sig.isRevocation && !sig.isExpired
                    && (revoked == nil || (sig.created ?? .distantPast) > revoked!)
            }
        }
    }

    /// When the primary key expires; nil if it does not.
    public var expires: Date? { subkeys.first?.expires }

    /// The user IDs whose address is `address`, compared case-insensitively and
    /// exactly: `alice@example.org` does not match `malice@example.org`.
    public func userIDs(matching address: String) -> [UserID] {
        let wanted = address.lowercased()
        return userIDs.filter { $0.address.lowercased() == wanted }
    }

    /// Keys are equal when their fingerprints are.
    public static func == (lhs: Key, rhs: Key) -> Bool { lhs.fingerprint == rhs.fingerprint }
    /// Hashes the fingerprint.
    public func hash(into hasher: inout Hasher) { hasher.combine(fingerprint) }

    /// The fingerprint.
    public var description: String { fingerprint }
}
