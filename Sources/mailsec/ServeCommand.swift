import ArgumentParser
import Filter
import Foundation
import HTTPRequests
import PartialEncryption
import Pipeline
import ReadingServer
import Settings
import SharedStore

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the reading pages of partially encrypted postcards.",
        discussion: """
            Stores published postcards (text with numbered places and the encrypted spans; never \
            the password or the span text) in an SQLite file and serves the reading page at \
            /r/ID, which decrypts in the browser. Binds to 127.0.0.1: put a TLS proxy in front \
            and give its address with --public-url. Prints 'listening on URL' once ready; one \
            line per request on standard error. Stops on SIGTERM or SIGINT. POST /api/postcards \
            answers 201 {id, url, deleteToken, expires}; errors are {error}.

            \(ExitStatus.section([
                (.success, "stopped by a signal"),
                (.usage, "usage error, or a publish token shorter than 16 characters"),
                (.noInput, "the token file cannot be read"),
                (.cannotCreate, "the store cannot be opened or made"),
                (.config, "the --store-config file's [store] table is unusable"),
                (.temporary, "the address cannot be bound, or anything unexpected"),
            ]))
            """
    )

    @Option(help: ArgumentHelp("Address to bind.", valueName: "address"))
    var listen = "127.0.0.1"

    @Option(help: ArgumentHelp("Port to bind; 0 picks a free one.", valueName: "port"))
    var port = 8080

    @Option(help: ArgumentHelp("The address readers use, e.g. https://read.example.org (default: http://ADDRESS:PORT).",
                               valueName: "url"))
    var publicURL: String?

    @Option(help: ArgumentHelp("File with the token publishers must present.", valueName: "file"))
    var tokenFile: String

    @Option(help: ArgumentHelp("Largest document accepted: bytes, or with K, M or G (default 1M).", valueName: "size"))
    var maxSize = ByteSize(bytes: 1 << 20)

    @Option(help: ArgumentHelp("Days a published page lives, at most.", valueName: "days"))
    var lifetimeDays = 30

    @Option(help: ArgumentHelp("The SQLite file of published postcards (created 0600).", valueName: "file"))
    var store = "/var/lib/mailsec/reading.sqlite"

    @Option(help: ArgumentHelp("A TOML file whose [store] table names the PostgreSQL database several servers share "
                               + "(url, password_file or password_command, ...; see filter.toml(5)); instead of --store.",
                               valueName: "file"))
    var storeConfig: String?

    @Option(help: ArgumentHelp("Seconds a client has to send a whole request; slower ones are cut off.", valueName: "seconds"))
    var requestTimeout = 10

    @Option(help: ArgumentHelp("Seconds an open connection may stay idle.", valueName: "seconds"))
    var idleTimeout = 30

    @Option(help: ArgumentHelp("Connections served at once (more wait to be accepted).", valueName: "count"))
    var maxConnections = 256

    @Option(help: ArgumentHelp("Connections at once from one client address (more are closed at once).", valueName: "count"))
    var maxConnectionsPerAddress = 32

    @Option(help: ArgumentHelp("Serve Prometheus metrics at http://ADDRESS:PORT/metrics (:PORT for 127.0.0.1; "
                               + "[IPv6]:PORT); off by default. Prints 'metrics on URL' once ready.", valueName: "address:port"))
    var metricsListen: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        try check("--lifetime-days", lifetimeDays, in: Limits.days)
        _ = try maxSize.validate("--max-size")
        try check("--request-timeout", requestTimeout, in: Limits.seconds)
        try check("--idle-timeout", idleTimeout, in: Limits.seconds)
        try check("--max-connections", maxConnections, in: 1...65_536)
        try check("--max-connections-per-address", maxConnectionsPerAddress, in: 1...65_536)
        if let metricsListen {
            do { _ = try ListenConfig.address(metricsListen) } catch { throw ValidationError("--metrics-listen: \(error.description)") }
        }
        if let publicURL, !(publicURL.hasPrefix("https://") || publicURL.hasPrefix("http://")) {
            throw ValidationError("--public-url must start with https:// or http://")
        }
    }

    func run() async throws {
        let token = String(decoding: try readSmallFile(tokenFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.utf8.count >= 16 else { throw CommandFailure("the publish token in \(tokenFile) is shorter than 16 characters", status: .usage) }
        var configuration = ReadingServerConfiguration(host: listen, port: port, storePath: store, publishToken: token,
                                                       publicURL: publicURL, lifetime: lifetimeDays * 86400,
                                                       maximumDocument: maxSize.bytes ?? 1 << 20)
        configuration.limits = ConnectionLimits(requestTimeout: .seconds(requestTimeout), idleTimeout: .seconds(idleTimeout),
                                                maximumConnections: maxConnections, maximumPerAddress: maxConnectionsPerAddress)
        configuration.metrics = try metricsListen.map { try ListenConfig.address($0) }
        let server: ReadingServer
        let log: @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data((Self.timestamp() + " " + line + "\n").utf8))
        }
        if let storeConfig {
            // The shared store: nothing connects until the first request (or the purge at start, which then fails with 75).
            let settings: StoreSettings
            do { settings = try StoreSettings.read(text: String(decoding: try readSmallFile(storeConfig), as: UTF8.self), file: storeConfig) }
            catch let error as ConfigError { throw CommandFailure(error.description, status: .config) }
            do { server = ReadingServer(configuration: configuration, store: try SharedStore.documents(settings), log: log) } catch {
                throw CommandFailure(error.description, status: .temporary)
            }
        } else {
            do {
                server = try ReadingServer(configuration: configuration, log: log)
            } catch {
                // 73 when the file cannot be made, 75 for a busy or damaged one (StoreError's own status).
                throw CommandFailure("cannot open the store \(store): \(error.description)", status: error.exitStatus)
            }
        }
        let host = listen
        let metricsHost = configuration.metrics.map { $0.host.contains(":") ? "[\($0.host)]" : $0.host } ?? host
        do {
            try await server.run(onListening: { port in
                FileHandle.standardOutput.write(Data("listening on http://\(host):\(port)\n".utf8))
            }, onMetrics: { port in
                FileHandle.standardOutput.write(Data("metrics on http://\(metricsHost):\(port)/metrics\n".utf8))
            })
        } catch {
            throw CommandFailure("cannot serve on \(host):\(configuration.port): \(error)", status: .temporary)
        }
    }

    static func timestamp() -> String { ISO8601DateFormatter().string(from: Date()) }
}
