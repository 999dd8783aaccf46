import Foundation

/// Why a key cannot be used to encrypt to an address.
public enum KeyProblem: Sendable, Hashable, CustomStringConvertible {
    /// The key, or every user ID of it for the address, is revoked.
    case revoked
    /// The primary key has expired.
    case expired
    /// The key is disabled in the keyring.
    case disabled
    /// GnuPG marks the key or the user ID as invalid.
    case invalid
    /// No subkey can encrypt now (none is encryption-capable, or every one is
    /// expired, revoked, disabled or invalid).
    case noEncryptionSubkey
    /// The user ID's validity is below the required minimum.
    case validityTooLow(actual: Validity, required: Validity)

    /// The problem in words, as plans and `--json` show it.
    public var description: String {
        switch self {
        case .revoked: "revoked"
        case .expired: "expired"
        case .disabled: "disabled"
        case .invalid: "invalid"
        case .noEncryptionSubkey: "no encryption subkey"
        case .validityTooLow(let actual, let required): "validity \(actual) below required \(required)"
        }
    }

    /// A short, stable name for machines (JSON).
    public var code: String {
        switch self {
        case .revoked: "revoked"
        case .expired: "expired"
        case .disabled: "disabled"
        case .invalid: "invalid"
        case .noEncryptionSubkey: "no-encryption-subkey"
        case .validityTooLow: "validity-too-low"
        }
    }
}

/// The verdict on one candidate key for one address.
public enum KeyVerdict: Sendable, Hashable {
    case usable
    case unusable(KeyProblem)

    /// True for ``usable``.
    public var isUsable: Bool { self == .usable }
}

/// What the look-up requires of a key.
public struct KeyRequirements: Sendable, Hashable {
    /// The least validity a user ID must have; nil accepts any validity.
    public var minimumValidity: Validity?

    /// Requirements with an optional least validity.
    public init(minimumValidity: Validity? = nil) {
        self.minimumValidity = minimumValidity
    }

    /// Accepts keys whatever their validity.
    public static let anyValidity = KeyRequirements()

    /// Judges `key` for `address`: the first problem found, in the order
    /// revoked, expired, disabled, invalid, no encryption subkey, validity.
    public func verdict(for key: Key, address: String) -> KeyVerdict {
        let uids = key.userIDs(matching: address)
        if key.isRevoked || uids.allSatisfy(\.isRevoked) { return .unusable(.revoked) }
        if key.isExpired { return .unusable(.expired) }
        if key.isDisabled { return .unusable(.disabled) }
        let liveUIDs = uids.filter { !$0.isRevoked && !$0.isInvalid }
        if key.isInvalid || liveUIDs.isEmpty { return .unusable(.invalid) }
        if !key.subkeys.contains(where: \.isUsableForEncryption) { return .unusable(.noEncryptionSubkey) }
        if let required = minimumValidity {
            let best = liveUIDs.map(\.validity).max() ?? .unknown
            if best < required { return .unusable(.validityTooLow(actual: best, required: required)) }
        }
        return .usable
    }
}

/// One key that GnuPG listed for an address, with its verdict.
public struct KeyCandidate: Sendable, Hashable {
    /// The key as GnuPG listed it.
    public let key: Key
    /// Usable, or the problem that rules it out.
    public let verdict: KeyVerdict
}

/// The outcome of looking up one address.
public struct KeyLookup: Sendable, Hashable {
    /// The address as asked for.
    public let address: String
    /// Every key with a user ID for exactly this address, each with its verdict.
    public let candidates: [KeyCandidate]
    /// The newest usable candidate (by creation of the primary key), if any.
    public let chosen: Key?

    /// Judges `keys` for `address`. Keys without a user ID for exactly this
    /// address are left out.
    public init(address: String, keys: [Key], requirements: KeyRequirements) {
        self.address = address
        let matching = keys.filter { !$0.userIDs(matching: address).isEmpty }
        candidates = matching.map { KeyCandidate(key: $0, verdict: requirements.verdict(for: $0, address: address)) }
        chosen = candidates
            .filter { $0.verdict.isUsable }
            .map(\.key)
            .max { lhs, rhs in
                let l = lhs.created ?? .distantPast, r = rhs.created ?? .distantPast
                return l != r ? l < r : lhs.fingerprint < rhs.fingerprint
            }
    }

    /// Why no key is usable: empty when a key was chosen; `[]` with no
    /// candidates means GnuPG has no key for the address at all.
    public var problems: [KeyProblem] {
        guard chosen == nil else { return [] }
        return candidates.compactMap {
            if case .unusable(let problem) = $0.verdict { return problem }
            return nil
        }
    }
}

/// An address that cannot be a key-listing pattern.
public struct InvalidAddressError: Error, Sendable, CustomStringConvertible {
    /// The address as given.
    public let address: String
    /// One line naming the address.
    public var description: String { "not a mail address: \(address)" }
}

extension KeyLookup {
    /// Checks that `address` is a plain `local@domain` address that GnuPG can
    /// match exactly: no spaces, angle brackets or control characters.
    static func validate(_ address: String) throws(InvalidAddressError) {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        let forbidden = address.unicodeScalars.contains {
            $0.value < 0x21 || $0.value == 0x7F || $0 == "<" || $0 == ">" || $0 == ","
        }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, !forbidden else {
            throw InvalidAddressError(address: address)
        }
    }
}
