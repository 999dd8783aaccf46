import Foundation

/// The `[listen]` table of filter.toml: how the resident filter
/// (`mailsec filter --listen`) takes mail over SMTP or LMTP. The pipe filter
/// ignores it.
package struct ListenConfig: Sendable, Equatable {
    /// The address to listen on (a loopback address: the listener has no TLS and no AUTH).
    package var host: String
    /// The port; 0 takes any free port.
    package var port: Int
    /// LMTP (RFC 2033) instead of SMTP.
    package var lmtp: Bool
    /// The largest mail taken, in octets (announced with SIZE).
    package var maxMessageSize: Int
    /// Connections at once; one more is answered 421 and closed.
    package var maxConnections: Int
    /// Connections at once from one client address (default 32: one Postfix
    /// with its default concurrency of 20 gets through); one more gets 421.
    package var maxConnectionsPerAddress: Int
    /// Mails worked on at once (threads); the default is the number of cores.
    package var parallel: Int {
        get { chosenParallel ?? max(1, ProcessInfo.processInfo.activeProcessorCount) }
        set { chosenParallel = newValue }
    }
    /// Set by the configuration; nil: the number of cores, asked for only by
    /// the resident filter (the pipe filter, one process per mail, never
    /// pays for reading the cgroup's CPU limit).
    private var chosenParallel: Int?
    /// Seconds the listener waits for a client's next command.
    package var idleTimeout: Int
    /// Seconds a new connection has for its first whole command.
    package var firstCommandTimeout: Int
    /// Where mails too large to keep in memory wait; nil: the listener's default.
    package var spoolDirectory: String?
    /// Seconds SIGTERM waits for the mails in progress before it cuts them off.
    package var drainTimeout: Int
    /// Where Prometheus scrapes `GET /metrics` (`metrics_address`); nil: no endpoint.
    /// Unlike the listener it may be any address: it takes nothing in.
    package var metrics: (host: String, port: Int)?

    /// The defaults: 127.0.0.1:10025, SMTP, 10 MB, 100 connections, one mail per core.
    package init() {
        host = "127.0.0.1"
        port = 10025
        lmtp = false
        maxMessageSize = 10_240_000
        maxConnections = 100
        maxConnectionsPerAddress = 32
        chosenParallel = nil
        idleTimeout = 300
        firstCommandTimeout = 30
        spoolDirectory = nil
        drainTimeout = 30
        metrics = nil
    }

    /// `HOST:PORT`, `[IPv6]:PORT`, or `:PORT` for 127.0.0.1.
    package static func address(_ text: String) throws(ConfigError) -> (host: String, port: Int) {
        var host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ConfigError("listen address \"\(text)\": expected [IPv6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw ConfigError("listen address \"\(text)\": expected HOST:PORT") }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard let number = Int(port), (0...65535).contains(number), !port.hasPrefix("+") else {
            throw ConfigError("listen address \"\(text)\": the port must be 0 to 65535")
        }
        guard !host.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw ConfigError("listen address \"\(text)\": not a host")
        }
        return (host.isEmpty ? "127.0.0.1" : String(host), number)
    }

    /// Equal when every setting is, the number of mails at once as it comes out.
    package static func == (a: ListenConfig, b: ListenConfig) -> Bool {
        a.host == b.host && a.port == b.port && a.lmtp == b.lmtp && a.maxMessageSize == b.maxMessageSize
            && a.maxConnections == b.maxConnections && a.parallel == b.parallel && a.idleTimeout == b.idleTimeout
            && a.spoolDirectory == b.spoolDirectory && a.drainTimeout == b.drainTimeout
            && a.maxConnectionsPerAddress == b.maxConnectionsPerAddress && a.firstCommandTimeout == b.firstCommandTimeout
            && a.metrics?.host == b.metrics?.host && a.metrics?.port == b.metrics?.port
    }

    /// Reads the `[listen]` table.
    package static func read(_ table: TOMLKeys) throws(ConfigError) -> ListenConfig {
        try table.allow(["address", "lmtp", "max_message_size", "max_connections", "parallel", "idle_timeout",
                         "spool_directory", "drain_timeout", "max_connections_per_address", "first_command_timeout",
                         "metrics_address"])
        var listen = ListenConfig()
        if let address = try table.string("address") {
            do { (listen.host, listen.port) = try Self.address(address) } catch {
                throw ConfigError(error.problem, path: table.name("address"))
            }
        }
        listen.lmtp = try table.bool("lmtp") ?? false
        listen.maxMessageSize = try table.positiveInt("max_message_size", atMost: Int(UInt32.max) - (64 << 10)) ?? listen.maxMessageSize  // MIME's ParseOptions.largestSize
        listen.maxConnections = try table.positiveInt("max_connections", atMost: 65_536) ?? listen.maxConnections
        listen.chosenParallel = try table.positiveInt("parallel", atMost: 256)
        listen.idleTimeout = try table.positiveInt("idle_timeout", atMost: TOMLKeys.day) ?? listen.idleTimeout
        listen.maxConnectionsPerAddress = try table.positiveInt("max_connections_per_address", atMost: 65_536)
            ?? listen.maxConnectionsPerAddress
        listen.firstCommandTimeout = try table.positiveInt("first_command_timeout", atMost: TOMLKeys.day) ?? listen.firstCommandTimeout
        listen.spoolDirectory = try table.string("spool_directory")
        listen.drainTimeout = try table.positiveInt("drain_timeout", atMost: TOMLKeys.day) ?? listen.drainTimeout
        if let address = try table.string("metrics_address") {
            do { listen.metrics = try Self.address(address) } catch {
                throw ConfigError("\(table.name("metrics_address")): \(error.problem)", path: table.name("metrics_address"))
            }
        }
        return listen
    }
}
