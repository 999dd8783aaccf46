import Foundation
import Policy
import Settings
import TestSupport
import Testing

let fullConfig = """
    gnupg_home = "/var/lib/mailsec/gnupg"
    sign_as = "from"
    mode = "standard"
    invite = true
    extension = "censored"
    min_validity = "marginal"
    timeout = 90
    log = "stderr"

    [markers]
    open = "((p))"
    close = "((/p))"
    placeholder = "[x]"

    [[rules]]
    domains = ["*.example.gov", "bank.example"]
    mode = "require-letter"

    [[rules]]
    domains = ["press.example"]
    mode = "enforce-postcard"

    [reinject]
    method = "smtp"
    host = "127.0.0.1"
    port = 10026
    timeout = 30

    [journal]
    directory = "/var/spool/mailsec/journal"
    expire_days = 3
    """

@Suite("Filter configuration")
struct FilterConfigTests {
    @Test("a full configuration reads into the settings it names")
    func full() throws {
        let config = try FilterConfig.parse(fullConfig)
        #expect(config.gnupgHome == "/var/lib/mailsec/gnupg")
        #expect(config.policy.signAs == nil)
        #expect(config.policy.mail.invite && !config.policy.mail.enforcePostcard && !config.policy.mail.requireLetter)
        #expect(config.policy.minimumValidity == .marginal)
        #expect(config.timeout == 90 && config.log == .stderr)
        #expect(config.policy.redactor.open == "((p))" && config.policy.redactor.placeholder == "[x]")
        #expect(config.policy.mail.domainRules == [DomainRule("*.example.gov", .requireLetter), DomainRule("bank.example", .requireLetter),
                                            DomainRule("press.example", .enforcePostcard)])
        #expect(config.reinjection == .smtp(host: "127.0.0.1", port: 10026))
        #expect(config.reinjectionTimeout == 30)
        #expect(config.journalExpiry == 3 * 86400)
        let empty = try FilterConfig.parse("")
        #expect(empty.reinjection == .sendmail(["/usr/sbin/sendmail", "-G", "-i"]))
    }

    @Test("the filter.toml of docs/filter.md reads as it stands, every key in the table it belongs to")
    func manualExample() throws {
        let manual = try String(contentsOf: Paths.root.appendingPathComponent("docs/filter.md"), encoding: .utf8)
        let section = try #require(manual.range(of: "### `/etc/mailsec/filter.toml`"))
        let after = manual[section.upperBound...]
        let start = try #require(after.range(of: "```toml\n"))
        let end = try #require(after[start.upperBound...].range(of: "```"))
        let config = try FilterConfig.parse(String(after[start.upperBound..<end.lowerBound]))
        #expect(config.policy.mail.onKeyLoss == .defer)
        #expect(config.journalDirectory == "/var/spool/mailsec/journal" && config.journalExpiry == 7 * 86400)
        #expect(config.continuityDirectory == "/var/spool/mailsec/continuity")
    }

    @Test("filter.toml(5): its example reads as it stands, and it names every key docs/filter.md shows")
    func manPage() throws {
        let example = try #require(try Manual.manPageExample("filter.toml.5"))
        let config = try FilterConfig.parse(example)
        #expect(config.gnupgHome == "/var/lib/mailsec/gnupg" && config.reinjection == .smtp(host: "127.0.0.1", port: 10026))
        #expect(config.listen.port == 10025)
        let named = try Manual.manPageWords("filter.toml.5")
        let keys = try Manual.tomlKeys("filter.md")
        #expect(keys.isSuperset(of: ["gnupg_home", "on_key_change", "reinject", "final_timeout", "listen", "drain_timeout",
                                     "reading", "notice", "continuity"]), "\(keys.sorted())")
        for key in keys { #expect(named.contains(key), "filter.toml(5) does not name \(key)") }
    }

    @Test("typos and wrong values are errors, never ignored",
          arguments: ["gnupg_hom = \"/x\"", "mode = \"strict\"", "invite = \"yes\"", "timeout = -1",
                      "[reinject]\nmethod = \"lmtp\"", "[reinject]\nport = 70000", "[[rules]]\ndomains = []\nmode = \"require-letter\"",
                      "[[rules]]\ndomains = [\"x\"]\nmode = \"maybe\"", "[markers]\nopen = \"\"", "log = \"file\"",
                      "mode = = 1", "[journal]\nfolder = \"/x\"", "extension = \"partially-encrypted\""])
    func errors(text: String) {
        #expect(throws: (any Error).self) { try FilterConfig.parse(text) }
    }

    @Test("log_format, log_addresses and [listen] metrics_address: off by default; read; each wrong value one line naming its key")
    func logAndMetricsKeys() throws {
        let empty = try FilterConfig.parse("")
        #expect(empty.logFormat == .plain && !empty.logAddresses && empty.listen.metrics == nil)
        let port = Int.random(in: 0...65535)
        let config = try FilterConfig.parse("log_format = \"json\"\nlog_addresses = true\n[listen]\nmetrics_address = \":\(port)\"\n")
        #expect(config.logFormat == .json && config.logAddresses)
        #expect(config.listen.metrics?.host == "127.0.0.1" && config.listen.metrics?.port == port)
        #expect(try FilterConfig.parse("[listen]\nmetrics_address = \"[::1]:9125\"\n").listen.metrics?.host == "::1")
        #expect(try FilterConfig.parse("[listen]\nmetrics_address = \"192.0.2.7:9125\"\n").listen.metrics?.host == "192.0.2.7")
        for (text, key) in [("log_format = \"xml\"", "log_format"), ("log_format = 1", "log_format"),
                            ("log_addresses = \"yes\"", "log_addresses"),
                            ("[listen]\nmetrics_address = \"127.0.0.1:\(65536 + port)\"", "listen.metrics_address"),
                            ("[listen]\nmetrics_address = \"127.0.0.1:-1\"", "listen.metrics_address"),
                            ("[listen]\nmetrics_address = \"127.0.0.1\"", "listen.metrics_address"),
                            ("[listen]\nmetrics_address = 9125", "listen.metrics_address")] {
            do {
                _ = try FilterConfig.parse(text)
                Issue.record("\(text) was taken")
            } catch let error as ConfigError {
                #expect(error.description.hasPrefix(key + ": ") && !error.description.contains("\n"), "\(text): \(error)")
            }
        }
    }

    @Test("SMTP re-injection (no TLS, no AUTH) goes to loopback only: any other host is one error line naming reinject.host")
    func reinjectLoopbackOnly() throws {
        for host in ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "localhost", "LOCALHOST"] {
            let config = try FilterConfig.parse("[reinject]\nmethod = \"smtp\"\nhost = \"\(host)\"\n")
            #expect(config.reinjection == .smtp(host: host, port: 10026))
        }
        for host in ["mail.example.org", "192.0.2.1", "10.0.0.1", "0.0.0.0", "::", "::2", "::ffff:127.0.0.1", "128.0.0.1",
                     "127.0.0.1.example.org", "localhost.example.org", "[::1]x", ""] {
            do {
                _ = try FilterConfig.parse("[reinject]\nmethod = \"smtp\"\nhost = \"\(host)\"\n")
                Issue.record("\(host) was taken for re-injection without TLS")
            } catch let error as ConfigError {
                #expect(error.description.hasPrefix("reinject.host: not a loopback address"), "\(host): \(error)")
            }
        }
    }

    @Test("an unreadable file, or a GnuPG home that is missing or has no keyring, is a ConfigError")
    func unreadable() throws {
        #expect(throws: ConfigError.self) { try FilterConfig.load(path: "/nonexistent/filter.toml") }
        let folder = try makePrivateDirectory(prefix: "ms-config")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/filter.toml"
        for home in [nil, "/nonexistent/gnupg", folder] {
            try (home.map { "gnupg_home = \"\($0)\"\n" } ?? "").write(toFile: path, atomically: true, encoding: .utf8)
            #expect(throws: ConfigError.self) { try FilterConfig.load(path: path) }
        }
        FileManager.default.createFile(atPath: folder + "/pubring.kbx", contents: Data())
        try "gnupg_home = \"\(folder)\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try FilterConfig.load(path: path).gnupgHome == folder)
    }

    @Test("a configuration that cannot be read says why in its one line: missing, a folder, a path through a file, not a regular file")
    func unreadableSaysWhy() throws {
        let folder = try makePrivateDirectory(prefix: "ms-config")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        FileManager.default.createFile(atPath: folder + "/plain", contents: Data("x = 1\n".utf8))
        #expect(mkfifo(folder + "/fifo", 0o600) == 0)
        let cases = [
            (folder + "/missing.toml", "(no such file)"),
            (folder, "(is a directory)"),
            (folder + "/plain/filter.toml", "(a part of the path is not a directory)"),
            (folder + "/fifo", "(not a regular file)"),
        ]
        for (path, reason) in cases {
            do {
                _ = try FilterConfig.load(path: path)
                Issue.record("\(path) was read")
            } catch {
                let line = "\(error)"
                #expect(line.hasPrefix(path + ": ") && line.hasSuffix("cannot read the configuration " + reason), "\(line)")
                #expect(!line.contains("\n"))
            }
        }
    }
}


@Suite("The [listen] table's defaults")
struct ListenDefaultsTests {
    /// The pipe filter never asks for the number of cores; the resident one
    /// gets it as the default, and a configured value wins. Equality compares
    /// the values as they come out (a configured count equal to the cores'
    /// is the same setting on reload).
    @Test func parallelDefault() throws {
        var listen = ListenConfig()
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        #expect(listen.parallel == cores)
        var explicit = listen
        explicit.parallel = cores
        #expect(explicit == listen)
        listen.parallel = cores + 3
        #expect(listen.parallel == cores + 3)
        #expect(listen != explicit)
    }
}
