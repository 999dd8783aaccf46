import Contacts
import Foundation
import MIME
import OpenPGP
import Store
import TestSupport
import Testing

/// A generated history: people (some with two addresses, one of them with a
/// key), a few thousand mails sent and received over a year, and a real
/// keyring. Every ranking property is checked against a reference computed
/// here from the raw events, never against a stored list.
struct History {
    struct Person { let name: String; var addresses: [String] }
    var people: [Person] = []
    var personOf: [String: Int] = [:]
    /// address -> (time, weight) of every use.
    var events: [String: [(Double, Double)]] = [:]
    var keyed: Set<String> = []
    var mails = 0
    let now: Date

    func reference(_ address: String) -> Double {
        (events[address] ?? []).reduce(0) { $0 + $1.1 * exp2(-(now.timeIntervalSince1970 - $1.0) / Frecency.halfLife) }
    }

    func personScore(_ person: Int) -> Double { people[person].addresses.reduce(0) { $0 + reference($1) } }
}

/// A name from random syllables, with accents, other scripts and case now and then.
func randomName(_ random: inout SeededRandom) -> String {
    let syllables = ["an", "be", "cé", "do", "el", "fa", "gö", "hi", "ja", "ki", "lo", "ma", "ñu", "ot", "pé", "qu", "ra", "sø",
                     "ta", "ul", "vi", "wa", "xe", "yo", "zé", "ßa", "Жа", "ми", "李", "明", "ﾃｽ", "Ｂｏ"]
    func word() -> String {
        let count = Int.random(in: 2...3, using: &random)
        let text = (0..<count).map { _ in syllables.randomElement(using: &random)! }.joined()
        return text.prefix(1).uppercased() + text.dropFirst()
    }
    return word() + " " + word()
}

func makeHistory(seed: UInt64, home: TemporaryGnuPGHome, book: ContactBook) throws -> History {
    var random = SeededRandom(seed: seed)
    let now = Date()
    var history = History(now: now)
    let domains = ["example.org", "work.test", "home.test", "mail.test"]
    // 120 people; one in five has a second address, written to with the same name.
    for index in 0..<120 {
        let name = randomName(&random)
        let local = "p\(index)" + ["", ".x", "-y", "_z"].randomElement(using: &random)!
        var person = History.Person(name: name, addresses: ["\(local)@\(domains.randomElement(using: &random)!)"])
        if index % 5 == 0 { person.addresses.append("alt\(index)@\(domains.randomElement(using: &random)!)") }
        for address in person.addresses { history.personOf[address] = history.people.count }
        history.people.append(person)
    }
    // Keys: for a few people with two addresses the *second* address has the key,
    // plus a few single addresses; one key carries two of one person's addresses.
    var keyAddresses: [(String, String)] = []
    for index in stride(from: 0, to: 120, by: 10) { keyAddresses.append((history.people[index].name, history.people[index].addresses.last!)) }
    for index in [3, 7, 13] { keyAddresses.append((history.people[index].name, history.people[index].addresses[0])) }
    for (name, address) in keyAddresses {
        let made = try home.gpg(["--passphrase", "", "--quick-gen-key", "\(name) <\(address)>", "future-default", "default", "never"])
        #expect(made.status == 0, "\(made.errors)")
        history.keyed.insert(address)
    }

    // Every address is written to once with its person's name: that name is what joins a person's addresses.
    for person in history.people {
        for address in person.addresses {
            let time = now.timeIntervalSince1970 - Double.random(in: 0..<(365 * 86400), using: &random)
            try book.noteSent(SentNote(recipients: [MailAddress(name: person.name, address: address)]), at: Date(timeIntervalSince1970: time))
            history.events[address, default: []].append((time, Frecency.sentWeight))
        }
    }
    // Zipf-like choice of people: a few are written to often.
    func pick() -> Int { min(119, Int(pow(Double.random(in: 0..<1, using: &random), 2.5) * 120)) }
    for _ in 0..<3000 {
        let time = now.timeIntervalSince1970 - Double.random(in: 0..<(365 * 86400), using: &random)
        let count = Int.random(in: 2...4, using: &random)
        var recipients: [MailAddress] = []
        while recipients.count < 2 || recipients.count < count && Int.random(in: 0..<4, using: &random) > 0 {
            let person = history.people[pick()]
            let address = person.addresses.randomElement(using: &random)!
            if !recipients.contains(where: { $0.address == address }) { recipients.append(MailAddress(name: person.name, address: address)) }
        }
        if Bool.random(using: &random) || Int.random(in: 0..<10, using: &random) < 2 {
            try book.noteSent(SentNote(recipients: recipients), at: Date(timeIntervalSince1970: time))
            for recipient in recipients { history.events[recipient.address, default: []].append((time, Frecency.sentWeight)) }
        } else {
            // Received: From one of them, To the rest; the name as the sender wrote it (never joins people).
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.dateFormat = "EEE, d MMM yyyy HH:mm:ss Z"
            let from = recipients[0], rest = recipients.dropFirst()
            let to = rest.map(\.address).joined(separator: ", ")
            let raw = "From: =?utf-8?b?\(Data(from.name.utf8).base64EncodedString())?= <\(from.address)>\nTo: \(to)\n"
                + "Date: \(formatter.string(from: Date(timeIntervalSince1970: time)))\nSubject: hi\n\nbody\n"
            let report = try book.learn(Array(raw.utf8), now: now)
            #expect(report.mails == 1 && report.skippedMails == 0)
            for recipient in recipients {
                history.events[recipient.address, default: []].append((floor(time), Frecency.seenWeight))
            }
        }
        history.mails += 1
    }
    try book.refreshKeys(gnupg: GnuPG(home: home.path))
    return history
}

/// The reference matcher: the prefix, anchored, case- and accent-insensitive,
/// at the start of the address or of a word of the name (NFKC first).
func referenceMatches(_ prefix: String, address: String, name: String?) -> Bool {
    let wanted = prefix.precomposedStringWithCompatibilityMapping
    if wanted.isEmpty { return true }
    let options: String.CompareOptions = [.anchored, .caseInsensitive, .diacriticInsensitive, .widthInsensitive]
    if address.range(of: wanted, options: options) != nil { return true }
    guard let name = name?.precomposedStringWithCompatibilityMapping else { return false }
    let words = [name] + name.split(whereSeparator: { $0.isWhitespace || "-,.(".contains($0) }).map(String.init)
    return words.contains { $0.range(of: wanted, options: options) != nil }
}

@Suite("Contacts: ranking and suggestions on a generated history", .serialized)
struct SuggestionTests {
    @Test("3000 generated mails: frecency exact, every match offered, persons by score, keyed address first, exclusions out")
    func generatedHistory() throws {
        try withGnuPGHome { home throws in
            let folder = try makePrivateDirectory(prefix: "ms-contacts")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let book = ContactBook(store: try LocalStore(folder: folder))
            let history = try makeHistory(seed: 20261122, home: home, book: book)
            let now = history.now
            let all = try book.contacts(now: now)
            #expect(all.count >= 140, "\(all.count) contacts")

            // Frecency and counts are exactly what the events say.
            for contact in all {
                let expected = history.reference(contact.address)
                #expect(abs(contact.frecency(at: now) - expected) <= 1e-6 * max(1, expected), "\(contact.address)")
                let sent = history.events[contact.address]?.filter { $0.1 == Frecency.sentWeight }.count ?? 0
                #expect(contact.sentCount == sent, "\(contact.address)")
                #expect(contact.key.canGetLetter == history.keyed.contains(contact.address), "\(contact.address): \(contact.key)")
            }
            // The list is ordered by frecency.
            for (a, b) in zip(all, all.dropFirst()) { #expect(a.frecency(at: now) >= b.frecency(at: now)) }

            var random = SeededRandom(seed: 7)
            var checkedSiblings = 0
            for round in 0..<300 {
                // A prefix: the start of an address or of a name word, sometimes upper-cased or with accents dropped.
                let person = history.people.randomElement(using: &random)!
                let source = Bool.random(using: &random) ? person.addresses.randomElement(using: &random)!
                    : String(person.name.split(separator: " ").randomElement(using: &random)!)
                var prefix = String(source.prefix(Int.random(in: 1...4, using: &random)))
                switch round % 3 {
                case 1: prefix = prefix.uppercased()
                case 2: prefix = prefix.folding(options: .diacriticInsensitive, locale: nil)
                default: break
                }
                if round % 17 == 0 { prefix = "" }
                let excluding = (0..<Int.random(in: 0...3, using: &random)).map { _ in
                    history.people.randomElement(using: &random)!.addresses.randomElement(using: &random)!
                }
                let offered = try book.suggest(prefix: prefix, excluding: excluding, limit: .max, now: now)
                let addresses = offered.map(\.contact.address)
                #expect(Set(addresses).count == addresses.count, "no address twice")
                #expect(Set(addresses).isDisjoint(with: excluding), "\(prefix): an excluded address offered")

                // Every contact that matches (and is not excluded) is offered, as matched; nothing else is matched.
                let expected = Set(all.filter { !excluding.contains($0.address) && referenceMatches(prefix, address: $0.address, name: $0.name) }
                    .map(\.address))
                #expect(Set(offered.filter(\.matched).map(\.contact.address)) == expected, "prefix \(prefix)")

                // Persons as the generator made them (same name written to; a key's user IDs), ordered by their summed frecency.
                var lastScore = Double.infinity
                var seenPersons: [Int] = []
                for suggestion in offered {
                    let person = history.personOf[suggestion.contact.address] ?? -1
                    if seenPersons.last != person {
                        #expect(!seenPersons.contains(person), "\(prefix): a person's addresses are together")
                        seenPersons.append(person)
                        let score = person >= 0 ? history.personScore(person) : history.reference(suggestion.contact.address)
                        #expect(score <= lastScore * (1 + 1e-6), "\(prefix): \(suggestion.contact.address) ranks above a higher score")
                        lastScore = score
                    }
                }
                for person in Set(seenPersons) {
                    let mine = offered.filter { (history.personOf[$0.contact.address] ?? -1) == person }
                    // Within a person: usable key first.
                    if let firstPlain = mine.firstIndex(where: { !$0.contact.key.canGetLetter }) {
                        #expect(!mine[firstPlain...].contains { $0.contact.key.canGetLetter }, "\(prefix): keyed address after one without")
                    }
                    // An address offered without matching is the keyed address of a person whose matches have no key.
                    for extra in mine where !extra.matched {
                        #expect(extra.contact.key.canGetLetter)
                        #expect(mine.filter(\.matched).allSatisfy { !$0.contact.key.canGetLetter })
                        checkedSiblings += 1
                    }
                    // And the other way: a person whose matched addresses lack a key, with a keyed address not excluded, brings it.
                    if person >= 0, mine.allSatisfy({ !$0.contact.key.canGetLetter }) {
                        let keyedSibling = history.people[person].addresses.filter { history.keyed.contains($0) && !excluding.contains($0) }
                        #expect(keyedSibling.isEmpty, "\(prefix): \(keyedSibling) not offered for its person")
                    }
                }
                // A limit takes the head of the same list.
                let head = try book.suggest(prefix: prefix, excluding: excluding, limit: 5, now: now)
                #expect(head.map(\.contact.address) == Array(addresses.prefix(5)))
            }
            #expect(checkedSiblings > 0, "the generated history offered no keyed address of the same person")
        }
    }

    @Test("frecency: a use adds its weight and halves every half-life, in any order")
    func frecencyAlgebra() {
        var random = SeededRandom(seed: 99)
        for _ in 0..<200 {
            let uses = (0..<Int.random(in: 1...40, using: &random)).map { _ in
                (Double.random(in: 0...(400 * 86400), using: &random), [Frecency.sentWeight, Frecency.seenWeight].randomElement(using: &random)!)
            }
            var (score, at) = (0.0, 0.0)
            for (time, weight) in uses { (score, at) = Frecency.adding(weight, at: time, to: score, keptAt: at) }
            let now = 400 * 86400.0
            let expected = uses.reduce(0) { $0 + $1.1 * exp2(-(now - $1.0) / Frecency.halfLife) }
            #expect(abs(Frecency.decayed(score, from: at, to: now) - expected) <= 1e-6 * max(1, expected))
        }
    }
}

@Suite("Contacts: one person across a key's user IDs", .serialized)
struct SameKeyTests {
    @Test("an address whose user ID on a key is revoked brings the key's other address, which can get a letter; a look-alike name joins nobody")
    func sameKey() throws {
        try withGnuPGHome { home throws in
            let folder = try makePrivateDirectory(prefix: "ms-samekey")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let book = ContactBook(store: try LocalStore(folder: folder))
            #expect(try home.gpg(["--passphrase", "", "--quick-gen-key", "Quinn <quinn@old.test>", "future-default", "default", "never"]).status == 0)
            let listing = try home.gpg(["--with-colons", "--list-keys", "quinn@old.test"]).output
            let fingerprint = try #require(listing.split(separator: "\n").first { $0.hasPrefix("fpr:") }?
                .split(separator: ":", omittingEmptySubsequences: false)[9]).description
            #expect(try home.gpg(["--passphrase", "", "--quick-add-uid", fingerprint, "Quinn <q@new.test>"]).status == 0)
            #expect(try home.gpg(["--passphrase", "", "--quick-revoke-uid", fingerprint, "Quinn <quinn@old.test>"]).status == 0)

            let now = Date()
            // The old address is written to often; the new one never; a stranger claims the same name in received mail.
            for day in 0..<10 {
                try book.noteSent(SentNote(recipients: [MailAddress(name: "Quinn", address: "quinn@old.test")]),
                                  at: now.addingTimeInterval(Double(-day) * 86400))
            }
            _ = try book.learn(Array("From: Quinn <quinn@evil.test>\nTo: me@self.test\n\nhi\n".utf8), now: now)
            try book.refreshKeys(gnupg: GnuPG(home: home.path))

            let old = try #require(try book.contact("quinn@old.test"))
            #expect(!old.key.canGetLetter && old.keyFingerprints == [fingerprint], "\(old.key)")
            #expect(try book.contact("q@new.test")?.key == .usable(fingerprint: fingerprint))

            let offered = try book.suggest(prefix: "quinn@o", now: now)
            #expect(offered.map(\.contact.address) == ["q@new.test", "quinn@old.test"], "\(offered.map(\.contact.address))")
            #expect(offered.first?.matched == false && offered.last?.matched == true)
            #expect(Set(offered.map(\.person)).count == 1)
            // By name: both addresses of the person, the keyed first; the stranger with the same name stands apart.
            let byName = try book.suggest(prefix: "quinn", now: now).map(\.contact.address)
            #expect(byName.prefix(2) == ["q@new.test", "quinn@old.test"] && byName.last == "quinn@evil.test", "\(byName)")
            // Excluded, the keyed address is not brought back.
            #expect(try book.suggest(prefix: "quinn@o", excluding: ["Q@new.test"], now: now).map(\.contact.address) == ["quinn@old.test"])
        }
    }
}
