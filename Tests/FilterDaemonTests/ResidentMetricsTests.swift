import Foundation
import HTTPRequests
import TestSupport
import Testing

/// Issue 25, item 3: the resident filter's Prometheus endpoint and its one
/// line per mail, on a real daemon with real gpg homes, scraped over TCP.
@Suite("mailsec filter --listen: metrics and the log line per mail", .serialized)
struct ResidentMetricsTests {
    /// The port of the daemon's metrics endpoint, from its "metrics on" line.
    static func metricsPort(_ daemon: ResidentProcess) throws -> Int {
        let line = try daemon.waitFor("metrics on http://")
        guard let port = line.components(separatedBy: "127.0.0.1:").last?.components(separatedBy: "/").first.flatMap({ Int($0) })
        else { throw DaemonError(description: "no port in \(line)") }
        return port
    }

    static func scrape(_ port: Int) throws -> [String: Double] {
        let response = try HTTPExchange.send(host: "127.0.0.1", port: port, timeout: 30, method: "GET", path: "/metrics",
                                             bearer: nil, contentType: nil, body: [])
        guard response.status == 200 else { throw DaemonError(description: "GET /metrics answered \(response.status)") }
        return try parseExposition(String(decoding: response.body, as: UTF8.self))
    }

    /// A word no mail, key or configuration has by chance.
    static func word() -> String { "zq" + (0..<10).map { _ in "abcdefghijkmnpqrstuvwxyz".randomElement()! }.map(String.init).joined() }

    /// A mail from `sender` to `to`, its subject and body of random words, `extra` header lines before the body.
    static func mail(from sender: String = "alice@example.org", to: [String], subject: String, body: String,
                     headers: String = "") -> [UInt8] {
        Array(("From: \(sender)\nTo: \(to.joined(separator: ", "))\nSubject: \(subject)\nMessage-ID: <\(UUID().uuidString)@mail.test>\n"
               + headers + "\n" + body + "\n").utf8)
    }

    /// The daemon's JSON lines, each parsed by Python's json module (one object a line, or the test fails).
    static func jsonLines(_ daemon: ResidentProcess) throws -> [[String: Any]] {
        let lines = daemon.lines.filter { $0.hasPrefix("mailsec: {") }.map { String($0.dropFirst("mailsec: ".count)) }
        let file = daemon.folder + "/lines.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let check = try run("/usr/bin/env", ["python3", "-c", "import json,sys\nfor l in open(sys.argv[1]): json.loads(l)\n", file])
        #expect(check.status == 0, "python3's json: \(String(decoding: check.stderr, as: UTF8.self))")
        return try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    @Test("every outcome, in random numbers: each counter moves by exactly its mails, the histogram counts every mail, gpg starts as a counting gpg saw them; JSON lines hold no address, subject or body")
    func outcomesCounted() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let (environment, calls) = try ResidentGnuPGTests.countingPath(in: home)
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port, extra: "log_format = \"json\"",
                                                                      listen: "metrics_address = \"127.0.0.1:0\""),
                                             home: home, environment: environment)
            let port = try Self.metricsPort(daemon)
            let before = try Self.scrape(port)
            for outcome in ["sent", "deferred", "refused", "rejected"] {
                #expect(before["mailsec_filter_mails_total{outcome=\"\(outcome)\"}"] == 0, "every outcome shown from the start")
            }
            let gpgBefore = before.value("mailsec_gpg_processes_started_total")
            let logBefore = ResidentGnuPGTests.calls(calls).count
            let connection = try daemon.connect()
            defer { connection.quit() }
            var secrets: [String] = []
            func stranger() -> String {
                let address = Self.word() + "@" + Self.word() + ".test"
                secrets.append(address)
                return address
            }
            func words() -> (subject: String, body: String) {
                let subject = Self.word(), body = Self.word()
                secrets += [subject, body]
                return (subject, body)
            }
            let counts = (letters: Int.random(in: 1...3), postcards: Int.random(in: 1...3), withheld: Int.random(in: 1...2),
                          deferred: Int.random(in: 1...2), refused: Int.random(in: 1...2), rejected: Int.random(in: 1...2))
            for _ in 0..<counts.letters {  // Bob has a key: a letter.
                let (subject, body) = words()
                #expect(send(connection, Self.mail(to: ["bob@example.org"], subject: subject, body: body), to: ["bob@example.org"]).code == 250)
            }
            for _ in 0..<counts.postcards {  // Nobody's key: a censored postcard.
                let (subject, body) = words(), to = stranger()
                let text = "The code is [[private]]\(body)[[/private]]."
                #expect(send(connection, Self.mail(to: [to], subject: subject, body: text), to: [to]).code == 250)
            }
            for _ in 0..<counts.withheld {  // A PDF beside a marked span: the postcard withholds it.
                let to = stranger(), (subject, body) = words()
                let pdf = Data("%PDF-1.4 \(body)".utf8).base64EncodedString()
                let text = "--b\nContent-Type: text/plain\n\nsee [[private]]\(body)[[/private]]\n--b\nContent-Type: application/pdf\n"
                    + "Content-Disposition: attachment; filename=\"r.pdf\"\nContent-Transfer-Encoding: base64\n\n\(pdf)\n--b--"
                let bytes = Self.mail(to: [to], subject: subject, body: text,
                                      headers: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n")
                #expect(send(connection, bytes, to: [to]).code == 250)
            }
            for _ in 0..<counts.deferred {  // A sender without a secret key cannot sign Bob's letter: 451.
                let (subject, body) = words(), from = stranger()
                #expect(send(connection, Self.mail(from: from, to: ["bob@example.org"], subject: subject, body: body), from: from,
                             to: ["bob@example.org"]).code == 451)
            }
            for _ in 0..<counts.refused {  // A letter required for a recipient without a key: 554 5.7.1.
                let (subject, body) = words(), to = stranger()
                #expect(send(connection, Self.mail(to: [to], subject: subject, body: body, headers: "X-Mailsec-Mode: require-letter\n"),
                             to: [to]).code == 554)
            }
            for _ in 0..<counts.rejected {  // Unbalanced markers: 554 5.6.0.
                let (subject, body) = words(), to = stranger()
                #expect(send(connection, Self.mail(to: [to], subject: subject, body: "[[private]]\(body)"), to: [to]).code == 554)
            }
            let after = try Self.scrape(port)
            func moved(_ series: String) -> Int { Int(after.value(series) - before.value(series)) }
            let sent = counts.letters + counts.postcards + counts.withheld
            let all = sent + counts.deferred + counts.refused + counts.rejected
            #expect(moved("mailsec_filter_mails_total{outcome=\"sent\"}") == sent)
            #expect(moved("mailsec_filter_mails_total{outcome=\"deferred\"}") == counts.deferred)
            #expect(moved("mailsec_filter_mails_total{outcome=\"refused\"}") == counts.refused)
            #expect(moved("mailsec_filter_mails_total{outcome=\"rejected\"}") == counts.rejected)
            #expect(moved("mailsec_filter_copies_total{kind=\"letter\"}") == counts.letters)
            #expect(moved("mailsec_filter_copies_total{kind=\"postcard\"}") == counts.postcards + counts.withheld)
            #expect(moved("mailsec_filter_censored_postcards_total") == counts.postcards + counts.withheld)
            #expect(moved("mailsec_filter_withheld_parts_total") == counts.withheld)
            #expect(moved("mailsec_filter_recipient_decisions_total{decision=\"letter\",reason=\"key\"}") == counts.letters + counts.deferred)
            #expect(moved("mailsec_filter_recipient_decisions_total{decision=\"postcard\",reason=\"no-key\"}") == counts.postcards + counts.withheld)
            #expect(moved("mailsec_filter_recipient_decisions_total{decision=\"refused\",reason=\"no-key\"}") == counts.refused)
            #expect(moved("mailsec_filter_mail_duration_seconds_count") == all)
            #expect(moved("mailsec_filter_mail_duration_seconds_bucket{le=\"+Inf\"}") == all)
            #expect(after.value("mailsec_filter_mails_in_progress") == 0 && after.value("mailsec_filter_mails_waiting") == 0)
            let started = ResidentGnuPGTests.calls(calls).count - logBefore
            #expect(started > 0)
            #expect(Int(after.value("mailsec_gpg_processes_started_total") - gpgBefore) == started,
                    "the counting gpg saw \(started): \(ResidentGnuPGTests.calls(calls))")

            let records = try Self.jsonLines(daemon)
            #expect(records.count == all, "one line per mail")
            #expect(records.filter { $0["status"] as? String == "sent" }.count == sent)
            #expect(records.allSatisfy { $0["duration_seconds"] != nil && $0["queue_id"] != nil && $0["sender"] == nil })
            let log = daemon.log
            for secret in secrets { #expect(!log.contains(secret), "\(secret) in the log") }
        }
    }

    @Test("log_addresses = true: the envelope's addresses are in the plain line, and still no subject or body")
    func addressesWhenAllowed() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port, extra: "log_addresses = true"), home: home)
            let connection = try daemon.connect()
            defer { connection.quit() }
            let to = Self.word() + "@" + Self.word() + ".test", subject = Self.word(), body = Self.word()
            #expect(send(connection, Self.mail(to: [to], subject: subject, body: body), to: [to, "bob@example.org"]).code == 250)
            let line = try daemon.waitFor("status=sent")
            #expect(line.contains("from=<alice@example.org>") && line.contains("<\(to)>") && line.contains("<bob@example.org>"), "\(line)")
            #expect(!daemon.log.contains(subject) && !daemon.log.contains(body))
            #expect(daemon.lines.filter { $0.contains("metrics on") }.isEmpty, "no metrics endpoint unless configured")
        }
    }

    @Test("the pipe filter writes the same JSON line: it parses with python3's json, and holds no address, subject or body")
    func pipeFilterJSON() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let config = try filterConfig(home, reinjectPort: peer.port, extra: "log_format = \"json\"")
            let to = Self.word() + "@" + Self.word() + ".test", subject = Self.word(), body = Self.word()
            let result = try run(Paths.mailsecExecutable.path, ["filter", "--config", config, "-f", "alice@example.org", "--", to, "bob@example.org"],
                                 input: Self.mail(to: [to], subject: subject, body: "[[private]]\(body)[[/private]]"),
                                 environment: home.environment)
            let errors = String(decoding: result.stderr, as: UTF8.self)
            try #require(result.status == 0, "\(errors)")
            let lines = errors.split(separator: "\n").filter { $0.hasPrefix("mailsec: {") }.map { String($0.dropFirst(9)) }
            #expect(lines.count == 1, "\(errors)")
            let check = try run("/usr/bin/env", ["python3", "-c", "import json,sys\nr=json.loads(sys.stdin.read())\nassert r['status']=='sent' and r['letters']==1 and r['postcards']==1 and r['censored_postcards']==1, r\n"],
                                input: Array((lines.first ?? "").utf8))
            #expect(check.status == 0, "\(String(decoding: check.stderr, as: UTF8.self))")
            for secret in [to, subject, body] { #expect(!errors.contains(secret)) }
        }
    }

    @Test("a metrics address already in use: the daemon says so in one line and exits 75, taking no mail")
    func metricsAddressInUse() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let peer = try RecordingSMTPServer()  // holds its port
            let config = try filterConfig(home, reinjectPort: peer.port, listen: "metrics_address = \"127.0.0.1:\(peer.port)\"")
            let result = try run(Paths.mailsecExecutable.path, ["filter", "--listen", "127.0.0.1:0", "--config", config],
                                 environment: home.environment)
            let errors = String(decoding: result.stderr, as: UTF8.self)
            #expect(result.status == 75, "\(errors)")
            #expect(errors.contains("metrics address 127.0.0.1:\(peer.port)") && !errors.contains("listening on"), "\(errors)")
        }
    }

    @Test("a scrape under load answers: mails on four connections at once while the endpoint is scraped again and again")
    func scrapeUnderLoad() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port, extra: "log_format = \"json\"",
                                                                      listen: "metrics_address = \"127.0.0.1:0\""), home: home)
            let port = try Self.metricsPort(daemon)
            let perConnection = Int.random(in: 4...8), connections = 4
            let replies = Mutex250()
            let group = DispatchGroup()
            for _ in 0..<connections {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    guard let connection = try? daemon.connect() else { return }
                    defer { connection.quit() }
                    for _ in 0..<perConnection {
                        let to = ["bob@example.org", "nobody@example.org"]
                        if send(connection, Self.mail(to: to, subject: "s", body: "b [[private]]x[[/private]]"), to: to).code == 250 {
                            replies.add()
                        }
                    }
                }
            }
            var scrapes = 0, seen = 0.0
            while group.wait(timeout: .now()) == .timedOut {
                let samples = try Self.scrape(port)
                let sent = samples.value("mailsec_filter_mails_total{outcome=\"sent\"}")
                #expect(sent >= seen, "a counter never goes back")
                seen = sent
                scrapes += 1
            }
            let final = try Self.scrape(port)
            #expect(replies.count == connections * perConnection)
            #expect(Int(final.value("mailsec_filter_mails_total{outcome=\"sent\"}")) == replies.count)
            #expect(Int(final.value("mailsec_filter_mail_duration_seconds_count")) == replies.count)
            #expect(scrapes > 0)
            #expect(try Self.jsonLines(daemon).count == replies.count)
        }
    }
}

/// Counts 250s from several threads.
final class Mutex250: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = 0
    func add() { lock.withLock { value += 1 } }
    var count: Int { lock.withLock { value } }
}
