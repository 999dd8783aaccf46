import Foundation
import Platform
import Policy
import TOMLKit

/// How copies are handed back to the mail system.
package enum Reinjection: Sendable, Equatable {
    /// Run this command with `-f SENDER -- RCPT…` appended, the copy on stdin.
    case sendmail([String])
    /// Speak SMTP to this host and port (Postfix's advanced filter set-up).
    case smtp(host: String, port: Int)
}

/// Where the one line per mail goes.
package enum LogDestination: String, Sendable {
    case syslog, stderr, none
}

/// `log_format` in filter.toml: how the one line per mail is written.
package enum LogFormat: String, Sendable {
    /// `message-id=<…> letters=1 postcards=0 … status=sent duration=0.412`.
    case plain
    /// One JSON object (`MailLogRecord`) on the line.
    case json
}

/// The filter's configuration, read from TOML. Every key is optional; an
/// unknown key or a wrong type is an error, so that a typo is noticed.
///
/// ```toml
/// gnupg_home = "/var/lib/mailsec/gnupg"
/// sign_as = "from"             # the From address's key, or an address or fingerprint
/// mode = "standard"            # standard | enforce-postcard | require-letter
/// invite = false
/// extension = "censored"
/// min_validity = "marginal"    # optional: marginal | full | ultimate
/// timeout = 120                # seconds for one mail, all included
/// log = "syslog"               # syslog | stderr | none
/// log_format = "plain"         # or json: one JSON object per mail
/// log_addresses = false        # true: the envelope sender and recipients in the line
/// on_key_loss = "defer"        # or postcard: a remembered key now revoked or expired
/// on_key_change = "accept-certified"  # or defer | accept: a key other than the remembered one
///
/// [markers]
/// open = "[[private]]"
/// close = "[[/private]]"
/// placeholder = "█████"
///
/// [[rules]]
/// domains = ["*.example.gov"]
/// mode = "require-letter"      # or enforce-postcard
///
/// [reinject]
/// method = "sendmail"          # or smtp
/// sendmail = ["/usr/sbin/sendmail", "-G", "-i"]
/// host = "127.0.0.1"
/// port = 10026
/// timeout = 60                 # seconds for one hand-over (smtp: for each step)
/// final_timeout = 90           # smtp: seconds for the reply after the message (default 1.5 × timeout)
///
/// [journal]
/// directory = "/var/spool/mailsec/journal"
/// expire_days = 7
///
/// [continuity]                 # key continuity (default: "continuity" beside the journal)
/// directory = "/var/spool/mailsec/continuity"
///
/// [store]                      # key continuity shared by several filters (PostgreSQL), instead of the folder
/// url = "postgres://mailsec@db.example.org:5432/mailsec"
/// password_file = "/etc/mailsec/store-password"   # 0600, the filter user's own; or password_command
///
/// [reading]                    # for extension = "partially-encrypted"
/// publish_url = "http://127.0.0.1:8080"     # where `mailsec serve` listens
/// token_file = "/etc/mailsec/publish-token"   # the filter user's own, 0600
/// lifetime_days = 30           # optional; the server caps it
/// notice = "letter-required"  # the default: the password notice only as a letter; "plain": in clear
/// timeout = 30                 # seconds for publishing
///
/// [listen]                     # only for the resident filter, `mailsec filter --listen`
/// address = "127.0.0.1:10025"  # loopback only; port 0: any free port
/// lmtp = false                 # true: speak LMTP (one reply per recipient)
/// max_message_size = 10240000  # octets, announced with SIZE; bigger: 552
/// max_connections = 100        # one more gets 421 and is closed
/// parallel = 4                 # mails worked on at once (default: the number of cores)
/// idle_timeout = 300           # seconds to wait for a client's next command
/// max_connections_per_address = 32   # from one client address; one more gets 421
/// first_command_timeout = 30   # seconds a new connection has for its first command
/// spool_directory = "/var/spool/mailsec/incoming"   # large mails wait here (0700)
/// drain_timeout = 30           # SIGTERM: seconds for the mails in progress
/// metrics_address = "127.0.0.1:9125"   # Prometheus' GET /metrics; off when absent
/// ```
///
/// SIGHUP makes the resident filter read this file again; a file that cannot
/// be used leaves the running configuration as it was (one log line). The
/// `[listen]` table itself is read at start only.
package struct FilterConfig: Sendable {
    /// `gnupg_home`: the filter's GnuPG home; nil: GnuPG's default.
    package var gnupgHome: String?
    /// The policy keys shared with the user's configuration (`sign_as`,
    /// `mode`, `invite`, `extension`, `[markers]`, `[[rules]]`, `min_validity`),
    /// with the filter's own `on_key_loss` and `on_key_change` in its `mail`.
    package var policy: PolicySettings
    /// `timeout`: seconds for one mail, everything included; past it the filter exits 75.
    package var timeout: TimeInterval
    /// `log`: syslog, standard error, or none.
    package var log: LogDestination
    /// `log_format`: the line per mail as words or as JSON.
    package var logFormat: LogFormat
    /// `log_addresses`: the envelope sender and recipients in the line per mail (default: not).
    package var logAddresses: Bool
    /// `[reinject]`: how copies are handed back (sendmail or SMTP to a loopback port).
    package var reinjection: Reinjection
    /// `[reinject] timeout`: seconds for one hand-over (SMTP: for each step).
    package var reinjectionTimeout: TimeInterval
    /// SMTP re-injection: how long the reply after the message is awaited.
    /// Longer than the other steps (RFC 1047): a copy the server takes after
    /// we gave up is sent again on retry. Nil: 1.5 × `reinjectionTimeout`.
    package var reinjectionFinalTimeout: TimeInterval?
    /// `[journal] directory`: where the journal (and the loop secret) is kept.
    package var journalDirectory: String
    /// `[journal] expire_days`, in seconds: a record never finished is dropped after this.
    package var journalExpiry: TimeInterval
    /// `[reading]`: where partially encrypted postcards publish their spans; nil when absent.
    package var reading: ReadingSettings?
    /// Key continuity's folder: the key each recipient last got a letter with.
    /// Default: `continuity` beside the journal folder.
    package var continuityDirectory: String?
    /// The resident filter's listener (`[listen]`).
    package var listen: ListenConfig
    /// `[store]`: the database several filters share key continuity in; nil: the folder.
    package var store: StoreSettings?

    /// The defaults: sendmail re-injection, journal under /var/spool/mailsec.
    package init() {
        gnupgHome = nil
        policy = PolicySettings()
        policy.mail.onKeyChange = .acceptCertified
        timeout = 120
        log = .syslog
        logFormat = .plain
        logAddresses = false
        reinjection = .sendmail(["/usr/sbin/sendmail", "-G", "-i"])
        reinjectionTimeout = 60
        journalDirectory = "/var/spool/mailsec/journal"
        journalExpiry = 7 * 86400
        reading = nil
        continuityDirectory = nil
        listen = ListenConfig()
    }

    /// Reads the file at `path`. A problem is one line, `PATH:LINE: problem`
    /// (``ConfigError/description``): the first in the file's order.
    package static func load(path: String) throws(ConfigError) -> FilterConfig {
        let text = try ConfigFile.read(path).text
        let (config, problems) = read(text, located: path)
        if let first = problems.first { throw first }
        return config!
    }

    /// Every problem `mailsec filter --check-config` reports for the file at
    /// `path`, each one line as ``load(path:)`` gives it: every problem of the
    /// file itself (each key's, and a missing or empty keyring), or else those
    /// of the world it names (``environmentProblems()``) and `more` (the
    /// resident filter's own). Empty when the filter can run with it.
    package static func check(path: String, more: (FilterConfig) -> [ConfigError] = { _ in [] }) -> [ConfigError] {
        let text: String
        do throws(ConfigError) { text = try ConfigFile.read(path).text } catch { return [error] }
        let (config, problems) = read(text, located: path)
        guard let config, problems.isEmpty else { return problems }
        return (config.environmentProblems() + more(config)).map { $0.located(in: path, text: text) }
    }

    /// The configuration `text` holds (nil with any problem) and every problem
    /// of its keys and keyring, located in `file`, in the file's order (as a
    /// person fixes them).
    private static func read(_ text: String, located file: String) -> (FilterConfig?, [ConfigError]) {
        var problems: [ConfigError] = []
        do throws(ConfigError) {
            let config = try read(text, collect: { problems.append($0) })
            if !problems.contains(where: { $0.path == "gnupg_home" }) {
                do throws(ConfigError) { try config.checkKeyring() } catch { problems.append(error) }
            }
            if problems.isEmpty { return (config, []) }
        } catch {
            problems = [error]
        }
        let located = problems.map { $0.located(in: file, text: text) }
        return (nil, located.enumerated().sorted { ($0.element.line ?? .max, $0.offset) < ($1.element.line ?? .max, $1.offset) }.map(\.element))
    }

    /// A filter without its keyring would give everybody postcards: the GnuPG
    /// home must be named, exist and hold a public keyring.
    func checkKeyring() throws(ConfigError) {
        guard let home = gnupgHome else { throw ConfigError("gnupg_home is required") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: home, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ConfigError("gnupg_home \(home) is not a folder", path: "gnupg_home")
        }
        guard ["pubring.kbx", "pubring.gpg"].contains(where: { access(home + "/" + $0, R_OK) == 0 }) else {
            throw ConfigError("gnupg_home \(home) has no readable public keyring", path: "gnupg_home")
        }
    }

    /// Problems of the running user's world the file cannot show: with
    /// `[store]` the resident filter follows the published keys by making
    /// `gnupg_home` a link to a generation folder it writes beside it, so the
    /// folder that holds `gnupg_home` must be writable (and searchable) by
    /// this user. Each is located at its key's line.
    package func environmentProblems() -> [ConfigError] {
        var problems: [ConfigError] = []
        if store != nil, let home = gnupgHome {
            let parent = (home as NSString).deletingLastPathComponent
            let folder = parent.isEmpty ? "." : parent
            if access(folder, W_OK | X_OK) != 0 {
                problems.append(ConfigError("gnupg_home: with [store] published keys are synced into \(home).keys and "
                                            + "gnupg_home becomes a link swapped beside it, but \(folder) is not writable by this user",
                                            path: "gnupg_home"))
            }
        }
        return problems
    }

    /// Reads configuration text; the first problem throws, a ``ConfigError``
    /// (untyped for its callers' sake: the 6.x compiler crashes on
    /// `catch let error as ConfigError` around a typed throw).
    package static func parse(_ text: String) throws -> FilterConfig { try read(text) }

    /// Reads configuration text: the first problem throws (its line when
    /// TOMLKit tells it, else the key's path). With `collect`, every problem
    /// of a key is handed to it and reading goes on (for `--check-config`, as
    /// `config check` reads config.toml); only text that is not TOML throws.
    static func read(_ text: String, collect: ((ConfigError) -> Void)? = nil) throws(ConfigError) -> FilterConfig {
        let root = try TOMLKeys.document(text)
        var config = FilterConfig()
        let top = TOMLKeys(root, "")
        let problems = ProblemCollector(collect)
        func step(_ body: () throws -> Void) throws(ConfigError) { try problems.step(body) }
        try step {
            try top.allow(PolicySettings.keys.union(["gnupg_home", "timeout", "log", "log_format", "log_addresses", "reading", "reinject",
                                                     "journal", "on_key_loss", "on_key_change", "continuity", "listen", "store"]))
        }
        try step { config.gnupgHome = try top.string("gnupg_home") }
        config.policy = try PolicySettings.read(top, collect: collect)
        try step {
            if let value = try top.string("on_key_loss") {
                guard let rule = KeyLossRule(rawValue: value) else { throw ConfigError("on_key_loss: unknown value (allowed: defer, postcard)", path: "on_key_loss") }
                config.policy.mail.onKeyLoss = rule
            }
        }
        config.policy.mail.onKeyChange = .acceptCertified
        try step {
            if let value = try top.string("on_key_change") {
                guard let rule = KeyChangeRule(rawValue: value) else {
                    throw ConfigError("on_key_change: unknown value (defer, accept-certified or accept)", path: "on_key_change")
                }
                config.policy.mail.onKeyChange = rule
            }
        }
        try step {
            if let continuity = try top.table("continuity") {
                try continuity.allow(["directory"])
                config.continuityDirectory = try continuity.string("directory")
            }
        }
        try step { config.timeout = TimeInterval(try top.positiveInt("timeout", atMost: TOMLKeys.day) ?? 120) }
        try step {
            if let value = try top.string("log") {
                guard let log = LogDestination(rawValue: value) else { throw ConfigError("log: unknown value (allowed: syslog, stderr, none)", path: "log") }
                config.log = log
            }
        }
        try step {
            if let value = try top.string("log_format") {
                guard let format = LogFormat(rawValue: value) else { throw ConfigError("log_format: unknown value (allowed: plain, json)", path: "log_format") }
                config.logFormat = format
            }
        }
        try step { config.logAddresses = try top.bool("log_addresses") ?? false }

        try step {
            guard let reinject = try top.table("reinject") else { return }
            try step { try reinject.allow(["method", "sendmail", "host", "port", "timeout", "final_timeout"]) }
            // Every value is checked, also those the chosen method does not use.
            var command: [String] = [], host = "127.0.0.1", port = 10026
            try step { command = try reinject.strings("sendmail") }
            try step { host = try reinject.string("host") ?? host }
            try step { port = try reinject.positiveInt("port", atMost: TOMLKeys.port) ?? port }
            try step {
                switch try reinject.string("method") ?? "sendmail" {
                case "sendmail":
                    if !command.isEmpty { config.reinjection = .sendmail(command) }
                case "smtp":
                    // Re-injection speaks SMTP without TLS or AUTH: the mail system must be on this machine.
                    guard Loopback.contains(host) else {
                        throw ConfigError("reinject.host: not a loopback address (re-injection has no TLS: use 127.0.0.1, ::1 or localhost)",
                                          path: "reinject.host")
                    }
                    config.reinjection = .smtp(host: host, port: port)
                default:
                    throw ConfigError("reinject.method: unknown value (allowed: sendmail, smtp)", path: "reinject.method")
                }
            }
            try step { config.reinjectionTimeout = TimeInterval(try reinject.positiveInt("timeout", atMost: TOMLKeys.day) ?? 60) }
            try step { config.reinjectionFinalTimeout = try reinject.positiveInt("final_timeout", atMost: TOMLKeys.day).map(TimeInterval.init) }
        }

        try step { if let listen = try top.table("listen") { config.listen = try ListenConfig.read(listen) } }
        try step {
            guard let journal = try top.table("journal") else { return }
            try step { try journal.allow(["directory", "expire_days"]) }
            try step { config.journalDirectory = try journal.string("directory") ?? config.journalDirectory }
            try step { config.journalExpiry = TimeInterval(try journal.positiveInt("expire_days", atMost: TOMLKeys.tenYears) ?? 7) * 86400 }
        }
        try step { config.store = try StoreSettings.read(top) }
        config.reading = try ReadingSettings.read(top, collect: collect)
        try step {
            if config.policy.mail.postcardExtension == .partiallyEncrypted && config.reading == nil {
                throw ConfigError("extension: partially-encrypted needs a [reading] table with publish_url and token_file", path: "extension")
            }
        }
        return config
    }
}
