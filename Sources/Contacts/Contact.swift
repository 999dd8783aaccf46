import Foundation

/// Whether an address can get a letter, as the last key listing found it.
public enum ContactKeyStatus: Sendable, Hashable {
    /// A usable key: the one a letter would be encrypted to.
    case usable(fingerprint: String)
    /// GnuPG has no key with a user ID for the address.
    case missing
    /// Keys exist but none is usable; `reason` says why (revoked, expired …).
    case unusable(reason: String)
    /// Not looked up yet (no listing since the address was first noted).
    case unknown

    /// True when a letter can be made.
    public var canGetLetter: Bool { if case .usable = self { true } else { false } }

    /// `usable`, `missing`, `unusable` or `unknown`.
    public var code: String {
        switch self {
        case .usable: "usable"
        case .missing: "missing"
        case .unusable: "unusable"
        case .unknown: "unknown"
        }
    }
}

/// One address in the contacts, with what is known of it.
public struct Contact: Sendable, Hashable {
    /// The address, lower case.
    public let address: String
    /// The name to show (the one the user wrote to it with, else a key's
    /// user ID, else one seen in received mail); nil when none is known.
    public let name: String?
    /// The name the user wrote to this address with; the only name that
    /// joins two addresses as one person (names in received mail are the
    /// sender's claim).
    public let sentName: String?
    /// Mails sent to it (queued in the outbox).
    public let sentCount: Int
    /// Learned mails it appeared in (From, To or Cc).
    public let seenCount: Int
    /// When a mail was last sent to it.
    public let lastSent: Date?
    /// The newest learned mail it appeared in (by the mail's Date, never later than when it was learned).
    public let lastSeen: Date?
    /// The key status of the last key listing.
    public let key: ContactKeyStatus
    /// Every key with a user ID for the address, usable or not.
    public let keyFingerprints: [String]
    /// Frecency (see ``Frecency``) at `scoreAt`.
    let score: Double
    let scoreAt: Double

    /// When it was last used: sent to or seen, whichever is later.
    public var lastUsed: Date? {
        switch (lastSent, lastSeen) {
        case let (sent?, seen?): max(sent, seen)
        case let (sent?, nil): sent
        case let (nil, seen?): seen
        default: nil
        }
    }

    /// Frecency at `now`.
    public func frecency(at now: Date) -> Double { Frecency.decayed(score, from: scoreAt, to: now.timeIntervalSince1970) }

    /// `Name <address>`, or the address alone.
    public var mailbox: String {
        guard let name, !name.isEmpty else { return address }
        let plain = name.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == " " || $0 == "-" || $0 == "." }
        let shown = plain ? name : "\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        return "\(shown) <\(address)>"
    }
}

/// The contacts could not be read or written. Never carries mail content.
public struct ContactsError: Error, Sendable, CustomStringConvertible {
    /// One line naming the problem, without mail content.
    public let description: String

    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
