import Foundation
import GRDB
import Incoming
import MIME
import OpenPGP
import Pipeline
import Store

/// The contacts in the user's store: every address written to (noted when a
/// mail is queued in the outbox), every user ID of the keyring with a usable
/// encryption key, and the addresses of learned mail (``learn(_:at:gnupg:decrypting:)``).
/// Each with its names, counts, last use, frecency and key status; and key
/// continuity for the CLI (``continuity``).
///
/// ```swift
/// let book = ContactBook(store: try LocalStore())
/// try book.refreshKeys(gnupg: GnuPG())          // one key listing
/// let offers = try book.suggest(prefix: "ali", excluding: ["bob@example.org"])
/// ```
public final class ContactBook: Sendable {
    /// The store the contacts are kept in.
    public let store: LocalStore

    /// The contacts kept in `store`.
    public init(store: LocalStore) { self.store = store }

    /// Key continuity kept in this store (the CLI's; the filter keeps its own folder).
    public var continuity: StoreContinuity { StoreContinuity(store: store) }

    // MARK: Reading

    /// Every contact, most frecent first (ties: latest use, then address).
    public func contacts(now: Date = Date()) throws(ContactsError) -> [Contact] {
        let all = try read { db in try Row.fetchAll(db, sql: "SELECT * FROM contact").map(Self.contact) }
        return all.sorted { Self.ranks($0, before: $1, now: now) }
    }

    /// The contact for `address`, if there is one.
    public func contact(_ address: String) throws(ContactsError) -> Contact? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM contact WHERE address = ?", arguments: [address.lowercased()]).map(Self.contact)
        }
    }

    static func ranks(_ a: Contact, before b: Contact, now: Date) -> Bool {
        let (x, y) = (a.frecency(at: now), b.frecency(at: now))
        if x != y { return x > y }
        let (u, v) = (a.lastUsed ?? .distantPast, b.lastUsed ?? .distantPast)
        return u != v ? u > v : a.address < b.address
    }

    static func contact(_ row: Row) -> Contact {
        let state: String = row["keyState"]
        let key: ContactKeyStatus = switch state {
        case "usable": .usable(fingerprint: row["fingerprint"] ?? "")
        case "missing": .missing
        case "unusable": .unusable(reason: row["keyReason"] ?? "")
        default: .unknown
        }
        let fingerprints: String = row["keyFingerprints"] ?? ""
        return Contact(address: row["address"], name: row["name"], sentName: row["sentName"], sentCount: row["sentCount"],
                       seenCount: row["seenCount"], lastSent: (row["lastSent"] as Double?).map(Date.init(timeIntervalSince1970:)),
                       lastSeen: (row["lastSeen"] as Double?).map(Date.init(timeIntervalSince1970:)), key: key,
                       keyFingerprints: fingerprints.split(separator: " ").map(String.init),
                       score: row["score"], scoreAt: row["scoreAt"])
    }

    // MARK: Sent mail

    /// Notes a mail queued in the outbox: each recipient's sent count, last
    /// use, frecency and the name it was written with; and for each letter
    /// recipient the key it got (key continuity). In one transaction.
    public func noteSent(_ note: SentNote, at time: Date = Date()) throws(ContactsError) {
        try write { db in try Self.noteSent(note, at: time, in: db) }
    }

    /// ``noteSent(_:at:)`` inside a transaction of the caller (the outbox's
    /// enqueue: the mail, its contacts and its continuity records are stored together or not at all).
    package static func noteSent(_ note: SentNote, at time: Date, in db: Database) throws {
        let t = time.timeIntervalSince1970
        for recipient in note.recipients {
            try noteUse(db, address: recipient.address, name: recipient.name, source: "sent", weight: Frecency.sentWeight, at: t)
            try db.execute(sql: """
                UPDATE contact SET sentCount = sentCount + 1, lastSent = max(coalesce(lastSent, 0), ?) WHERE address = ?
                """, arguments: [t, recipient.address])
        }
        for (address, fingerprint) in note.letterKeys {
            try StoreContinuity.record(address, fingerprint: fingerprint, at: t, in: db)
        }
    }

    /// Makes sure a row exists for `address` and adds a use to its frecency;
    /// a name is kept when it is fit to show and no better source named it.
    static func noteUse(_ db: Database, address: String, name: String?, source: String, weight: Double, at t: Double) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO contact (address) VALUES (?)").execute(arguments: [address])
        let row = try Row.fetchOne(try db.cachedStatement(sql: "SELECT score, scoreAt, nameSource FROM contact WHERE address = ?"),
                                   arguments: [address])!
        let (score, at) = weight > 0 ? Frecency.adding(weight, at: t, to: row["score"], keptAt: row["scoreAt"])
                                     : (row["score"] as Double, row["scoreAt"] as Double)
        try db.cachedStatement(sql: "UPDATE contact SET score = ?, scoreAt = ? WHERE address = ?").execute(arguments: [score, at, address])
        guard let name, !name.isEmpty else { return }
        let rank = ["seen": 1, "keyring": 2, "sent": 3]
        let current: String? = row["nameSource"]
        if (rank[source] ?? 0) >= (current.flatMap { rank[$0] } ?? 0) {
            try db.cachedStatement(sql: "UPDATE contact SET name = ?, nameSource = ? WHERE address = ?")
                .execute(arguments: [name, source, address])
        }
        if source == "sent" {
            try db.execute(sql: "UPDATE contact SET sentName = ? WHERE address = ?", arguments: [name, address])
        }
    }

    // MARK: Keys

    /// What a key refresh found.
    public struct KeyRefresh: Sendable, Hashable {
        /// Contacts whose address has a usable key now.
        public var usable = 0
        /// Contacts added from the keyring's user IDs.
        public var addedFromKeyring = 0
    }

    /// Lists the keyring **once** and from that listing: adds every user ID
    /// with a usable encryption key (by `requirements`) as a contact, and
    /// sets every contact's key status (the chosen fingerprint, or why no
    /// key is usable). No gpg process per address.
    @discardableResult
    public func refreshKeys(gnupg: GnuPG, requirements: KeyRequirements = .anyValidity) throws -> KeyRefresh {
        let keys = try gnupg.allKeys()
        var byAddress: [String: [Key]] = [:]
        var names: [String: String] = [:]
        for key in keys {
            for uid in key.userIDs where GnuPG.isLookupAddress(uid.address) {
                let address = uid.address.lowercased()
                if !(byAddress[address]?.contains(key) ?? false) { byAddress[address, default: []].append(key) }
                if !uid.isRevoked && !uid.isInvalid, let name = DisplayNames.keepable(uid.name, for: address) { names[address] = name }
            }
        }
        var judged: [String: KeyLookup] = [:]
        for (address, found) in byAddress { judged[address] = KeyLookup(address: address, keys: found, requirements: requirements) }
        var refresh = KeyRefresh()
        try write { db in
            let now = Date().timeIntervalSince1970
            for (address, lookup) in judged where lookup.chosen != nil {
                let known = try Bool.fetchOne(db, sql: "SELECT 1 FROM contact WHERE address = ?", arguments: [address]) ?? false
                if !known { refresh.addedFromKeyring += 1 }
                try Self.noteUse(db, address: address, name: names[address], source: "keyring", weight: 0, at: now)
            }
            try db.execute(sql: "UPDATE contact SET inKeyring = 0")
            let addresses = try String.fetchAll(db, sql: "SELECT address FROM contact")
            for address in addresses {
                let lookup = judged[address] ?? KeyLookup(address: address, keys: [], requirements: requirements)
                let state: String, fingerprint: String?, reason: String?
                if let chosen = lookup.chosen {
                    (state, fingerprint, reason) = ("usable", chosen.fingerprint, nil)
                    refresh.usable += 1
                } else if lookup.candidates.isEmpty {
                    (state, fingerprint, reason) = ("missing", nil, "no key")
                } else {
                    (state, fingerprint, reason) = ("unusable", nil,
                                                    Array(Set(lookup.problems.map(\.description))).sorted().joined(separator: ", "))
                }
                try db.execute(sql: """
                    UPDATE contact SET keyState = ?, fingerprint = ?, keyReason = ?, keyFingerprints = ?, inKeyring = ?
                    WHERE address = ?
                    """, arguments: [state, fingerprint, reason, lookup.candidates.map(\.key.fingerprint).joined(separator: " "),
                                     lookup.chosen != nil, address])
            }
        }
        return refresh
    }

    // MARK: Database

    func read<T>(_ body: (Database) throws -> T) throws(ContactsError) -> T {
        do { return try store.database.read(body) } catch {
            throw ContactsError("cannot read the contacts (\(LocalStore.describe(error)))")
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(ContactsError) -> T {
        do { return try store.database.write(body) } catch {
            throw ContactsError("cannot write the contacts (\(LocalStore.describe(error)))")
        }
    }
}

/// What a queued mail tells the contacts: whom it went to (with the names it
/// used) and which key each letter recipient's letter was encrypted to.
public struct SentNote: Sendable {
    /// Every envelope recipient, lower case, with the name the mail gave it (or "").
    public var recipients: [MailAddress]
    /// Letter recipients and their keys.
    public var letterKeys: [(address: String, fingerprint: String)]

    /// A note of recipients (names kept only when fit to show) and letter keys.
    public init(recipients: [MailAddress], letterKeys: [(address: String, fingerprint: String)] = []) {
        var seen = Set<String>()
        self.recipients = recipients.compactMap { person in
            let address = person.address.lowercased()
            guard seen.insert(address).inserted else { return nil }
            return MailAddress(name: DisplayNames.keepable(person.name, for: address) ?? "", address: address)
        }
        self.letterKeys = letterKeys.map { ($0.address.lowercased(), $0.fingerprint) }
    }

    /// The note for `written`, the copies of a mail whose header fields
    /// named `named` (To, Cc and Bcc, for their names). A name that shows
    /// another address, or holds control characters, is not kept.
    public init(written: WrittenMail, named: [MailAddress]) {
        var names: [String: String] = [:]
        for person in named { names[person.address.lowercased()] = person.name }
        self.init(recipients: written.copies.flatMap(\.recipients).map { MailAddress(name: names[$0.lowercased()] ?? "", address: $0) },
                  letterKeys: written.copies.flatMap(\.letterKeys))
    }
}
