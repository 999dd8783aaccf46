import Foundation
import MIME
import Platform
import Policy

/// The continuity record cannot be read or written. Temporary (75): a
/// recipient's history is never guessed.
public struct KeyContinuityError: Error, Sendable, CustomStringConvertible {
    /// One line naming the record's folder and the reason.
    public let description: String

    package init(description: String) { self.description = description }
}

/// Recipients whose remembered key is gone (or lapsed, when the rule defers):
/// the mail waits. The filter defers it (75), the CLI exits 75.
public struct KeyLossError: Error, Sendable, CustomStringConvertible {
    /// The recipients and, for each, why.
    public let losses: [(address: String, reason: String)]

    /// One line naming each recipient and their vanished key.
    public var description: String {
        "held for key continuity: " + losses.map { "\($0.address): \($0.reason)" }.joined(separator: "; ")
            + " (restore the key, or clear the record on purpose with 'mailsec keys forget ADDRESS')"
    }
}

/// Recipients whose key differs from the one they last got a letter with,
/// and the change is not accepted: the command line refuses the mail (69)
/// until the person accepts the key (`mailsec keys accept`); the filter
/// defers it (75) unless its `on_key_change` rule takes the key.
public struct KeyChangeError: Error, Sendable, CustomStringConvertible {
    /// The held changes.
    public let changes: [KeyChange]

    /// An error for `changes`.
    package init(changes: [KeyChange]) { self.changes = changes }

    /// One line naming each recipient and both keys.
    public var description: String {
        "key changed for " + changes.map { "\($0.address): \($0.previous) -> \($0.current) (\($0.origin))" }.joined(separator: "; ")
            + " (check the new key with the person, then 'mailsec keys accept ADDRESS FINGERPRINT')"
    }
}

/// Where a recipient's key came from.
public enum KeyOrigin: String, Sendable, Hashable, Codable {
    /// In the keyring, put there by the person (or certified by them).
    case imported
    /// Learned from a sender's Autocrypt header.
    case autocrypt
    /// Learned from an Autocrypt-Gossip header.
    case gossip
}

/// A key learned from mail for one address (Autocrypt's peer state): kept
/// apart from the keys the person imported, which it never outranks.
public struct LearnedKey: Sendable, Hashable {
    /// The key's fingerprint (upper case).
    public let fingerprint: String
    /// `autocrypt` when an Autocrypt header carried it, else `gossip`.
    public let origin: KeyOrigin
    /// When mailsec first learned it.
    public let learned: Date
    /// The latest date of a mail that carried it (Autocrypt: `autocrypt_timestamp`).
    public let lastSeen: Date

    /// A learned key.
    public init(fingerprint: String, origin: KeyOrigin, learned: Date, lastSeen: Date) {
        self.fingerprint = fingerprint.uppercased()
        self.origin = origin
        self.learned = learned
        self.lastSeen = lastSeen
    }
}

/// Where key continuity is kept: the key each recipient last got a letter
/// with. The filter keeps it in a folder (``KeyContinuity``); the CLI in the
/// user's store (target Contacts). The pipeline only asks ``remembered(_:)``;
/// whoever hands letters on calls ``record(_:fingerprint:)``.
public protocol KeyContinuityStore: Sendable {
    /// The remembered fingerprints of `addresses` that have a record, by
    /// lower-case address. A record that cannot be read throws.
    func remembered(_ addresses: [String]) throws(KeyContinuityError) -> [String: String]
    /// Remembers that `address` got a letter to `fingerprint`.
    func record(_ address: String, fingerprint: String) throws(KeyContinuityError)
    /// Forgets `address` on purpose; true when there was a record.
    func forget(_ address: String) throws(KeyContinuityError) -> Bool
    /// The keys learned from mail for `addresses`, by lower-case address, the
    /// current one first (an Autocrypt header's newest, then gossip's newest).
    /// Every other key of the keyring counts as the person's own.
    func learned(_ addresses: [String]) throws(KeyContinuityError) -> [String: [LearnedKey]]
}

extension KeyContinuityStore {
    /// No keys learned from mail (the filter's keyring holds what its
    /// administrator imported).
    public func learned(_ addresses: [String]) throws(KeyContinuityError) -> [String: [LearnedKey]] { [:] }
}

/// Key continuity for the filter: one small file per recipient in a private folder (0700; files 0600, written whole
/// through a rename). The file is named by a hash of the lower-case address
/// and holds `ADDRESS FINGERPRINT`, so a later contacts store can list it.
public struct KeyContinuity: KeyContinuityStore {
    /// The folder holding one record per recipient.
    public let directory: String

    /// Records in `directory` (made 0700 on the first write).
    public init(directory: String) {
        self.directory = directory
    }

    private func path(_ address: String) -> String {
        directory + "/" + Digest.sha256Hex(Array(address.lowercased().utf8)) + ".key"
    }

    /// The remembered fingerprints of `addresses` that have a record, by
    /// lower-case address. A record that cannot be read throws.
    public func remembered(_ addresses: [String]) throws(KeyContinuityError) -> [String: String] {
        var found: [String: String] = [:]
        for address in addresses {
            if let fingerprint = try fingerprint(of: address) { found[address.lowercased()] = fingerprint }
        }
        return found
    }

    /// The fingerprint remembered for `address`, nil without a record.
    public func fingerprint(of address: String) throws(KeyContinuityError) -> String? {
        let file = path(address)
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT && (access(directory, X_OK) == 0 || errno == ENOENT) { return nil }
            throw KeyContinuityError(description: "cannot read the key continuity record in \(directory) (\(String(cString: strerror(errno))))")
        }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(fd, &buffer, buffer.count)
        let fields = count > 0 ? String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ") : []
        guard fields.count == 2, fields[0].lowercased() == address.lowercased(),
              let fingerprint = fields.last?.trimmingCharacters(in: .newlines),
              (fingerprint.count == 40 || fingerprint.count == 64), fingerprint.allSatisfy(\.isHexDigit) else {
            throw KeyContinuityError(description: "the key continuity record of a recipient in \(directory) is damaged")
        }
        return fingerprint.uppercased()
    }

    /// Remembers that `address` got a letter to `fingerprint` (synced).
    public func record(_ address: String, fingerprint: String) throws(KeyContinuityError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw KeyContinuityError(description: "cannot make the key continuity folder \(directory)")
        }
        if (try? self.fingerprint(of: address)) == fingerprint.uppercased() { return }
        // Unique per writer (DurableFile's temporary name): a resident filter may record one address from two threads at once.
        let bytes = Array("\(address.lowercased()) \(fingerprint.uppercased())\n".utf8)
        do throws(DurableFile.Failure) { try DurableFile.replace(path(address), with: bytes) } catch {
            throw KeyContinuityError(description: "cannot write the key continuity record in \(directory)")
        }
    }

    /// Forgets `address` on purpose; true when there was a record.
    public func forget(_ address: String) throws(KeyContinuityError) -> Bool {
        if unlink(path(address)) == 0 { return true }
        if errno == ENOENT { return false }
        throw KeyContinuityError(description: "cannot remove the key continuity record in \(directory)")
    }
}
