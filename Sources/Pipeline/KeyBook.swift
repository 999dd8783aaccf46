import Foundation
import OpenPGP
import Policy

/// Keys looked up before, by address (and by fingerprint for a signer named
/// so): what lets a caller plan a mail again and again while it changes (a
/// compose session) with one key listing per batch of new addresses rather
/// than one per change or per recipient.
public struct KeyBook: Sendable {
    /// What one look-up asks for.
    public struct Wanted: Sendable, Hashable {
        /// Addresses to find keys for.
        public var addresses: [String]
        /// Keys to find by fingerprint (a `sign_as` key, remembered keys).
        public var fingerprints: [String]

        /// A request for `addresses` and `fingerprints`.
        public init(addresses: [String] = [], fingerprints: [String] = []) {
            self.addresses = addresses
            self.fingerprints = fingerprints
        }

        /// True when nothing is asked for.
        public var isEmpty: Bool { addresses.isEmpty && fingerprints.isEmpty }
    }

    private var lookups: [String: KeyLookup] = [:]
    private var byFingerprint: [String: [Key]] = [:]

    /// An empty book.
    public init() {}

    /// The look-up of `address` (case-insensitive), if it was looked up.
    public func lookup(_ address: String) -> KeyLookup? { lookups[address.lowercased()] }

    /// What the look-up found for `address`, as the plan takes it: nil when
    /// it was not looked up.
    public func availability(_ address: String) -> KeyAvailability? {
        guard let lookup = lookup(address) else { return nil }
        if let key = lookup.chosen { return .usable(fingerprint: key.fingerprint, source: "keyring") }
        if lookup.candidates.isEmpty { return .missing }
        return .unusable(lookup.candidates.compactMap {
            guard case .unusable(let problem) = $0.verdict else { return nil }
            return KeyRefusal(fingerprint: $0.key.fingerprint, reason: problem.code, detail: problem.description)
        })
    }

    /// The key a letter to `address` goes to, and where it came from: the
    /// newest usable key the person imported or certified (a key not in
    /// `learned`, or one whose user ID for the address is of full validity or
    /// more); only where there is none, the current learned key (the first of
    /// `learned`), when usable. Older learned keys are never chosen.
    public func choice(_ address: String, learned: [LearnedKey] = []) -> (key: Key, origin: KeyOrigin, since: Date?)? {
        lookup(address).flatMap { Self.choice(in: $0, learned: learned) }
    }

    /// ``choice(_:learned:)`` for one look-up.
    public static func choice(in lookup: KeyLookup, learned: [LearnedKey]) -> (key: Key, origin: KeyOrigin, since: Date?)? {
        let address = lookup.address
        let fromMail = Set(learned.map(\.fingerprint))
        let usable = lookup.candidates.filter { $0.verdict.isUsable }.map(\.key)
        let own = usable.filter { key in
            !fromMail.contains(key.fingerprint) || key.userIDs(matching: address).contains { $0.validity >= .full }
        }
        if let key = own.max(by: { lhs, rhs in
            let l = lhs.created ?? .distantPast, r = rhs.created ?? .distantPast
            return l != r ? l < r : lhs.fingerprint < rhs.fingerprint
        }) {
            return (key, .imported, key.created)
        }
        if let current = learned.first, let key = usable.first(where: { $0.fingerprint == current.fingerprint }) {
            return (key, current.origin, current.learned)
        }
        return nil
    }

    /// ``availability(_:)`` with the keys learned from mail kept apart
    /// (``choice(_:learned:)``): a learned key that is not the current one is
    /// refused as `superseded`.
    public func availability(_ address: String, learned: [LearnedKey]) -> KeyAvailability? {
        guard let lookup = lookup(address) else { return nil }
        if let choice = choice(address, learned: learned) {
            return .usable(fingerprint: choice.key.fingerprint, source: choice.origin == .imported ? "keyring" : choice.origin.rawValue)
        }
        if lookup.candidates.isEmpty { return .missing }
        return .unusable(lookup.candidates.map {
            guard case .unusable(let problem) = $0.verdict else {
                return KeyRefusal(fingerprint: $0.key.fingerprint, reason: "superseded",
                                  detail: "learned from mail and replaced by a newer learned key")
            }
            return KeyRefusal(fingerprint: $0.key.fingerprint, reason: problem.code, detail: problem.description)
        })
    }

    /// The keys listed for `fingerprint`, if it was looked up.
    public func listed(_ fingerprint: String) -> [Key] { byFingerprint[fingerprint.uppercased()] ?? [] }

    /// What of `wanted` this book does not hold yet.
    public func missing(from wanted: Wanted) -> Wanted {
        var seen = Set<String>()
        return Wanted(addresses: wanted.addresses.filter { lookups[$0.lowercased()] == nil && seen.insert($0.lowercased()).inserted },
                      fingerprints: wanted.fingerprints.filter { byFingerprint[$0.uppercased()] == nil })
    }

    /// Takes in another book's entries (newer ones win).
    public mutating func merge(_ other: KeyBook) {
        lookups.merge(other.lookups) { _, new in new }
        byFingerprint.merge(other.byFingerprint) { _, new in new }
    }

    mutating func add(_ found: [KeyLookup], listed: [Key], fingerprints: [String]) {
        for lookup in found { lookups[lookup.address.lowercased()] = lookup }
        for fingerprint in fingerprints {
            let wanted = fingerprint.uppercased()
            byFingerprint[wanted] = listed.filter { key in
                key.fingerprint == wanted || key.subkeys.contains { $0.fingerprint == wanted }
            }
        }
    }
}
