import Foundation
import TestSupport
import Testing

/// One error line for every configuration file: `FILE:LINE: problem`, the
/// same through `mailsec config check`, `mailsec filter --listen
/// --check-config` and the pipe filter's deferral.
@Suite("Configuration problems: one line FILE:LINE: problem, the same through config check and filter --check-config", .serialized)
struct ConfigLineCLITests {
    /// A publishing token file (0600) in `folder`.
    static func token(in folder: String) -> String {
        let token = folder + "/token"
        FileManager.default.createFile(atPath: token, contents: Data("0123456789abcdef0123".utf8), attributes: [.posixPermissions: 0o600])
        return token
    }

    /// A valid filter.toml, one key a line: its `[reading]` table on lines
    /// 4 to 8 and `[markers]` on 9 to 11, where a config.toml has them too.
    static func filterLines(_ home: String, token: String) -> [String] {
        ["gnupg_home = \"\(home)\"", "[journal]", "directory = \"\(home)/journal\""] + sharedLines(token: token)
            + ["[reinject]", "method = \"smtp\"", "port = 10026", "timeout = 60", "final_timeout = 90",
               "[listen]", "address = \"127.0.0.1:0\"", "max_connections = 100", "parallel = 4", "idle_timeout = 300",
               "drain_timeout = 30", "[continuity]", "directory = \"\(home)/continuity\""]
    }

    /// The tables both files take: `[reading]` and `[markers]`.
    static func sharedLines(token: String) -> [String] {
        ["[reading]", "publish_url = \"http://127.0.0.1:9\"", "token_file = \"\(token)\"", "timeout = 30", "lifetime_days = 30",
         "[markers]", "open = \"[[private]]\"", "close = \"[[/private]]\""]
    }

    @Test("the same malformed [reading] or policy line at the same place: config check and filter --check-config print the identical line")
    func identicalLine() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let token = Self.token(in: home.path)
            let path = home.path + "/mailsec.toml"
            let filter = Self.filterLines(home.path, token: token)
            let user = ["from = \"alice@example.org\"", "[submission]", "host = \"mail.example.org\""] + Self.sharedLines(token: token)
            for (index, bad, problem) in [(7, "timeout = \"soon\"", "reading.timeout: must be a whole number from 1 to 86400"),
                                           (8, "lifetime_days = 0", "reading.lifetime_days: must be a whole number from 1 to 3650"),
                                           (5, "publish_url = 8080", "reading.publish_url: must be a string"),
                                           (8, "colour = \"red\"", "reading.colour: unknown key"),
                                           (11, "close = 7", "markers.close: must be a string")] {
                var lines: [[String]] = [filter, user]
                for kind in lines.indices { lines[kind][index - 1] = bad }
                try (lines[0].joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
                let listen = try mailsec(["filter", "--listen", "--check-config", "--config", path], home: home)
                try (lines[1].joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
                chmod(path, 0o600)
                let checked = try mailsec(["config", "check", "--config", path], home: home)
                let line = "\(path):\(index): \(problem)\n"
                #expect(listen.status == 78 && listen.errors == line, "\(bad): \(listen.status) \(listen.errors)")
                #expect(checked.status == 78 && checked.output == line, "\(bad): \(checked.status) \(checked.output)")
                #expect(listen.errors == checked.output)
            }
        }
    }

    @Test("several wrong keys in filter.toml: --check-config names every one, in the file's order; the pipe filter defers naming the first")
    func everyProblem() throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let token = Self.token(in: home.path)
            let path = home.path + "/filter.toml"
            let filter = Self.filterLines(home.path, token: token)
            // (line, the wrong line, the start of its problem): one key each, in four tables.
            let wrongs = [(7, "timeout = \"soon\"", "reading.timeout: must be a whole number"),
                          (8, "lifetime_days = 0", "reading.lifetime_days: must be a whole number"),
                          (11, "close = 7", "markers.close: must be a string"),
                          (13, "method = \"pigeon\"", "reinject.method: unknown value"),
                          (14, "port = 0", "reinject.port: must be a whole number"),
                          (16, "final_timeout = \"later\"", "reinject.final_timeout: must be a whole number"),
                          (24, "folder = \"x\"", "continuity.folder: unknown key")]
            for round in 0..<6 {
                let chosen = wrongs.shuffled(using: &random).prefix(Int.random(in: 2...4, using: &random)).sorted { $0.0 < $1.0 }
                var lines = filter
                for (line, text, _) in chosen { lines[line - 1] = text }
                try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
                let what = "seed \(seed), round \(round): lines \(chosen.map(\.0))"
                let checked = try mailsec(["filter", "--listen", "--check-config", "--config", path], home: home)
                #expect(checked.status == 78, "\(what): \(checked.status)")
                let said = checked.errors.split(separator: "\n").map(String.init)
                #expect(said.count == chosen.count, "\(what): \(checked.errors)")
                for (line, (number, _, problem)) in zip(said, chosen) {
                    #expect(line.hasPrefix("\(path):\(number): \(problem)"), "\(what): \(line)")
                }
                let piped = try mailsec(["filter", "--config", path, "-f", "alice@example.org", "--", "bob@example.org"],
                                        input: Array("From: alice@example.org\n\nx\n".utf8), home: home)
                #expect(piped.status == 75, "\(what): \(piped.errors)")
                expectOneLine(piped)
                #expect(said.first.map { piped.errors.contains($0) } ?? false, "\(what): \(piped.errors)")
            }
        }
    }

    /// One line of a file, and what a corruption of it does.
    enum Corruption: CaseIterable {
        case wrongType, outOfRange, unknownKey, duplicateKey, badTOML
    }

    /// `lines` with line `index` (0-based, a `key = value` line) corrupted;
    /// the 1-based line the problem is on, or nil when this corruption does
    /// not apply to that line. `secret` goes where a value would.
    static func corrupt(_ lines: [String], at index: Int, _ corruption: Corruption, secret: String,
                        random: inout SeededRandom) -> (text: [String], line: Int)? {
        let parts = lines[index].split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2 else { return nil }
        let (key, value) = (parts[0], parts[1])
        let isNumber = Int(value) != nil
        var text = lines
        switch corruption {
        case .wrongType:
            // A string where a number or true/false belongs (the secret in it), a number or a list where a string does.
            let replacement = isNumber || value == "true" || value == "false" ? "\"\(secret)\""
                : ["42", "true", "[1, 2]", "{ a = 1 }"].randomElement(using: &random)!
            text[index] = "\(key) = \(replacement)"
            return (text, index + 1)
        case .outOfRange:
            guard isNumber else { return nil }
            // keep_sent_days takes 0 (not kept at all); every other number here starts at 1.
            text[index] = "\(key) = " + (key == "keep_sent_days" ? ["-1", "3651"] : ["0", "-1", "9223372036854775807", "4294967297000"])
                .randomElement(using: &random)!
            return (text, index + 1)
        case .unknownKey:
            text.insert(["colour = 1", "passwd = \"\(secret)\"", "time_out = 30"].randomElement(using: &random)!, at: index + 1)
            return (text, index + 2)
        case .duplicateKey:
            text.insert(lines[index], at: index + 1)
            return (text, index + 2)
        case .badTOML:
            text[index] = ["\(key) = \(secret)", "\(key) = \"\(secret)", "\(key) = '\(secret)", "\(key) = [\(secret)",
                           "\(key) \"\(secret)\"", "\(key) = \"\(secret)\" \(secret)", "\(key) = 1979-05-27T\(secret)"]
                .randomElement(using: &random)!
            return (text, index + 1)
        }
    }

    /// A secret-looking value, as ConfigErrorCLITests makes them (the last one is random).
    static func secret(_ random: inout SeededRandom) -> String { ConfigErrorCLITests.secrets(&random).last! }

    /// Checks that `output` is exactly one line `path:line: …` without `secret`.
    static func expectLocated(_ output: String, path: String, line: Int, secret: String, _ what: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty, "\(what): \(output)", sourceLocation: sourceLocation)
        #expect(output.hasPrefix("\(path):\(line): "), "\(what): \(output)", sourceLocation: sourceLocation)
        #expect(!output.contains(secret), "\(what): the line repeats the secret: \(output)", sourceLocation: sourceLocation)
    }

    @Test("random single-line corruptions of a valid filter.toml and config.toml: 78 and one line FILE:LINE: naming the line, no secret")
    func randomCorruptions() throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let token = Self.token(in: home.path)
            let filterPath = home.path + "/filter.toml"
            let userPath = home.path + "/config.toml"
            let filter = Self.filterLines(home.path, token: token)
            let password = Self.secret(&random)
            let user = ["from = \"alice@example.org\"", "keep_sent_days = 7", "mode = \"standard\"", "invite = false",
                        "[submission]", "host = \"mail.example.org\"", "port = 587", "security = \"starttls\"", "username = \"alice\"",
                        "password = \"\(password)\"", "timeout = 60", "password_timeout = 30",
                        "[reading]", "publish_url = \"http://127.0.0.1:9\"", "token_file = \"\(token)\"", "timeout = 30",
                        "notice = \"letter-required\""]
            // The valid files are valid.
            try (filter.joined(separator: "\n") + "\n").write(toFile: filterPath, atomically: true, encoding: .utf8)
            let fine = try mailsec(["filter", "--listen", "--check-config", "--config", filterPath], home: home)
            #expect(fine.status == 0 && fine.errors.isEmpty, "\(fine.errors)")
            try (user.joined(separator: "\n") + "\n").write(toFile: userPath, atomically: true, encoding: .utf8)
            chmod(userPath, 0o600)
            let ok = try mailsec(["config", "check", "--config", userPath], home: home)
            #expect(ok.status == 0 && ok.output == "\(userPath): ok\n", "\(ok.output)")

            var tried = 0
            while tried < 80 {
                let secret = Self.secret(&random)
                let corruption = Corruption.allCases.randomElement(using: &random)!
                let isFilter = tried % 2 == 0
                let lines = isFilter ? filter : user
                let index = Int.random(in: 0..<lines.count, using: &random)
                guard let (text, line) = Self.corrupt(lines, at: index, corruption, secret: secret, random: &random) else { continue }
                tried += 1
                let what = "seed \(seed), \(corruption) of line \(index + 1): \(text[line - 1])"
                if isFilter {
                    try (text.joined(separator: "\n") + "\n").write(toFile: filterPath, atomically: true, encoding: .utf8)
                    let checked = try mailsec(["filter", "--listen", "--check-config", "--config", filterPath], home: home)
                    #expect(checked.status == 78, "\(what): \(checked.status)")
                    Self.expectLocated(checked.errors, path: filterPath, line: line, secret: secret, what)
                    // The pipe filter defers (75) with the same located line in its one line.
                    let piped = try mailsec(["filter", "--config", filterPath, "-f", "alice@example.org", "--", "bob@example.org"],
                                            input: Array("From: alice@example.org\n\nx\n".utf8), home: home)
                    #expect(piped.status == 75, "\(what): \(piped.errors)")
                    expectOneLine(piped)
                    #expect(piped.errors.contains(checked.errors.dropLast()), "\(what): \(piped.errors)")
                } else {
                    try (text.joined(separator: "\n") + "\n").write(toFile: userPath, atomically: true, encoding: .utf8)
                    chmod(userPath, 0o600)
                    let checked = try mailsec(["config", "check", "--config", userPath], home: home)
                    #expect(checked.status == 78, "\(what): \(checked.status)")
                    Self.expectLocated(checked.output, path: userPath, line: line, secret: secret, what)
                    #expect(!checked.output.contains(password) && !checked.errors.contains(password), "\(what): \(checked.output)")
                }
            }
        }
    }

    @Test("with [store] key sync, --check-config wants the folder holding gnupg_home writable by the running user")
    func gnupgHomeParentWritable() throws {
        let parent = try makePrivateDirectory(prefix: "ms-keysync")
        let own = try makePrivateDirectory(prefix: "ms-keysync-own")
        defer {
            try? FileManager.default.removeItem(atPath: parent)
            try? FileManager.default.removeItem(atPath: own)
        }
        let home = parent + "/gnupg"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        FileManager.default.createFile(atPath: home + "/pubring.kbx", contents: Data(), attributes: [.posixPermissions: 0o644])
        let path = own + "/filter.toml"
        let asRoot = getuid() == 0
        // As root every folder is writable: the check then runs as nobody, who owns `own` (config, journal, spool).
        if asRoot { chown(own, 65534, 65534) }
        /// --check-config on `text`, as nobody when we are root.
        func check(_ text: String) throws -> ProcessResult {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            if asRoot { chown(path, 65534, 65534) }
            let arguments = ["filter", "--listen", "--check-config", "--config", path]
            return asRoot
                ? try run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Paths.mailsecExecutable.path] + arguments,
                          environment: ["PATH": "/usr/bin:/bin", "TMPDIR": own])
                : try mailsec(arguments, environment: ["TMPDIR": own])
        }
        let plain = "log = \"none\"\ngnupg_home = \"\(home)\"\n[reinject]\nmethod = \"smtp\"\n[journal]\ndirectory = \"\(own)/journal\"\n"
        let store = plain + "[store]\nurl = \"postgres://mailsec@127.0.0.1:5432/mailsec\"\n"
        chmod(parent, 0o555)
        // Without [store] the home is only read: fine.
        let readOnly = try check(plain)
        #expect(readOnly.status == 0 && readOnly.errors.isEmpty, "\(readOnly.errors)")
        // With it, the home becomes a link swapped in its folder: that folder must be ours to write.
        let refused = try check(store)
        #expect(refused.status == 78, "\(refused.errors)")
        #expect(refused.errors == "\(path):2: gnupg_home: with [store] published keys are synced into \(home).keys and gnupg_home "
                + "becomes a link swapped beside it, but \(parent) is not writable by this user\n", "\(refused.errors)")
        if asRoot { chown(parent, 65534, 65534) }
        chmod(parent, 0o755)
        let writable = try check(store)
        #expect(writable.status == 0 && writable.errors.isEmpty, "\(writable.errors)")
    }
}
