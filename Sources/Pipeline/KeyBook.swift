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
