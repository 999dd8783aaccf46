import Foundation
import Platform

/// The `[store]` table the filter's configuration and `mailsec serve`'s
/// share: a PostgreSQL database several nodes keep their shared state in
/// (key continuity, the reading server's documents). Without it each node
/// keeps its own (the folder, the SQLite file), as before.
///
/// ```toml
/// [store]
/// url = "postgres://mailsec@db.example.org:5432/mailsec"
/// password_file = "/etc/mailsec/store-password"   # 0600, ours; or:
/// # password_command = "cat /run/credentials/mailsec-filter/store"
/// ca_file = "/etc/mailsec/db-ca.pem"   # optional: the CAs the server's certificate is checked against
/// connect_timeout = 10                 # seconds
/// timeout = 30                         # seconds for one statement
/// key_sync_interval = 30               # resident filter: seconds between checks for published keys
/// ```
///
/// TLS, with the server's certificate and name verified, is required for
/// every host but loopback; nothing turns it off.
public struct StoreSettings: Sendable, Equatable {
    /// Where the password comes from.
    public enum Password: Sendable, Equatable {
        /// The text of `password_file` (read when the configuration is).
        case text(String)
        /// `password_command`, run with `/bin/sh -c` when the store is opened.
        case command(String)
        /// Neither (a server that trusts the connection, e.g. `trust` on loopback).
        case none
    }

    /// The user name.
    public var user: String
    /// The server's host name or address.
    public var host: String
    /// The server's port (1 to 65535).
    public var port: Int
    /// The database.
    public var database: String
    /// Where the password comes from.
    public var password: Password
    /// PEM file of the CAs trusted for the server's certificate; nil: the system's.
    public var caFile: String?
    /// True when TLS is used: always for a host that is not loopback, and on
    /// loopback when `tls = true` asks for it.
    public var tls: Bool
    /// Seconds a connection may take to be made.
    public var connectTimeout: Int
    /// Seconds one statement may take; past it the connection is dropped and the call fails.
    public var timeout: Int
    /// Seconds `password_command` may take.
    public var passwordTimeout: Int
    /// `key_sync_interval`: seconds between the resident filter's checks for
    /// keys published (`mailsec keys publish`), the fallback for a NOTIFY
    /// it missed (1 to 86400; default 30).
    public var keySyncInterval: Int

    /// The URL without any secret, for error lines.
    public var displayURL: String { "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)" }

    /// A store at `host`; TLS unless `host` is loopback.
    public init(user: String, host: String, port: Int = 5432, database: String, password: Password = .none) {
        self.user = user
        self.host = host
        self.port = port
        self.database = database
        self.password = password
        self.caFile = nil
        self.tls = !Loopback.contains(host)
        self.connectTimeout = 10
        self.timeout = 30
        self.passwordTimeout = 60
        self.keySyncInterval = 30
    }

    /// The keys of `[store]`.
    package static let keys: Set<String> = ["url", "password_file", "password_command", "password_timeout", "ca_file", "tls",
                                            "connect_timeout", "timeout", "key_sync_interval"]

    /// The `[store]` table of the file `file` whose text is `text` (a
    /// filter.toml, or a file holding only the table): a file without one is
    /// an error too. The first problem throws, located (`FILE:LINE: problem`).
    package static func read(text: String, file: String) throws(ConfigError) -> StoreSettings {
        do throws(ConfigError) {
            guard let settings = try read(TOMLKeys(try TOMLKeys.document(text), "")) else {
                throw ConfigError("no [store] table")
            }
            return settings
        } catch {
            throw error.located(in: file, text: text)
        }
    }

    /// Reads `top`'s `[store]` table; nil when there is none. The first problem throws.
    package static func read(_ top: TOMLKeys) throws(ConfigError) -> StoreSettings? {
        guard let table = try top.table("store") else { return nil }
        try table.allow(keys)
        guard let url = try table.string("url") else {
            throw ConfigError("store.url: required (postgres://USER@HOST:PORT/DATABASE)", path: "store.url")
        }
        var settings = try parse(url: url)
        let file = try table.string("password_file")
        let command = try table.string("password_command")
        switch (file, command) {
        case (.some, .some):
            throw ConfigError("store: give either password_file or password_command, not both", path: "store.password_file")
        case (.some(let file), nil):
            settings.password = .text(try PrivateFile.read(file, key: "store.password_file"))
        case (nil, .some(let command)):
            guard !command.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ConfigError("store.password_command: empty", path: "store.password_command")
            }
            settings.password = .command(command)
        case (nil, nil):
            settings.password = .none
        }
        settings.caFile = try table.string("ca_file")
        if let tls = try table.bool("tls") {
            // Never off for a host that is not loopback: the key can only add TLS.
            guard tls || Loopback.contains(settings.host) else {
                throw ConfigError("store.tls: TLS cannot be turned off for a server that is not on loopback", path: "store.tls")
            }
            settings.tls = tls
        }
        if settings.caFile != nil && !settings.tls {
            throw ConfigError("store.ca_file: needs TLS (tls = true on loopback)", path: "store.ca_file")
        }
        settings.connectTimeout = try table.positiveInt("connect_timeout", atMost: 300) ?? settings.connectTimeout
        settings.timeout = try table.positiveInt("timeout", atMost: 3600) ?? settings.timeout
        settings.passwordTimeout = try table.positiveInt("password_timeout", atMost: 3600) ?? settings.passwordTimeout
        settings.keySyncInterval = try table.positiveInt("key_sync_interval", atMost: TOMLKeys.day) ?? settings.keySyncInterval
        return settings
    }

    /// `postgres://USER@HOST:PORT/DATABASE` (or `postgresql://`; the port is
    /// 5432 when left out; an IPv6 address in brackets). A password in the
    /// URL is refused: it belongs in a private file.
    package static func parse(url: String) throws(ConfigError) -> StoreSettings {
        func bad(_ why: String) -> ConfigError {
            ConfigError("store.url: \(why) (postgres://USER@HOST:PORT/DATABASE)", path: "store.url")
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "postgres" || scheme == "postgresql" else {
            throw bad("not a postgres:// URL")
        }
        guard components.password == nil else { throw bad("no password in the URL; use password_file or password_command") }
        guard components.query == nil, components.fragment == nil else { throw bad("no options after the database") }
        guard let user = components.user, !user.isEmpty else { throw bad("the user is missing") }
        guard var host = components.host, !host.isEmpty else { throw bad("the host is missing") }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = components.port ?? 5432
        guard (1...TOMLKeys.port).contains(port) else { throw bad("the port must be 1 to 65535") }
        let database = String(components.path.dropFirst())
        guard !database.isEmpty, !database.contains("/") else { throw bad("the database is missing") }
        return StoreSettings(user: user, host: host, port: port, database: database)
    }
}
