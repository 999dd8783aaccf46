import Foundation
import TestSupport
import Testing

/// What happened to one generated mail.
struct Outcome {
    let sample: Sample
    var redactStatus: Int32 = -1
    var encryptStatus: Int32 = -1
    var copies: [CopyToRead] = []
    var views = 0
    var hits: [Hit] = []
    /// Broken promises other than a leak: a bad exit, a disagreement, half-written output.
    var problems: [String] = []

    var refused: Bool { redactStatus == 65 && encryptStatus == 65 }
    var censored: Bool { redactStatus == 0 && encryptStatus == 0 }
    var leaked: Bool { hits.contains { !$0.sniffed } }
    /// Every hit came from a sniffed charset only.
    var sniffedOnly: Bool { !hits.isEmpty && !leaked }

    /// How to make this mail again, alone.
    var reproduce: String {
        "MAILSEC_ADVERSARIAL_MAIL=\(sample.attackClass.rawValue):\(sample.seed)\(sample.hostile ? "" : ":friendly")"
    }

    func report(limit: Int = 3000) -> String {
        let views = Dictionary(grouping: hits, by: \.found).map { found, hits in
            let names = Array(NSOrderedSet(array: hits.map(\.view))) as? [String] ?? []
            return "  \(found == "marker" ? "a marker" : "secret \(found)") in \(names.count) readings, e.g. " + names.prefix(3).joined(separator: "; ")
        }.sorted()
        let mail = String(decoding: sample.mail, as: UTF8.self)
        return "\(sample.attackClass.rawValue) \(sample.variant) [\(sample.hostile ? "hostile" : "friendly")] "
            + "redact \(redactStatus), encrypt \(encryptStatus); \(reproduce)\n"
            + (problems.map { "  " + $0 } + views).joined(separator: "\n")
            + "\n--- mail ---\n" + String(mail.prefix(limit)) + (mail.count > limit ? "\n[… \(mail.count - limit) more]" : "")
    }
}

/// Issue 12 A, tried as an attacker would: for every generated mail either
/// `redact` and `encrypt` both refuse (65, one line, nothing written) or every
/// copy a postcard recipient gets passes every view (GMime, Python's email,
/// HTML/CSS/data:/rendering) without a secret word or a marker; letters show
/// none in their outer header fields. Friendly mails of the same shapes must
/// be censored, not refused, so that "refuse everything" cannot pass.
///
/// `MAILSEC_ADVERSARIAL_COUNT` (hostile mails per class, default 12),
/// `MAILSEC_ADVERSARIAL_SEED` (default: a fresh one, printed),
/// `MAILSEC_ADVERSARIAL_MAIL=A4:SEED[:friendly]` (one mail, printed),
/// `MAILSEC_ADVERSARIAL_REPORT=FILE` (every failing mail, written out).
@Suite("Adversarial mails: read it or refuse it", .serialized)
struct AdversarialTests {
    static let environment = ProcessInfo.processInfo.environment

    @Test("hostile mails are refused or censored in every reading; friendly ones are censored; redact and encrypt agree")
    func hostileMails() throws {
        let seed = Self.environment["MAILSEC_ADVERSARIAL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        let count = Self.environment["MAILSEC_ADVERSARIAL_COUNT"].flatMap { Int($0) } ?? 12
        let work = try makePrivateDirectory(prefix: "ms-adv")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let started = Date()
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let armored = try home.gpg(["--armor", "--trust-model", "always", "--encrypt", "-r", "bob@example.org"],
                                       input: Array("An already encrypted note.\n".utf8))
            try #require(armored.status == 0, "gpg --encrypt: \(armored.errors)")
            let ciphertext = armored.output.trimmingCharacters(in: .whitespacesAndNewlines)
            let samples = Self.samples(seed: seed, count: count, ciphertext: ciphertext)
            var outcomes: [Outcome] = []
            for (index, sample) in samples.enumerated() {
                outcomes.append(try Self.run(sample, folder: work + "/\(index)", home: home))
            }
            // Every copy a recipient gets, read by GMime here and by Python in one go.
            var jobs: [(copy: CopyToRead, tokens: [String])] = []
            for index in outcomes.indices {
                for copy in outcomes[index].copies {
                    var search = ReadingSearch(tokens: outcomes[index].sample.tokens)
                    GMimeView.read(copy, into: &search)
                    outcomes[index].views += search.views
                    outcomes[index].hits += search.hits.map { Hit(view: "\(copy.label): \($0.view)", found: $0.found) }
                    jobs.append((copy, outcomes[index].sample.tokens))
                }
            }
            let python = try PythonViews.read(jobs, folder: work)
            for index in outcomes.indices {
                for copy in outcomes[index].copies {
                    guard let result = python[copy.path] else {
                        outcomes[index].problems.append("no Python reading of \(copy.label)")
                        continue
                    }
                    outcomes[index].views += result.views
                    outcomes[index].hits += result.hits.map { Hit(view: "\(copy.label): python \($0.view)", found: $0.found) }
                    if let error = result.error { outcomes[index].problems.append("Python could not read \(copy.label): \(error)") }
                }
            }
            let table = Self.table(outcomes, seed: seed, seconds: Date().timeIntervalSince(started))
            print(table)
            let failing = outcomes.filter { $0.leaked || !$0.problems.isEmpty }
            if let path = Self.environment["MAILSEC_ADVERSARIAL_REPORT"] {
                let sniffed = outcomes.filter { $0.sniffedOnly && $0.problems.isEmpty }
                try (table + "\n\n" + failing.map { $0.report(limit: 100_000) }.joined(separator: "\n\n")
                    + (sniffed.isEmpty ? "" : "\n\nFound only in sniffed charsets (not failures):\n\n" + sniffed.map { $0.report(limit: 100_000) }.joined(separator: "\n\n")))
                    .write(toFile: path, atomically: true, encoding: .utf8)
            }
            if samples.count == 1, let only = outcomes.first { print(only.report(limit: 100_000)) }
            for outcome in failing {
                Issue.record("\(outcome.leaked ? "LEAK" : "BROKEN PROMISE") (seed \(seed)): \(outcome.report())")
            }
        }
    }

    /// Hostile and friendly mails of every class, or the one mail asked for.
    static func samples(seed: UInt64, count: Int, ciphertext: String) -> [Sample] {
        if let only = environment["MAILSEC_ADVERSARIAL_MAIL"] {
            let parts = only.split(separator: ":")
            if parts.count >= 2, let attackClass = AttackClass(rawValue: String(parts[0])), let mailSeed = UInt64(parts[1]) {
                return [HostileMailGenerator.sample(attackClass, hostile: parts.count < 3, seed: mailSeed, ciphertext: ciphertext)]
            }
        }
        var samples: [Sample] = []
        for (index, attackClass) in AttackClass.allCases.enumerated() {
            // XOR with an odd constant that is not SplitMix's step: classes must not share a sequence.
            var random = SeededRandom(state: seed ^ (UInt64(index + 1) &* 0xD1B54A32D192ED03))
            for number in 0..<(count + max(2, count / 3)) {
                samples.append(HostileMailGenerator.sample(attackClass, hostile: number < count, seed: random.next(), ciphertext: ciphertext))
            }
        }
        return samples
    }

    /// Runs `mailsec redact` and `mailsec encrypt --out` on one mail and checks
    /// how each ended; the copies to read are collected for the views.
    static func run(_ sample: Sample, folder: String, home: TemporaryGnuPGHome) throws -> Outcome {
        var outcome = Outcome(sample: sample)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let mailPath = folder + "/mail.eml", out = folder + "/out"
        _ = FileManager.default.createFile(atPath: mailPath, contents: Data(sample.mail), attributes: [.posixPermissions: 0o600])
        let mailsec = Paths.mailsecExecutable.path
        let redact = try TestSupport.run(mailsec, ["redact", mailPath], environment: home.environment)
        let encrypt = try TestSupport.run(mailsec, ["encrypt", "--out", out, mailPath], environment: home.environment)
        outcome.redactStatus = redact.status
        outcome.encryptStatus = encrypt.status

        for (command, result) in [("redact", redact), ("encrypt", encrypt)] {
            let errors = result.errors.lowercased()
            for token in sample.tokens where errors.contains(token) {
                outcome.hits.append(Hit(view: "\(command) stderr", found: token))
            }
            switch result.status {
            case 0: break
            case 65:
                let lines = result.errors.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                if lines.count != 1 || !result.errors.hasPrefix("mailsec: ") {
                    outcome.problems.append("\(command) refused without exactly one 'mailsec: ' line: \(result.errors.prefix(300))")
                }
            default:
                outcome.problems.append("\(command) exited \(result.status) (0 or 65 expected): \(result.errors.prefix(300))")
            }
        }
        if redact.status == 0 {
            if redact.stdout.isEmpty { outcome.problems.append("redact exited 0 and wrote nothing") }
            let path = folder + "/redacted.eml"
            _ = FileManager.default.createFile(atPath: path, contents: Data(redact.stdout))
            outcome.copies.append(CopyToRead(label: "redact", path: path, scope: .all))
        } else if !redact.stdout.isEmpty {
            outcome.problems.append("redact exited \(redact.status) but wrote \(redact.stdout.count) bytes")
        }
        let written = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
        if encrypt.status == 0 {
            outcome.copies += try copies(in: out)
        } else if !written.isEmpty {
            outcome.problems.append("encrypt exited \(encrypt.status) but left \(written.sorted().joined(separator: ", "))")
        }
        if (redact.status == 0) != (encrypt.status == 0) {
            outcome.problems.append("redact and encrypt disagree: redact \(redact.status), encrypt \(encrypt.status)")
        }
        if !sample.hostile && !outcome.censored {
            outcome.problems.append("a friendly mail was not censored (redact \(redact.status), encrypt \(encrypt.status)): refusing everything is no answer")
        }
        return outcome
    }

    /// The copies `encrypt` wrote, from its manifest: postcards and unchanged
    /// copies are read whole, letters in their outer header section.
    static func copies(in out: String) throws -> [CopyToRead] {
        let manifest = try #require(FileManager.default.contents(atPath: out + "/manifest.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: manifest) as? [String: Any])
        let copies = try #require(object["copies"] as? [[String: Any]])
        return copies.compactMap { copy in
            guard let file = copy["file"] as? String, let kind = copy["kind"] as? String else { return nil }
            return CopyToRead(label: "encrypt \(kind) \(file)", path: out + "/" + file, scope: kind == "letter" ? .headers : .all)
        }
    }

    static func table(_ outcomes: [Outcome], seed: UInt64, seconds: Double) -> String {
        func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text : text + String(repeating: " ", count: width - text.count) }
        var lines = ["Adversarial mails (seed \(seed), \(String(format: "%.0f", seconds)) s): per class",
                     pad("class", 6) + pad("what", 32) + pad("mails", 8) + pad("friendly", 10) + pad("views", 9)
                         + pad("refused", 9) + pad("censored", 10) + pad("leaked", 8) + pad("broken", 8) + "sniffed"]
        for attackClass in AttackClass.allCases {
            let mine = outcomes.filter { $0.sample.attackClass == attackClass }
            guard !mine.isEmpty else { continue }
            lines.append(pad(attackClass.rawValue, 6) + pad(attackClass.title, 32) + pad("\(mine.filter(\.sample.hostile).count)", 8)
                + pad("\(mine.filter { !$0.sample.hostile }.count)", 10) + pad("\(mine.map(\.views).reduce(0, +))", 9)
                + pad("\(mine.filter(\.refused).count)", 9) + pad("\(mine.filter(\.censored).count)", 10)
                + pad("\(mine.filter(\.leaked).count)", 8) + pad("\(mine.filter { !$0.problems.isEmpty }.count)", 8)
                + "\(mine.filter(\.sniffedOnly).count)")
        }
        lines.append(pad("all", 38) + pad("\(outcomes.filter(\.sample.hostile).count)", 8) + pad("\(outcomes.filter { !$0.sample.hostile }.count)", 10)
            + pad("\(outcomes.map(\.views).reduce(0, +))", 9) + pad("\(outcomes.filter(\.refused).count)", 9)
            + pad("\(outcomes.filter(\.censored).count)", 10) + pad("\(outcomes.filter(\.leaked).count)", 8)
            + pad("\(outcomes.filter { !$0.problems.isEmpty }.count)", 8) + "\(outcomes.filter(\.sniffedOnly).count)")
        return lines.joined(separator: "\n")
    }
}
