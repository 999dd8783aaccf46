import Contacts
import Foundation
import Incoming
import MIME
import OpenPGP
import Pipeline
import Policy
import Store
import TestSupport
import Testing

/// Random histories of imports, Autocrypt learning, accepts and sends for one
/// recipient, against a model written here from the rule alone: a letter
/// goes only to a key the person imported (or accepted), or, where they
/// imported none, to the key learned from mail most lately; and a key other
/// than the one the recipient last got a letter with is refused until accepted.
@Suite("key changes: generated histories", .serialized)
struct KeyChangeGeneratorTests {
    @Test("imports, learns (Autocrypt, forged or not), accepts and sends in random order keep the invariant")
    func histories() throws {
        var totals = (letters: 0, refusals: 0)
        for seed in [11, 29, 47] {
            try history(seed: seed, totals: &totals)
        }
        #expect(totals.letters > 0 && totals.refusals > 0, "the histories exercised both: \(totals)")
    }

    func history(seed: Int, totals: inout (letters: Int, refusals: Int)) throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            var random = SeededRandom(seed: UInt64(seed))
            let maker = try TemporaryGnuPGHome()
            defer { maker.close() }
            // Bob's keys, older to newer (the look-up prefers the newest of the person's own).
            let keys = try (0..<4).map { try maker.makeKey("Bob <bob@example.org>", at: "202\($0)0101T000000") }
            let exported = try keys.map { try maker.export([$0]) }
            let store = try LocalStore(folder: home.path + "/data")
            let book = ContactBook(store: store)
            let continuity = book.continuity
            let gnupg = GnuPG(home: home.path)
            let pipeline = MailPipeline(gnupg: gnupg).with(continuity: continuity)

            // The model.
            var imported = Set<Int>(), learned: [Int: Int] = [:], inKeyring = Set<Int>()
            var remembered: Int?
            var letters = 0, refusals = 0
            func expectedChoice() -> Int? {
                if let newest = imported.max() { return newest }
                return learned.max { $0.value < $1.value }?.key
            }

            for step in 0..<60 {
                switch Int.random(in: 0..<10, using: &random) {
                case 0, 1:  // the person imports a key on purpose (keys import)
                    let index = Int.random(in: 0..<keys.count, using: &random)
                    _ = try gnupg.importKeys(exported[index])
                    try continuity.forgetLearned(fingerprints: [keys[index]])
                    imported.insert(index); learned[index] = nil; inKeyring.insert(index)
                case 2, 3, 4:  // a mail claiming to be Bob's offers a key in its Autocrypt header
                    let index = Int.random(in: 0..<keys.count, using: &random)
                    let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(step) * 3600)
                    let raw = Self.autocryptMail(keydata: exported[index], date: date)
                    let report = try book.learn(raw, autocrypt: AutocryptImporter(gnupg: gnupg))
                    #expect(report.keysImported == 1, "step \(step)")
                    // Learned when new to the keyring or learned before; a key the person imported stays theirs.
                    if !inKeyring.contains(index) || learned[index] != nil { learned[index] = max(learned[index] ?? 0, step) }
                    inKeyring.insert(index)
                case 5:  // the person accepts the key the plan shows
                    let plan = try pipeline.prepare(try MIMEMessage.parse(Self.letter()), envelopeSender: "alice@example.org").plan
                    if let change = plan.heldKeyChanges.first {
                        try continuity.record(change.address, fingerprint: change.current)
                        remembered = keys.firstIndex(of: change.current)
                    }
                default:  // a mail to Bob
                    let plan = try pipeline.prepare(try MIMEMessage.parse(Self.letter()), envelopeSender: "alice@example.org").plan
                    let decision = try #require(plan.decisions.first?.decision)
                    let expected = expectedChoice()
                    switch decision {
                    case .letter(let fingerprint, let source):
                        let index = keys.firstIndex(of: fingerprint)
                        #expect(index == expected, "step \(step): the letter goes to the key the rule picks")
                        #expect(remembered == nil || remembered == index, "step \(step): never a key other than the remembered one")
                        #expect(source == (imported.contains(index ?? -1) ? "keyring" : "autocrypt"), "step \(step): \(source)")
                        try continuity.record("bob@example.org", fingerprint: fingerprint)  // as sending records it
                        remembered = index
                        letters += 1
                    case .refused(.keyChanged(let change)):
                        #expect(remembered != nil && remembered != expected, "step \(step): refused only for a change")
                        #expect(change.previous == keys[remembered ?? 0] && change.current == keys[expected ?? 0], "step \(step)")
                        #expect(throws: KeyChangeError.self) { try MailPipeline.checkNotRefused(plan) }
                        refusals += 1
                    case .postcard(let why):
                        #expect(expected == nil && remembered == nil, "step \(step): a postcard only without any key: \(why)")
                    default:
                        Issue.record("step \(step): unexpected \(decision)")
                    }
                }
            }
            #expect(letters > 0, "seed \(seed): letters were sent")
            totals.letters += letters
            totals.refusals += refusals
        }
    }

    static func letter() -> [UInt8] {
        Array("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: s\nMessage-ID: <\(UUID())@example.org>\n\nhi\n".utf8)
    }

    static func autocryptMail(keydata: [UInt8], date: Date) -> [UInt8] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, d MMM yyyy HH:mm:ss Z"
        let header = Autocrypt.header(address: "bob@example.org", keydata: keydata)
        return Array("From: Bob <bob@example.org>\nTo: alice@example.org\nSubject: hi\nDate: \(formatter.string(from: date))\nAutocrypt: \(header)\n\nhello\n".utf8)
    }
}
