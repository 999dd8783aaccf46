import Foundation
@testable import Filter
import Pipeline
import Settings
import TestSupport
import Testing

/// SMTP re-injection against the journal, with a peer that misbehaves on
/// purpose: every case must end with each recipient's copy taken exactly
/// once (or, in the one window SMTP cannot close, at least once), never none.
@Suite("Re-injection faults: each recipient exactly once, nothing lost", .serialized)
struct ReinjectionFaultTests {
    static let people = ["bob@example.org", "carol@example.org", "nobody@example.org", "nemo@example.org"]

    func config(_ home: TemporaryGnuPGHome, port: Int) -> FilterConfig {
        var config = FilterConfig()
        config.gnupgHome = home.path
        config.journalDirectory = home.path + "/journal"
        config.reinjection = .smtp(host: "127.0.0.1", port: port)
        config.reinjectionTimeout = 10
        config.log = .none
        return config
    }

    /// A mail to a random choice of people: To and Cc vary, so the copies
    /// (letters to Bob and Carol, postcards to the rest) vary in number and shape.
    func mail(_ random: inout SeededRandom) -> (bytes: [UInt8], recipients: [String]) {
        var chosen = Self.people.filter { _ in Bool.random(using: &random) }
        if chosen.isEmpty { chosen = [Self.people.randomElement(using: &random)!] }
        let split = Int.random(in: 0...chosen.count, using: &random)
        let to = chosen[..<split].joined(separator: ", "), cc = chosen[split...].joined(separator: ", ")
        let text = "From: Alice <alice@example.org>\n" + (to.isEmpty ? "" : "To: \(to)\n") + (cc.isEmpty ? "" : "Cc: \(cc)\n")
            + "Subject: \(UInt32.random(in: 0...UInt32.max, using: &random))\nMessage-ID: <rf.\(random.next())@example.org>\n\n"
            + String(repeating: "line \(random.next())\n", count: Int.random(in: 1...40, using: &random))
        return (Array(text.utf8), chosen)
    }

    /// `filter.run`, again while another suite's stop request (the process-wide
    /// `Stop`, FilterFaultTests) is what deferred it.
    func run(_ filter: MailFilter, _ bytes: [UInt8], _ recipients: [String]) -> FilterResult {
        var result = filter.run(bytes, sender: "alice@example.org", recipients: recipients)
        for _ in 0..<100 where result.errorLine?.contains("stopped by a signal") == true {
            usleep(100_000)
            result = filter.run(bytes, sender: "alice@example.org", recipients: recipients)
        }
        return result
    }

    /// How many copies each recipient got, over every server.
    func counts(_ servers: [RecordingSMTPServer]) -> [String: Int] {
        servers.flatMap(\.transactions).flatMap(\.recipients).reduce(into: [:]) {
            $0[String($1.dropFirst().dropLast()), default: 0] += 1
        }
    }

    @Test("QUIT reset after the last 250: the mail is done (0), each copy taken once")
    func quitReset() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            var faults = RecordingSMTPServer.Faults()
            faults.resetOnQuit = true
            let peer = try RecordingSMTPServer(faults: faults)
            let result = run(MailFilter(config: config(home, port: peer.port)),
                             Array("From: alice@example.org\nTo: bob@example.org, nobody@example.org\nMessage-ID: <q@x>\n\nhi\n".utf8),
                             ["bob@example.org", "nobody@example.org"])
            #expect(result.status == 0, "\(result.errorLine ?? "")")
            #expect(counts([peer]) == ["bob@example.org": 1, "nobody@example.org": 1])
        }
    }

    @Test("one recipient of a shared letter refused: that copy is not sent at all (75); the retry sends it once", arguments: [false, true])
    func partialRecipients(resident: Bool) throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            var faults = RecordingSMTPServer.Faults()
            faults.refused = ["carol@example.org"]
            let refusing = try RecordingSMTPServer(faults: faults)
            let resources = resident ? FilterResources(keys: KeyCache(), reinjection: ReinjectionPool(capacity: 2)) : .perMail
            let bytes = Array("From: alice@example.org\nTo: bob@example.org, carol@example.org\nCc: nobody@example.org\nMessage-ID: <p@x>\n\nhi\n".utf8)
            let recipients = ["bob@example.org", "carol@example.org", "nobody@example.org"]
            let first = run(MailFilter(config: config(home, port: refusing.port), resources: resources), bytes, recipients)
            #expect(first.status == 75, "\(first.errorLine ?? "")")
            #expect(first.errorLine?.contains("nothing was sent") == true, "\(first.errorLine ?? "")")
            #expect(counts([refusing])["bob@example.org"] == nil, "Bob's share of the refused letter never went")
            let healthy = try RecordingSMTPServer()
            let second = run(MailFilter(config: config(home, port: healthy.port), resources: resources), bytes, recipients)
            #expect(second.status == 0, "\(second.errorLine ?? "")")
            #expect(counts([refusing, healthy]) == Dictionary(uniqueKeysWithValues: recipients.map { ($0, 1) }))
            resources.reinjection?.closeAll()
        }
    }

    @Test("random mails, random cuts after the final dot (not taken) and 451s, pipe and resident: retried until done, each recipient exactly once",
          arguments: [false, true])
    func randomCuts(resident: Bool) throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let seed = UInt64.random(in: 0...UInt64.max)
            var random = SeededRandom(seed: seed)
            var faults = RecordingSMTPServer.Faults()
            faults.cutAfterDot = Set((1...60).filter { _ in Int.random(in: 0..<5, using: &random) == 0 })
            faults.closeAfterTransactions = resident ? Int.random(in: 1...4, using: &random) : nil
            let failing = Set((1...60).filter { _ in Int.random(in: 0..<7, using: &random) == 0 })
            let peer = try RecordingSMTPServer(failing: failing, faults: faults)
            let resources = resident ? FilterResources(keys: KeyCache(), reinjection: ReinjectionPool(capacity: 1)) : .perMail
            let filter = MailFilter(config: config(home, port: peer.port), resources: resources)
            var expected: [String: Int] = [:]
            for _ in 0..<8 {
                let (bytes, recipients) = mail(&random)
                var tries = 0, result = run(filter, bytes, recipients)
                // (Another suite's stop request may defer a try too: the retries outlast it.)
                while result.status == 75 && tries < 40 {
                    tries += 1
                    usleep(100_000)
                    result = run(filter, bytes, recipients)
                }
                #expect(result.status == 0, "seed \(seed): \(result.errorLine ?? "")")
                for person in recipients { expected[person, default: 0] += 1 }
            }
            #expect(counts([peer]) == expected, "seed \(seed)")
            resources.reinjection?.closeAll()
        }
    }

    @Test("resident: one kept session carries mail after mail, checked with RSET; one the server closed is replaced unseen")
    func keptSessions() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let resources = FilterResources(keys: KeyCache(), reinjection: ReinjectionPool(capacity: 1))
            defer { resources.reinjection?.closeAll() }
            func send(_ filter: MailFilter, _ number: Int) -> FilterResult {
                run(filter, Array("From: alice@example.org\nTo: bob@example.org\nMessage-ID: <k\(number).\(UUID())@x>\n\nhi\n".utf8),
                    ["bob@example.org"])
            }
            let peer = try RecordingSMTPServer()
            let filter = MailFilter(config: config(home, port: peer.port), resources: resources)
            for number in 0..<5 { #expect(send(filter, number).status == 0) }
            #expect(peer.connections == 1)
            #expect(peer.resets == 4)
            #expect(peer.transactions.count == 5)

            // A server that drops every connection after one mail (an idle time-out):
            // each mail still goes at the first try, exactly once.
            var faults = RecordingSMTPServer.Faults()
            faults.closeAfterTransactions = 1
            let closing = try RecordingSMTPServer(faults: faults)
            let other = MailFilter(config: config(home, port: closing.port), resources: resources)
            for number in 0..<4 {
                let result = send(other, number)
                #expect(result.status == 0, "\(result.errorLine ?? "")")
            }
            #expect(closing.transactions.count == 4)
            #expect(closing.connections == 4)
            #expect(resources.keys?.statistics.listings == 1, "one key listing for nine mails")
        }
    }

    @Test("pipe filter: the session opened ahead carries every copy (checked with RSET); dropped by the server before use, or opened too late, the mail still goes at once, each copy once")
    func openedAhead() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            let seed = UInt64.random(in: 0...UInt64.max)
            var random = SeededRandom(seed: seed)
            for round in 0..<6 {
                // Even rounds: the server drops the session opened ahead right after EHLO.
                var faults = RecordingSMTPServer.Faults()
                if round % 2 == 0 { faults.closeAfterHello = [1] }
                let peer = try RecordingSMTPServer(faults: faults)
                let settings = config(home, port: peer.port)
                let (bytes, recipients) = mail(&random)
                guard let pool = settings.prepareHandover() else {
                    Issue.record("SMTP re-injection gives a pool")
                    return
                }
                // The mail comes before or after the session is open (round 1: at once).
                if round > 1 { usleep(useconds_t.random(in: 0...50_000, using: &random)) }
                let result = run(MailFilter(config: settings, resources: FilterResources(keys: nil, reinjection: pool)),
                                 bytes, recipients)
                pool.closeAll()
                #expect(result.status == 0, "seed \(seed) round \(round): \(result.errorLine ?? "")")
                let got = counts([peer])
                #expect(recipients.allSatisfy { got[$0] == 1 } && got.count == recipients.count, "seed \(seed) round \(round): \(got)")
                #expect(peer.transactions.allSatisfy { $0.connection == (round % 2 == 0 ? 2 : 1) },
                        "round \(round): every copy on the one working session")
                #expect(peer.connections == (round % 2 == 0 ? 2 : 1), "round \(round): no session more than needed")
                if round % 2 == 1 { #expect(peer.resets == 1, "round \(round): the session opened ahead is checked once") }
            }
        }
        var sendmail = FilterConfig()
        sendmail.reinjection = .sendmail(["/bin/true"])
        #expect(sendmail.prepareHandover() == nil)
    }

    @Test("a copy taken but its 250 lost (the RFC 1047 window): deferred, and the retry sends that copy again and no other")
    func takenThenCut() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]) { home throws in
            var faults = RecordingSMTPServer.Faults()
            faults.takeThenCut = [2]
            let peer = try RecordingSMTPServer(faults: faults)
            let filter = MailFilter(config: config(home, port: peer.port))
            let bytes = Array("From: alice@example.org\nTo: bob@example.org\nCc: nobody@example.org, nemo@example.org\nMessage-ID: <t@x>\n\nhi\n".utf8)
            let recipients = ["bob@example.org", "nobody@example.org", "nemo@example.org"]
            #expect(run(filter, bytes, recipients).status == 75)
            #expect(run(filter, bytes, recipients).status == 0)
            let got = counts([peer])
            #expect(recipients.allSatisfy { got[$0, default: 0] >= 1 }, "nothing lost: \(got)")
            // Letters go first: the second transaction was the postcard to nobody and nemo.
            #expect(got["bob@example.org"] == 1, "\(got)")
            #expect(got.values.reduce(0, +) == 5, "only the cut copy went twice: \(got)")
        }
    }
}
