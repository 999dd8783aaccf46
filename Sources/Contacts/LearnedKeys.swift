import Foundation
import GRDB
import Incoming
import Pipeline
import Store

extension StoreContinuity {
    /// The keys learned from mail for `addresses`, by lower-case address, the
    /// current one first: the newest an Autocrypt header carried, then the
    /// newest gossip (Autocrypt's peer state).
    public func learned(_ addresses: [String]) throws(KeyContinuityError) -> [String: [LearnedKey]] {
        let wanted = Array(Set(addresses.map { $0.lowercased() }))
        guard !wanted.isEmpty else { return [:] }
        do {
            return try store.database.read { db in
                var found: [String: [LearnedKey]] = [:]
                for start in stride(from: 0, to: wanted.count, by: 500) {
                    let part = Array(wanted[start..<min(start + 500, wanted.count)])
                    let rows = try Row.fetchAll(db, sql: "SELECT * FROM learnedKey WHERE address IN ("
                                                + Array(repeating: "?", count: part.count).joined(separator: ",")
                                                + ") ORDER BY autocryptTimestamp IS NULL, autocryptTimestamp DESC, lastSeen DESC, fingerprint",
                                                arguments: StatementArguments(part))
                    for row in rows {
                        let autocrypt: Double? = row["autocryptTimestamp"]
                        found[row["address"], default: []].append(LearnedKey(
                            fingerprint: row["fingerprint"], origin: autocrypt == nil ? .gossip : .autocrypt,
                            learned: Date(timeIntervalSince1970: row["firstSeen"]),
                            lastSeen: Date(timeIntervalSince1970: row["lastSeen"])))
                    }
                }
                return found
            }
        } catch {
            throw KeyContinuityError(description: "cannot read the learned keys in the store (\(LocalStore.describe(error)))")
        }
    }

    /// Notes the keys `results` imported from a mail dated `time`: a key the
    /// import taught the keyring (new, or a new user ID for the address), or
    /// one learned from mail before, is a learned key of that address; a key
    /// the keyring already held for it stays the person's own.
    package static func noteLearned(_ results: [AutocryptImportResult], at time: Double, now: Double, in db: Database) throws {
        for result in results {
            guard let fingerprint = result.imported?.uppercased(), let address = result.addr?.lowercased() else { continue }
            let known = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM learnedKey WHERE fingerprint = ?)",
                                          arguments: [fingerprint]) ?? false
            guard result.newToKeyring || known else { continue }
            let autocrypt: Double? = result.header == "Autocrypt" ? time : nil
            try db.execute(sql: """
                INSERT INTO learnedKey (address, fingerprint, firstSeen, lastSeen, autocryptTimestamp) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (address, fingerprint) DO UPDATE SET lastSeen = max(lastSeen, excluded.lastSeen),
                    autocryptTimestamp = CASE WHEN excluded.autocryptTimestamp IS NULL THEN autocryptTimestamp
                                              ELSE max(coalesce(autocryptTimestamp, 0), excluded.autocryptTimestamp) END
                """, arguments: [address, fingerprint, now, time, autocrypt])
        }
    }

    /// Notes the keys of ``AutocryptImporter`` `results` from a mail dated
    /// `time` (``noteLearned(_:at:now:in:)``).
    public func noteLearned(_ results: [AutocryptImportResult], at time: Date) throws(KeyContinuityError) {
        guard results.contains(where: { $0.imported != nil }) else { return }
        do {
            let now = Date().timeIntervalSince1970
            try store.database.write { db in
                try Self.noteLearned(results, at: min(time.timeIntervalSince1970, now), now: now, in: db)
            }
        } catch {
            throw KeyContinuityError(description: "cannot write the learned keys in the store (\(LocalStore.describe(error)))")
        }
    }

    /// The person imported these keys on purpose: they are no longer learned ones.
    public func forgetLearned(fingerprints: [String]) throws(KeyContinuityError) {
        guard !fingerprints.isEmpty else { return }
        do {
            try store.database.write { db in
                for fingerprint in fingerprints {
                    try db.execute(sql: "DELETE FROM learnedKey WHERE fingerprint = ?", arguments: [fingerprint.uppercased()])
                }
            }
        } catch {
            throw KeyContinuityError(description: "cannot write the learned keys in the store (\(LocalStore.describe(error)))")
        }
    }
}
