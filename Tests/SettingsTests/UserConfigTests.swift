import Foundation
import Sending
import Settings
import SMTP
import Testing
import TestSupport

let goodConfig = """
    from = "alice@example.org"
    sent_maildir = "/tmp/never-used"
    mode = "standard"

    [submission]
    host = "smtp.example.org"
    security = "tls"
    username = "alice"
    password_command = "printf secret"

    [markers]
    open = "{{p}}"
    close = "{{/p}}"
    """

@Suite("User configuration")
struct UserConfigTests {
    @Test("config.toml(5): its example reads as it stands, and it names every key docs/sending.md shows")
    func manPage() throws {
        let example = try #require(try Manual.manPageExample("config.toml.5"))
        let (config, problems) = UserConfig.parse(example)
        #expect(problems.isEmpty, "\(problems)")
        #expect(config?.from == "alice@example.org" && config?.submission.host == "smtp.example.org")
        let named = try Manual.manPageWords("config.toml.5")
        let keys = try Manual.tomlKeys("sending.md")
        #expect(keys.isSuperset(of: ["from", "submission", "password_command", "auth", "reading", "publish_url"]), "\(keys.sorted())")
        for key in keys { #expect(named.contains(key), "config.toml(5) does not name \(key)") }
    }

    @Test("a good file reads as written, with defaults where it is silent")
    func good() throws {
        let (config, problems) = UserConfig.parse(goodConfig)
        #expect(problems.isEmpty)
        let read = try #require(config)
        #expect(read.from == "alice@example.org")
        #expect(read.submission.host == "smtp.example.org")
        #expect(read.submission.port == 465)  // tls's port
        #expect(read.submission.security == .tls)
        #expect(read.submission.password == .command("printf secret"))
        #expect(read.policy.redactor.open == "{{p}}")
        #expect(read.sentMaildir == "/tmp/never-used")
        #expect(read.keepSentDays == 7)
        #expect(read.submission.mechanisms == [.plain, .login])
    }

    @Test("auth names the SASL mechanisms, one or a list, most wanted first; an unknown one is a problem on its line",
          arguments: [("\"xoauth2\"", [.xoauth2]), ("[\"login\", \"PLAIN\", \"login\"]", [.login, .plain]),
                      ("\"cram-md5\"", nil), ("[]", nil), ("3", nil)] as [(String, [SMTPCredentials.Mechanism]?)])
    func auth(value: String, mechanisms: [SMTPCredentials.Mechanism]?) throws {
        let text = goodConfig.replacingOccurrences(of: "[submission]\n", with: "[submission]\nauth = \(value)\n")
        let (config, problems) = UserConfig.parse(text)
        if let mechanisms {
            #expect(problems.isEmpty)
            #expect(config?.submission.mechanisms == mechanisms)
        } else {
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.hasPrefix("auth =") }.map { $0 + 1 }
            #expect(config == nil)
            #expect(problems.contains { $0.path == "submission.auth" && $0.line == line }, "\(problems)")
        }
    }

    @Test("keep_sent_days takes 0 or more whole days; anything else is a problem on its line",
          arguments: [("0", 0), ("30", 30), ("-1", nil), ("1.5", nil), ("\"7\"", nil)] as [(String, Int?)])
    func keepSent(value: String, days: Int?) throws {
        let (config, problems) = UserConfig.parse("keep_sent_days = \(value)\n" + goodConfig)
        if let days {
            #expect(problems.isEmpty)
            #expect(config?.keepSentDays == days)
        } else {
            #expect(config == nil)
            #expect(problems.contains { $0.path == "keep_sent_days" && $0.line == 1 })
        }
    }

    /// Each broken line, put into the good file, is reported on its own line
    /// number, and the others are still checked (several at once).
    @Test("every problem is reported with its line, several at once", arguments: [
        ("port = 70000", "submission.port"), ("helo = 3", "submission.helo"),
        ("port = \"587\"", "submission.port"), ("colour = \"blue\"", "submission.colour"),
        ("password = \"x\"", "submission.password"),
        // Hostile values: a line break in the EHLO name would inject SMTP
        // commands; a time-out past Int64 nanoseconds trapped the process.
        ("helo = \"me.example\\r\\nRSET\"", "submission.helo"), ("helo = \"a b\"", "submission.helo"),
        ("helo = \"\"", "submission.helo"), ("timeout = 10000000000", "submission.timeout"),
        ("timeout = 3601", "submission.timeout"),
    ])
    func problems(line: String, key: String) throws {
        var lines = goodConfig.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let at = try #require(lines.firstIndex(of: "[submission]")) + 1
        lines.insert(line, at: at)
        lines[0] = "from = \"not an address\""
        let (config, problems) = UserConfig.parse(lines.joined(separator: "\n"))
        #expect(config == nil)
        #expect(problems.contains { $0.path == "from" && $0.line == 1 })
        let problem = try #require(problems.first { $0.path == key })
        #expect(problem.line == at + 1, "\(problem.description)")
    }

    @Test("[reading] names the reading server (shared with the filter); each bad key is a problem on its line, a token file others can read is refused")
    func reading() throws {
        let folder = try makePrivateDirectory(prefix: "ms-reading")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let token = folder + "/token"
        FileManager.default.createFile(atPath: token, contents: Data("a-publish-token\n".utf8), attributes: [.posixPermissions: 0o600])
        let reading = "[reading]\npublish_url = \"http://127.0.0.1:8080/read\"\ntoken_file = \"\(token)\"\nlifetime_days = 3\n"
        let (config, problems) = UserConfig.parse("extension = \"partially-encrypted\"\n" + goodConfig + "\n" + reading)
        #expect(problems.isEmpty, "\(problems)")
        let read = try #require(config?.reading)
        #expect(read.publisher.port == 8080 && read.publisher.prefix == "/read" && read.lifetime == 3 * 86400)
        // The password notice is a letter or nothing unless a plain one is asked for by name.
        #expect(read.noticeMustBeLetter, "the default notice is letter-required")
        for (value, mustBeLetter) in [("letter-required", true), ("plain", false), ("letter-preferred", false)] {
            let named = UserConfig.parse(goodConfig + "\n" + reading + "notice = \"\(value)\"\n")
            #expect(named.0?.reading?.noticeMustBeLetter == mustBeLetter, "\(value): \(named.problems)")
        }
        #expect(config?.policy.mail.postcardExtension == .partiallyEncrypted)
        #expect(UserConfig.parse(goodConfig).0?.reading == nil)

        // partially-encrypted without a server: one problem naming [reading].
        let missing = UserConfig.parse("extension = \"partially-encrypted\"\n" + goodConfig)
        #expect(missing.0 == nil && missing.problems.count == 1 && missing.problems[0].description.contains("[reading]"))

        // Every broken key is reported, each on its own line, in one pass.
        let broken = "[reading]\npublish_url = \"ftp://x\"\ntoken_file = \"\(folder)/missing\"\nnotice = \"maybe\"\ntimeout = 0\ncolour = 1\n"
        let text = goodConfig + "\n" + broken
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let bad = UserConfig.parse(text)
        #expect(bad.0 == nil)
        for (key, prefix) in [("reading.token_file", "token_file"), ("reading.notice", "notice"), ("reading.timeout", "timeout"),
                              ("reading.colour", "colour")] {
            let line = lines.firstIndex { $0.hasPrefix(prefix + " =") }.map { $0 + 1 }
            #expect(bad.problems.contains { $0.path == key && $0.line == line }, "\(key): \(bad.problems)")
        }
        // The refusal of an unknown notice names the documented values, "plain" among them, not "maybe".
        let notice = try #require(bad.problems.first { $0.path == "reading.notice" })
        #expect(notice.description.contains("letter-required") && notice.description.contains("plain")
                && !notice.description.contains("maybe"), "\(notice)")
        // A token file group or others can read: refused, and the token is not in the line.
        for mode in [0o640, 0o604, 0o644] as [Int] {
            chmod(token, mode_t(mode))
            let open = UserConfig.parse(goodConfig + "\n" + reading)
            #expect(open.0 == nil)
            let problem = try #require(open.problems.first { $0.path == "reading.token_file" })
            #expect(problem.description.contains("chmod 600") && !problem.description.contains("a-publish-token"))
        }
        // A bad URL with a good token: the URL is named.
        chmod(token, 0o600)
        let url = UserConfig.parse(goodConfig + "\n" + reading.replacingOccurrences(of: "http://", with: "ftp://"))
        #expect(url.0 == nil && url.problems.contains { $0.path == "reading.publish_url" })
    }

    @Test("a host with a line break is refused, and the error line does not carry it; names and addresses are taken")
    func hostileHost() {
        let (config, problems) = UserConfig.parse("from = \"a@b.org\"\n[submission]\nhost = \"smtp.example.org\\r\\nEvil: 1\"\n")
        #expect(config == nil)
        #expect(problems.map(\.path) == ["submission.host"])
        #expect(!problems.contains { $0.description.contains("\n") || $0.description.contains("Evil") })
        for host in ["smtp.example.org", "192.0.2.1", "::1", "2001:db8::25", "localhost"] {
            #expect(UserConfig.parse("from = \"a@b.org\"\n[submission]\nhost = \"\(host)\"\n").problems.isEmpty, "\(host)")
        }
    }

    @Test("a from the pipeline would refuse is a configuration problem, named without its value")
    func hostileFrom() {
        for from in ["alice@example.org\\u2028", "alice@example.org\\nBcc: x@y.org", "<alice@example.org", "-alice@example.org", "a@b@c"] {
            let (config, problems) = UserConfig.parse("from = \"\(from)\"\n[submission]\nhost = \"h\"\n")
            #expect(config == nil, "\(from)")
            #expect(problems.map(\.path) == ["from"], "\(from)")
            #expect(!problems.contains { $0.description.contains("\n") || $0.description.contains("alice") }, "\(problems)")
        }
        #expect(UserConfig.parse("from = \"<alice@example.org>\"\n[submission]\nhost = \"h\"\n").problems.isEmpty)
    }

    @Test("a TOML syntax error names its line")
    func syntax() {
        let (_, problems) = UserConfig.parse("from = \"a@b.org\"\n\n[submission\nhost = 1\n")
        #expect(problems.count == 1)
        #expect(problems.first?.line == 3)
    }

    @Test("a password in a file others can read is refused, and no error shows it")
    func passwordInOpenFile() throws {
        let folder = try makePrivateDirectory(prefix: "ms-config")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/config.toml"
        let secret = "Tr0ub4dor-\(UInt32.random(in: 0...UInt32.max))"
        let text = "from = \"a@example.org\"\n[submission]\nhost = \"h\"\nusername = \"a\"\npassword = \"\(secret)\"\n"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o644])
        let problems = UserConfig.check(path: path)
        #expect(problems.count == 1)
        #expect(problems.first?.description.contains("submission.password") == true)
        #expect(problems.first?.description.contains(":5:") == true)
        #expect(!problems.contains { $0.description.contains(secret) })
        chmod(path, 0o600)
        #expect(UserConfig.check(path: path).isEmpty)
        let config = try UserConfig.load(path: path)
        let password = try #require(try Password.obtain(for: config))
        #expect(password.withUnsafeBytes { Array($0) } == Array(secret.utf8))
    }

    @Test("password_command from a file others can change (group or world writable, another's, in such a folder) is refused, as ssh does")
    func unsafeCommandFile() throws {
        let base = try makePrivateDirectory(prefix: "ms-cfg")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let text = "from = \"a@example.org\"\n[submission]\nhost = \"h\"\nusername = \"a\"\npassword_command = \"printf x\"\n"
        // (file mode, file owner, folder mode, refused)
        let cases: [(mode_t, uid_t, mode_t, Bool)] = [
            (0o600, getuid(), 0o700, false), (0o644, getuid(), 0o755, false), (0o600, getuid(), 0o1777, false),
            (0o620, getuid(), 0o700, true), (0o602, getuid(), 0o700, true), (0o666, getuid(), 0o700, true),
            (0o600, 65534, 0o700, true), (0o600, getuid(), 0o770, true), (0o600, getuid(), 0o777, true),
        ]
        for (index, (mode, owner, folderMode, refused)) in cases.enumerated() {
            let folder = base + "/\(index)"
            mkdir(folder, 0o700)
            let path = folder + "/config.toml"
            FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
            chmod(path, mode)
            chown(path, owner, getgid())
            chmod(folder, folderMode)
            let problems = UserConfig.check(path: path)
            if refused {
                #expect(problems.count == 1, "case \(index): \(problems)")
                #expect(problems.first?.description.contains("submission.password_command: refused") == true, "case \(index): \(problems)")
                #expect(problems.first?.description.contains(":5:") == true, "case \(index): \(problems)")
                #expect(!problems.contains { $0.description.contains("printf") })
            } else {
                #expect(problems.isEmpty, "case \(index): \(problems)")
            }
            // Through a symbolic link from a safe folder: the file's own folder is judged.
            if folderMode == 0o777 {
                let link = base + "/link.toml"
                symlink(path, link)
                #expect(UserConfig.check(path: link).count == 1)
            }
        }
    }

    @Test("unknown and wrongly typed keys in the policy part are reported too")
    func policyProblems() {
        let (_, problems) = UserConfig.parse("from = \"a@b.org\"\nmode = \"loud\"\ninvite = 3\n[submission]\nhost = \"h\"\n")
        #expect(problems.map(\.path) == ["mode", "invite"])
        #expect(problems.map(\.line) == [2, 3])
    }
}


@Suite("User configuration, security")
struct SecurityChoiceTests {
    @Test("security must be starttls or tls: plain is no choice")
    func noPlain() {
        for value in ["none", "plain", "STARTTLS", ""] {
            let (_, problems) = UserConfig.parse("from = \"a@b.org\"\n[submission]\nhost = \"h\"\nsecurity = \"\(value)\"\n")
            #expect(problems.map(\.path) == ["submission.security"], "\(value)")
            #expect(problems.first?.line == 4)
        }
    }
}
