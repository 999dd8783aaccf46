import Foundation
import TestSupport
import Testing

/// Alice's world for the composing commands: her GnuPG home (her secret
/// key, Bob's and Carol's public keys), her configuration and store in a
/// private folder, and a real SMTP peer behind real TLS (the recording
/// server behind a TLS proxy with a throwaway CA) as her submission server.
/// `close()` stops them all and removes everything.
final class ComposeWorld: @unchecked Sendable {
    // @unchecked: every property is set in init; each test owns its world.
    let home: TemporaryGnuPGHome
    let folder: String
    let server: RecordingSMTPServer
    let proxy: TLSProxy
    var config: String { folder + "/config.toml" }
    var store: String { folder + "/data/mailsec" }
    var sent: String { folder + "/sent" }
    var runtime: String { folder + "/run" }

    /// `trusted`: false leaves out the CA, so TLS verification fails (a permanent failure).
    init(trusted: Bool = true, failing: Set<Int> = [], policy: String = "") throws {
        home = try TemporaryGnuPGHome()
        try home.importFixtures(["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"])
        folder = try makePrivateDirectory(prefix: "ms-cmp")
        server = try RecordingSMTPServer(failing: failing)
        proxy = try TLSProxy(backendPort: server.port)
        try writeConfig(trusted: trusted, policy: policy)
        mkdir(runtime, 0o700)
    }

    /// (Re)writes the configuration; `trusted` as in init.
    func writeConfig(trusted: Bool, policy: String = "") throws {
        let text = """
            from = "alice@example.org"
            gnupg_home = "\(home.path)"
            sent_maildir = "\(sent)"
            \(policy)

            [submission]
            host = "127.0.0.1"
            port = \(proxy.port)
            security = "tls"
            \(trusted ? "ca_file = \"\(proxy.caFile)\"" : "")
            timeout = 20

            """
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
    }

    var environment: [String: String] {
        var environment = home.environment
        environment["XDG_DATA_HOME"] = folder + "/data"
        environment["XDG_CONFIG_HOME"] = folder + "/config"
        environment["HOME"] = folder
        environment["XDG_RUNTIME_DIR"] = runtime  // where the editor's file is made
        environment.removeValue(forKey: "VISUAL")
        environment["EDITOR"] = "/bin/false"
        return environment
    }

    /// `mailsec ARGUMENTS --config CONFIG` in this world.
    func ms(_ arguments: [String], input: [UInt8] = []) throws -> ProcessResult {
        try run(Paths.mailsecExecutable.path, arguments + ["--config", config], input: input, environment: environment)
    }

    /// Every byte of the store's files (the database, its WAL).
    func storeBytes() throws -> String {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
        var all = Data()
        for file in files { all += (FileManager.default.contents(atPath: store + "/" + file) ?? Data()) }
        return String(decoding: all, as: UTF8.self)
    }

    /// `outbox list --json`, decoded.
    func outbox() throws -> [[String: Any]] {
        let result = try ms(["outbox", "list", "--json"])
        #expect(result.status == 0, "\(result.errors)")
        return (try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [[String: Any]]) ?? []
    }

    /// A mail that arrived as a letter: Bob to Alice, written by `mailsec encrypt`
    /// in Bob's own home; the path of the letter.
    func letterFromBob() throws -> String {
        try withGnuPGHome(importing: ["bob.sec.asc", "alice.pub.asc"]) { bob throws -> String in
            let out = folder + "/bob-out-\(UUID().uuidString)"
            let mail = "From: Bob <bob@example.org>\nTo: Alice <alice@example.org>\nSubject: Vault\nMessage-ID: <v.1@example.org>\n\nThe vault code is 7405.\n"
            let result = try run(Paths.mailsecExecutable.path, ["encrypt", "--out", out], input: Array(mail.utf8), environment: bob.environment)
            #expect(result.status == 0, "\(result.errors)")
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: out).first { $0.hasSuffix(".eml") })
            return out + "/" + name
        }
    }

    func close() {
        proxy.stop()
        home.close()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// The header `name` of a transaction's data, unfolded (first occurrence).
func header(_ name: String, in data: String) -> String? {
    var value: String?
    for line in data.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.isEmpty { break }
        if value != nil, line.first == " " || line.first == "\t" { value! += " " + line.trimmingCharacters(in: .whitespaces); continue }
        if value != nil { break }
        if line.lowercased().hasPrefix(name.lowercased() + ":") { value = String(line.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }
    return value
}

/// Every text part of a mail, decoded (python3's email package, as a reader would).
func decodedText(_ data: String) throws -> String {
    let script = """
        import email, sys
        from email import policy
        message = email.message_from_bytes(sys.stdin.buffer.read(), policy=policy.default)
        for part in message.walk():
            if part.get_content_maintype() == "text":
                print(part.get_content())
        """
    return try run("python3", ["-c", script], input: Array(data.replacingOccurrences(of: "\n", with: "\r\n").utf8)).output
}
