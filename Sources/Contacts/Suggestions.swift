import Foundation
import Incoming

/// One address offered for a prefix.
public struct Suggestion: Sendable, Hashable {
    /// The address offered, with what the contacts know of it.
    public let contact: Contact
    /// The frecency of the person the address belongs to (every address of
    /// theirs summed): what the list is ordered by.
    public let personScore: Double
    /// Which person (within one list): addresses of one person share it.
    public let person: Int
    /// False when the address does not match the prefix itself but is the
    /// usable-key address of a person one of whose addresses does.
    public let matched: Bool
}

extension ContactBook {
    /// Addresses for a prefix, as a compose screen offers them while one types.
    ///
    /// - Matching: the prefix (case, accents and width aside, after NFKC)
    ///   begins the address or a word of the name. An empty prefix matches all.
    /// - Addresses in `excluding` (those already in the mail) are left out.
    /// - One person's addresses are grouped: addresses that are user IDs of
    ///   one key, and addresses the user wrote to with the same name. Names
    ///   in received mail or on keys never join addresses (anyone can claim
    ///   one). A person whose matching address has no usable key brings
    ///   their address that has one, and it comes first.
    /// - Ranking: persons by the sum of their addresses' frecency
    ///   (``Frecency``: each use weighs 1 sent or ¼ seen and halves every 30
    ///   days), ties by latest use, then address; within a person, addresses
    ///   with a usable key first, then by frecency.
    public func suggest(prefix: String, excluding: [String] = [], limit: Int = 20, now: Date = Date())
        throws(ContactsError) -> [Suggestion] {
        Self.suggest(prefix: prefix, excluding: excluding, limit: limit, now: now, among: try contacts(now: now))
    }

    static func suggest(prefix: String, excluding: [String], limit: Int, now: Date, among all: [Contact]) -> [Suggestion] {
        let wanted = fold(prefix.trimmingCharacters(in: .whitespaces))
        let excluded = Set(excluding.map { $0.lowercased() })
        let people = persons(all)
        var byPerson: [Int: [Int]] = [:]
        for index in all.indices { byPerson[people[index], default: []].append(index) }

        let matching = all.indices.filter { !excluded.contains(all[$0].address) && matches(all[$0], wanted) }
        var offered: [Int: (indices: Set<Int>, matched: Set<Int>)] = [:]
        for index in matching {
            let person = people[index]
            offered[person, default: ([], [])].indices.insert(index)
            offered[person]!.matched.insert(index)
        }
        for (person, entry) in offered where entry.matched.allSatisfy({ !all[$0].key.canGetLetter }) {
            for sibling in byPerson[person] ?? [] where all[sibling].key.canGetLetter && !excluded.contains(all[sibling].address) {
                offered[person]!.indices.insert(sibling)
            }
        }
        let score = byPerson.mapValues { $0.reduce(0) { $0 + all[$1].frecency(at: now) } }
        let latest = byPerson.mapValues { $0.compactMap { all[$0].lastUsed }.max() ?? .distantPast }
        let order = offered.keys.sorted { a, b in
            if score[a]! != score[b]! { return score[a]! > score[b]! }
            if latest[a]! != latest[b]! { return latest[a]! > latest[b]! }
            return offered[a]!.indices.map { all[$0].address }.min()! < offered[b]!.indices.map { all[$0].address }.min()!
        }
        var result: [Suggestion] = []
        for person in order {
            let entry = offered[person]!
            let inside = entry.indices.sorted { a, b in
                let (x, y) = (all[a], all[b])
                if x.key.canGetLetter != y.key.canGetLetter { return x.key.canGetLetter }
                return ContactBook.ranks(x, before: y, now: now)
            }
            for index in inside {
                result.append(Suggestion(contact: all[index], personScore: score[person]!, person: person,
                                         matched: entry.matched.contains(index)))
                if result.count == limit { return result }
            }
        }
        return result
    }

    /// The person of each contact (an index into `all` standing for the
    /// group): union of addresses sharing a key and of addresses the user
    /// wrote to with the same name.
    static func persons(_ all: [Contact]) -> [Int] {
        var parent = Array(all.indices)
        func root(_ i: Int) -> Int {
            var i = i
            while parent[i] != i { parent[i] = parent[parent[i]]; i = parent[i] }
            return i
        }
        func join(_ a: Int, _ b: Int) { let (x, y) = (root(a), root(b)); if x != y { parent[max(x, y)] = min(x, y) } }
        var byKey: [String: Int] = [:], byName: [String: Int] = [:]
        for (index, contact) in all.enumerated() {
            for fingerprint in contact.keyFingerprints {
                if let other = byKey[fingerprint] { join(index, other) } else { byKey[fingerprint] = index }
            }
            if let name = contact.sentName.map(DisplayNames.comparable), !name.isEmpty {
                if let other = byName[name] { join(index, other) } else { byName[name] = index }
            }
        }
        return all.indices.map(root)
    }

    static func matches(_ contact: Contact, _ wanted: String) -> Bool {
        if wanted.isEmpty { return true }
        if fold(contact.address).hasPrefix(wanted) { return true }
        guard let name = contact.name else { return false }
        let folded = fold(name)
        if folded.hasPrefix(wanted) { return true }
        return folded.split(whereSeparator: { $0.isWhitespace || $0 == "-" || $0 == "," || $0 == "." || $0 == "(" })
            .contains { $0.hasPrefix(wanted) }
    }

    /// The form prefixes are compared in: NFKC, case, accents and width folded.
    static func fold(_ text: String) -> String {
        text.precomposedStringWithCompatibilityMapping
            .folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }
}
