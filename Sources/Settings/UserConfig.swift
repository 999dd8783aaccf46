import Foundation
import Platform
import Policy
import SMTP
import TOMLKit

/// How the connection to the submission server is protected. There is no
/// plain choice: a password and mail never cross the network in clear.
public enum SubmissionSecurity: String, Sendable, Hashable, CaseIterable {
    /// Port 587: plain at first, then STARTTLS before anything else (RFC 3207).
    case startTLS = "starttls"
    /// Port 465: TLS from the first byte (RFC 8314).
    case tls
}

/// Where the password for the submission server comes from.
public enum PasswordSource: Sendable, Hashable {
    /// Run once with `/bin/sh -c`; its standard output (less one final line
    /// break) is the password, read from a pipe (as msmtp's `passwordeval`).
    case command(String)
    /// Written in the configuration file, which must then be private (0600).
    case inFile
    /// No authentication.
    case none
}

/// The `[submission]` table: the server a person submits mail to.
public struct SubmissionSettings: Sendable, Hashable {
    /// The server's host name (TLS verifies the certificate against it).
    public var host: String
    /// The port: 587 for STARTTLS, 465 for implicit TLS unless given.
    public var port: Int
    /// STARTTLS or implicit TLS.
    public var security: SubmissionSecurity
    /// The SMTP AUTH user; nil: no authentication.
    public var username: String?
    /// Where the password comes from (a command or a file), read once per session.
    public var password: PasswordSource
    /// Certificates to trust instead of the system's (a private CA, say).
    public var caFile: String?
    /// The name to greet with (EHLO); nil: the host's own name.
    public var heloName: String?
    /// Seconds to wait for the server at each step (nil: RFC 5321's own).
    public var timeout: Int?
    /// Seconds `password_command` may take (nil: Sending's `Password.defaultTimeout`).
    public var passwordTimeout: Int?
    /// The SASL mechanisms we may use, most wanted first (`auth`): PLAIN and
    /// LOGIN by default; with XOAUTH2 the password is an OAuth 2.0 access token.
    public var mechanisms: [SMTPCredentials.Mechanism]

    /// Settings for `host`; the port defaults from `security`.
    public init(host: String, port: Int? = nil, security: SubmissionSecurity = .startTLS, username: String? = nil,
                password: PasswordSource = .none, caFile: String? = nil, heloName: String? = nil, timeout: Int? = nil,
                mechanisms: [SMTPCredentials.Mechanism] = [.plain, .login]) {
        self.host = host
        self.port = port ?? (security == .tls ? 465 : 587)
        self.security = security
        self.username = username
        self.password = password
        self.caFile = caFile
        self.heloName = heloName
        self.timeout = timeout
        self.mechanisms = mechanisms
    }
}

/// The person's configuration, `$XDG_CONFIG_HOME/mailsec/config.toml`
/// (by default `~/.config/mailsec/config.toml`). Every key but `from` and
/// `[submission]`'s `host` is optional; an unknown key or a wrong type is an
/// error, so that a typo is noticed (`mailsec config check`).
///
/// ```toml
/// from = "alice@example.org"          # the envelope sender and signing identity
/// gnupg_home = "~/.gnupg"             # default: $GNUPGHOME, then ~/.gnupg
/// sent_maildir = "~/Mail/Sent"        # optional: the sender's own copy, after delivery
/// keep_sent_days = 7                  # sent copies stay listed in the outbox this long (0: not at all)
///
/// [submission]
/// host = "smtp.example.org"
/// port = 587                          # default 587 for starttls, 465 for tls
/// security = "starttls"               # or "tls"
/// username = "alice@example.org"
/// password_command = "pass show mail/example.org"
/// # password = "…"                    # only in a file nobody else can read (0600)
/// # ca_file = "/etc/ssl/private-ca.pem"
/// # helo = "laptop.example.org"
/// # timeout = 60                      # seconds per step; default: RFC 5321's
/// # auth = "xoauth2"                  # or "plain", "login", or a list; default ["plain", "login"]
///
/// # Policy defaults, as the filter's: sign_as, mode, invite, extension,
/// # min_validity, [markers], [[rules]].
///
/// # For extension = "partially-encrypted": the reading server, as the filter's.
/// # [reading]
/// # publish_url = "https://read.example.org"
/// # token_file = "~/.config/mailsec/publish-token"   # private (0600)
/// # lifetime_days = 30
/// ```
public struct UserConfig: Sendable {
    /// The file it was read from.
    public var path: String?
    /// The sender's address, used when a mail names no From.
    public var from: String
    /// The GnuPG home; nil: GnuPG's default.
    public var gnupgHome: String?
    /// The Maildir the sender's own copies are filed in; nil: none.
    public var sentMaildir: String?
    /// Days a sent copy stays in the outbox (`keep_sent_days`, default 7;
    /// 0: removed at the end of the run that sent it).
    public var keepSentDays = 7
    /// The `[submission]` table.
    public var submission: SubmissionSettings
    /// The policy keys shared with the filter (mode, markers, rules …).
    public var policy: PolicySettings
    /// The `[reading]` table: where partially encrypted postcards publish; nil: none.
    public var reading: ReadingSettings?
    /// The password written in the file, when `password` is used. Only
    /// Sending's `Password` type reads it out.
    package var filePassword: SecretBytes?

    /// A configuration for `from` sending through `submission`.
    public init(from: String, submission: SubmissionSettings, gnupgHome: String? = nil, sentMaildir: String? = nil,
                policy: PolicySettings = PolicySettings()) {
        self.from = from
        self.submission = submission
        self.gnupgHome = gnupgHome
        self.sentMaildir = sentMaildir
        self.policy = policy
    }

    /// `$XDG_CONFIG_HOME/mailsec/config.toml`, or `~/.config/mailsec/config.toml`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/mailsec/config.toml" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.config/mailsec/config.toml"
    }

    /// Reads the file; the first problem throws (with its line when known).
    public static func load(path: String = UserConfig.defaultPath()) throws(ConfigError) -> UserConfig {
        let (config, problems) = read(path: path)
        if let first = problems.first { throw first }
        guard let config else { throw ConfigError("configuration \(path) cannot be used") }
        return config
    }

    /// Every problem of the file, each with its line where known (for
    /// `mailsec config check`); an empty list means the file is fine.
    public static func check(path: String = UserConfig.defaultPath()) -> [ConfigError] {
        read(path: path).problems
    }

    static func read(path: String) -> (UserConfig?, problems: [ConfigError]) {
        let text: String, info: stat
        do throws(ConfigError) { (text, info) = try ConfigFile.read(path) } catch { return (nil, [error]) }
        // Whoever can change the file could make `password_command` run their commands as us.
        var (config, problems) = parse(text, privateFile: FileOwnership.isPrivate(info),
                                       safeFile: FileOwnership.onlyOwnerCanChange(path, info))
        config?.path = path
        problems = problems.map { $0.located(in: path, text: text) }
        return (problems.isEmpty ? config : nil, problems)
    }

    /// Reads configuration text. `privateFile` tells whether the file it came
    /// from is readable by its owner only (a `password` is refused otherwise);
    /// `safeFile` whether only its owner can change it (a `password_command`
    /// is refused otherwise, as ssh judges its configuration: the file and
    /// every folder above it ours or root's, none writable by others).
    /// Returns the configuration (nil when unusable) and every problem found.
    public static func parse(_ text: String, privateFile: Bool = true, safeFile: Bool = true) -> (UserConfig?, problems: [ConfigError]) {
        let lines = SourceLines(text)
        var problems: [ConfigError] = []
        func note(_ error: ConfigError) {
            var error = error
            if error.line == nil, let path = error.path { error.line = lines.line(of: path) }
            problems.append(error)
        }
        func step(_ body: () throws -> Void) {
            do { try body() } catch { note(error as? ConfigError ?? ConfigError("\(error)")) }
        }
        let root: TOMLTable
        do throws(ConfigError) { root = try TOMLKeys.document(text) } catch {
            return (nil, [error])
        }
        let top = TOMLKeys(root, "")
        step { try top.allow(PolicySettings.keys.union(["from", "gnupg_home", "sent_maildir", "keep_sent_days", "submission", "reading"])) }

        var from: String?
        step {
            guard let value = try top.string("from") else { throw ConfigError("from: required (your address)", path: "from") }
            // The check every envelope sender gets: a value the pipeline would
            // refuse later made every mail 65 (bad message) for a mis-edited file.
            // Not echoed: it may hold a line break.
            do throws(EnvelopeAddressError) { from = try EnvelopeAddress.normalised(value, which: "sender") } catch {
                throw ConfigError("from: not a mail address (\(error.problem))", path: "from")
            }
        }
        var gnupgHome: String?
        step {
            guard let value = try top.string("gnupg_home") else { return }
            let home = expandTilde(value)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: home, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ConfigError("gnupg_home: \(home) is not a folder", path: "gnupg_home")
            }
            gnupgHome = home
        }
        var sentMaildir: String?
        step {
            guard let value = try top.string("sent_maildir") else { return }
            guard !value.isEmpty else { throw ConfigError("sent_maildir: give a folder", path: "sent_maildir") }
            sentMaildir = expandTilde(value)
        }
        var keepSentDays: Int?
        step { keepSentDays = try top.nonNegativeInt("keep_sent_days", atMost: TOMLKeys.tenYears) }
        var policy = PolicySettings()
        step { policy = try PolicySettings.read(top, collect: note) }
        var reading: ReadingSettings?
        step { reading = try ReadingSettings.read(top, collect: note) }
        if policy.mail.postcardExtension == .partiallyEncrypted && root["reading"] == nil {
            note(ConfigError("extension: partially-encrypted needs a [reading] table (publish_url, token_file)", path: "extension"))
        }

        var submission: SubmissionSettings?
        var filePassword: SecretBytes?
        step {
            guard let table = try top.table("submission") else {
                throw ConfigError("[submission]: required (host, port, security, username, password_command)", path: "submission")
            }
            try submission = Self.submission(table, privateFile: privateFile, safeFile: safeFile, password: &filePassword, note: note)
        }
        guard problems.isEmpty, let from, let submission else { return (nil, problems) }
        var config = UserConfig(from: from, submission: submission, gnupgHome: gnupgHome, sentMaildir: sentMaildir, policy: policy)
        config.filePassword = filePassword
        config.reading = reading
        if let keepSentDays { config.keepSentDays = keepSentDays }
        return (config, [])
    }

    private static func submission(_ table: TOMLKeys, privateFile: Bool, safeFile: Bool, password: inout SecretBytes?,
                                   note: (ConfigError) -> Void) throws(ConfigError) -> SubmissionSettings? {
        var ok = true
        func step<T>(_ body: () throws -> T?) -> T? {
            do { return try body() } catch {
                ok = false
                note(error as? ConfigError ?? ConfigError("\(error)"))
                return nil
            }
        }
        _ = step { try table.allow(["host", "port", "security", "username", "password_command", "password", "ca_file",
                                     "helo", "timeout", "auth", "password_timeout"]) }
        let host: String? = step {
            guard let host = try table.string("host"), !host.isEmpty else {
                throw ConfigError("submission.host: required (the submission server's name)", path: "submission.host")
            }
            // Not echoed: a line break in it would break the one error line.
            guard Self.isHost(host) else {
                throw ConfigError("submission.host: not a host name or an IP address", path: "submission.host")
            }
            return host
        }
        let security: SubmissionSecurity? = step {
            guard let value = try table.string("security") else { return .startTLS }
            guard let security = SubmissionSecurity(rawValue: value) else {
                throw ConfigError("submission.security: must be \"starttls\" or \"tls\" (never plain)", path: "submission.security")
            }
            return security
        }
        let port: Int? = step {
            try table.positiveInt("port", atMost: TOMLKeys.port)
        }
        let username = step { try table.string("username") }
        let command = step { try table.string("password_command") }
        let inline = step { try table.string("password") }
        let caFile: String? = step {
            guard let value = try table.string("ca_file") else { return nil }
            let path = expandTilde(value)
            guard access(path, R_OK) == 0 else { throw ConfigError("submission.ca_file: cannot read \(path)", path: "submission.ca_file") }
            return path
        }
        let helo: String? = step {
            guard let value = try table.string("helo") else { return nil }
            // A line break here would inject SMTP commands after EHLO.
            guard HeloName.isAcceptable(value) else {
                throw ConfigError("submission.helo: not a domain name or an address literal ([192.0.2.1])", path: "submission.helo")
            }
            return value
        }
        let timeout: Int? = step {
            try table.positiveInt("timeout", atMost: Self.longestTimeout)
        }
        let mechanisms: [SMTPCredentials.Mechanism]? = step { try Self.mechanisms(table) }
        let passwordTimeout: Int? = step { try table.positiveInt("password_timeout", atMost: Self.longestTimeout) }

        var source = PasswordSource.none
        if let command, inline != nil {
            _ = command
            ok = false
            note(ConfigError("submission.password: give either password or password_command, not both", path: "submission.password"))
        } else if let command {
            if command.trimmingCharacters(in: .whitespaces).isEmpty {
                ok = false
                note(ConfigError("submission.password_command: empty", path: "submission.password_command"))
            } else if !safeFile {
                ok = false
                note(ConfigError("submission.password_command: refused, others can change this file or a folder above it "
                                 + "(it must be yours and not group or world writable, as ssh asks)", path: "submission.password_command"))
            }
            source = .command(command)
        } else if let inline {
            if !privateFile {
                ok = false
                // Never the value itself: only where it is.
                note(ConfigError("submission.password: refused, the file can be read by others (chmod 600 it, or use password_command)",
                                 path: "submission.password"))
            } else {
                source = .inFile
                var bytes = Array(inline.utf8)
                password = SecretBytes(consuming: &bytes)
            }
        }
        // A username given but unusable is its own problem already: one line for one line.
        if source != .none && username == nil && table.table["username"] == nil {
            ok = false
            note(ConfigError("submission.username: required with a password", path: "submission.username"))
        }
        guard ok, let host, let security, let mechanisms else { return nil }
        var settings = SubmissionSettings(host: host, port: port, security: security, username: username, password: source,
                                          caFile: caFile, heloName: helo, timeout: timeout, mechanisms: mechanisms)
        settings.passwordTimeout = passwordTimeout
        return settings
    }

    /// `auth`: one mechanism's name or a list of them, most wanted first.
    private static func mechanisms(_ table: TOMLKeys) throws(ConfigError) -> [SMTPCredentials.Mechanism] {
        guard table.table["auth"] != nil else { return [.plain, .login] }
        var names: [String]
        if let one = table.table["auth"]?.string { names = [one] } else { names = try table.strings("auth") }
        let problem = ConfigError("submission.auth: must be \"plain\", \"login\", \"xoauth2\" or a list of them",
                                  path: "submission.auth")
        guard !names.isEmpty else { throw problem }
        var mechanisms: [SMTPCredentials.Mechanism] = []
        for name in names {
            guard let mechanism = SMTPCredentials.Mechanism(rawValue: name.uppercased()) else { throw problem }
            if !mechanisms.contains(mechanism) { mechanisms.append(mechanism) }
        }
        return mechanisms
    }

    /// The longest `timeout` taken: an hour per step (RFC 5321's longest is ten minutes).
    public static let longestTimeout = 3600

    /// A domain name, or an IPv4 or IPv6 address.
    static func isHost(_ text: String) -> Bool {
        if HeloName.isAcceptable(text) && !text.hasPrefix("[") { return true }
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

}

/// `~` and `~/…` as the person's home.
package func expandTilde(_ path: String) -> String {
    guard path == "~" || path.hasPrefix("~/") else { return path }
    let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
    return home + path.dropFirst()
}
