import Filter
import Foundation
import Monitoring
import OpenPGP
import Settings
import SMTPListener

/// `mailsec filter --listen`: the resident filter. Reads filter.toml, listens
/// for SMTP (or LMTP) from the MTA, filters each mail on the pipe filter's
/// decision path and answers it; SIGHUP reloads the configuration, SIGTERM
/// (or SIGINT) stops accepting, lets the mails in progress finish within
/// `drain_timeout`, and ends.
package enum ResidentFilter {
    /// EX_CONFIG: the configuration cannot be used.
    package static let configError: Int32 = 78

    /// Runs in the foreground until SIGTERM; returns the exit status (0 after
    /// a clean stop, 78 for a configuration that cannot be used, 75 when the
    /// address cannot be listened on). `address` overrides `[listen] address`.
    package static func run(configPath: String, address: (host: String, port: Int)?) async -> Int32 {
        let config: FilterConfig
        do { config = try FilterConfig.load(path: configPath) } catch {
            say("mailsec filter: \(error)")
            return configError
        }
        // With [store], the home follows the published keys: it becomes a link to
        // its current generation (before any thread runs, and before any mail).
        var keys: (keyring: NodeKeyring, feed: any KeyFeed, interval: Int)?
        if let store = config.store, let home = config.gnupgHome {
            guard let open = KeyFeedHandle.open.withLock({ $0 }) else {
                say("mailsec filter: [store] is set, but this program cannot follow published keys")
                return configError
            }
            do {
                // The store first: a password that cannot be had leaves the home as it was.
                let feed = try open(store)
                keys = (try NodeKeyring(home: home), feed, store.keySyncInterval)
            } catch let error as KeyringSyncError {
                say("mailsec filter: key sync: \(error)")
                return configError
            } catch {
                say("mailsec filter: key sync: \(error)")
                return 75
            }
        }
        // Before any thread runs (setenv is not thread-safe): gpg's home as the
        // process's, so GPGME probes `gpg --version` once for the daemon's life
        // (with [store] a mail's home is the current generation: one probe per change).
        GnuPG.makeHomeTheDefault(keys?.keyring.current ?? config.gnupgHome)
        signal(SIGPIPE, SIG_IGN)
        return await serve(config, configPath: configPath, address: address, keys: keys)
    }

    /// Problems of the configuration at `configPath` for the resident filter,
    /// one line each (`PATH:LINE: problem`, as every configuration error);
    /// empty when it can be used.
    package static func check(configPath: String, address: (host: String, port: Int)?) -> [ConfigError] {
        FilterConfig.check(path: configPath) { config in
            var problems: [ConfigError] = []
            let host = address?.host ?? config.listen.host
            if !ListenerSettings.isLoopback(host) {
                problems.append(ConfigError("listen address \(host) is not a loopback address (the listener has no TLS and no AUTH)",
                                            path: address == nil ? "listen.address" : nil))
            }
            for (what, folder, key) in [("journal folder", config.journalDirectory, "journal.directory"),
                                        ("spool folder", config.listen.spoolDirectory ?? ListenerSettings.defaultSpoolDirectory,
                                         "listen.spool_directory")] {
                if let problem = folderProblem(folder) { problems.append(ConfigError("\(what) \(folder): \(problem)", path: key)) }
            }
            if case .sendmail(let command) = config.reinjection, let executable = command.first, access(executable, X_OK) != 0 {
                problems.append(ConfigError("reinject.sendmail \(executable) cannot be run", path: "reinject.sendmail"))
            }
            return problems
        }
    }

    private static func serve(_ initial: FilterConfig, configPath: String, address: (host: String, port: Int)?,
                              keys: (keyring: NodeKeyring, feed: any KeyFeed, interval: Int)?) async -> Int32 {
        let listen = initial.listen
        let metrics = listen.metrics.map { _ in FilterMetrics() }
        let handler = FilterMailHandler(config: initial, parallel: listen.parallel, metrics: metrics, keyring: keys?.keyring, log: say)
        // One check before the first mail (bounded by [store]'s time-outs); a store not reachable leaves the keyring as it is.
        let sync = keys.map { KeySync(feed: $0.feed, keyring: $0.keyring, keys: handler.resources.keys, metrics: metrics,
                                      interval: TimeInterval($0.interval), log: say) }
        if let sync {
            sync.check()
            sync.start()
        }
        defer { sync?.stop() }
        var settings = ListenerSettings(
            host: address?.host ?? listen.host, port: address?.port ?? listen.port,
            dialect: listen.lmtp ? .lmtp : .smtp, maxMessageSize: listen.maxMessageSize,
            maxConnections: listen.maxConnections, maxConnectionsPerAddress: listen.maxConnectionsPerAddress,
            idleTimeout: .seconds(listen.idleTimeout), firstCommandTimeout: .seconds(listen.firstCommandTimeout))
        if let spool = listen.spoolDirectory { settings.spoolDirectory = spool }
        let listener = SMTPListener(settings: settings, handler: handler, log: { say("mailsec filter: " + $0) })

        let signals = SignalWatch([SIGTERM, SIGINT, SIGHUP])
        let port: Int
        do { port = try await listener.start() } catch {
            say("mailsec filter: \(error)")
            return 75
        }
        let shown = MetricsEndpoint.shown(settings.host, port)
        var scrapes: Task<Void, Never>?
        if let metrics, let address = listen.metrics {
            let endpoint = MetricsEndpoint(registry: metrics.registry) { handler.refreshMetrics() }
            let bound = await startMetrics(endpoint, address)
            guard let bound else {
                await listener.stopAccepting()
                return 75
            }
            scrapes = bound
        }
        say("mailsec filter: listening on \(shown)")
        SystemdNotify.send("READY=1")

        for await number in signals.stream {
            if number == SIGHUP {
                reload(configPath, into: handler)
                continue
            }
            break
        }
        SystemdNotify.send("STOPPING=1")
        await listener.stopAccepting()
        let drain = handler.config.listen.drainTimeout
        say("mailsec filter: stopping; \(handler.mailsInProgress) mails in progress, up to \(drain) s to finish them")
        let clean = await listener.drain(timeout: .seconds(drain))
        if !clean {
            // Cut off: the mails still running stop between copies (what went
            // out is journalled), so the MTA's retry sends only the rest.
            Stop.request()
        }
        let idle = handler.waitIdle(timeout: clean ? 5 : 5 + 3)
        handler.resources.reinjection?.closeAll()
        scrapes?.cancel()
        await scrapes?.value
        say("mailsec filter: stopped" + (clean && idle ? "" : " (mails cut off: the MTA retries them)"))
        return 0
    }

    /// Starts the metrics endpoint on `address`; once it listens says where, and
    /// returns its task (cancelled to stop it). Nil, with one line said, when
    /// the address cannot be listened on.
    private static func startMetrics(_ endpoint: MetricsEndpoint, _ address: (host: String, port: Int)) async -> Task<Void, Never>? {
        let (bound, continuation) = AsyncStream<Int?>.makeStream()
        let task = Task {
            do {
                try await endpoint.run(host: address.host, port: address.port) { port in
                    say("mailsec filter: metrics on http://\(MetricsEndpoint.shown(address.host, port))/metrics")
                    continuation.yield(port)
                }
            } catch {
                say("mailsec filter: metrics address \(MetricsEndpoint.shown(address.host, address.port)): \(error)")
            }
            continuation.yield(nil)
            continuation.finish()
        }
        var iterator = bound.makeAsyncIterator()
        guard case .some(.some) = await iterator.next() else { return nil }
        return task
    }

    /// SIGHUP: the file read again; one that cannot be used keeps the running one.
    private static func reload(_ path: String, into handler: FilterMailHandler) {
        do {
            let config = try FilterConfig.load(path: path)
            let listenChanged = config.listen != handler.config.listen
            handler.replace(config)
            say("mailsec filter: configuration reloaded" + (listenChanged ? " ([listen] changes take effect on restart)" : ""))
        } catch {
            say("mailsec filter: configuration not reloaded, the running one stays: \(error)")
        }
    }

    private static func folderProblem(_ folder: String) -> String? {
        var info = stat()
        if stat(folder, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { return "is not a folder" }
            return access(folder, W_OK | X_OK) == 0 ? nil : "is not writable"
        }
        // Made with its missing parents: the nearest folder that exists must let us.
        var parent = (folder as NSString).deletingLastPathComponent
        while !parent.isEmpty, parent != "/", stat(parent, &info) != 0 { parent = (parent as NSString).deletingLastPathComponent }
        if parent.isEmpty { parent = "." }
        if stat(parent, &info) == 0, info.st_mode & S_IFMT != S_IFDIR { return "cannot be made (\(parent) is not a folder)" }
        return access(parent, W_OK | X_OK) == 0 ? nil : "cannot be made (\(parent) is not writable)"
    }

    /// One line to stderr in one write (lines of parallel mails never mix).
    @Sendable static func say(_ line: String) {
        var text = String(line.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
        text += "\n"
        _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
}

/// Signals as a stream: each is ignored for its default action and delivered
/// through a dispatch source.
/// @unchecked: the sources are set up once in init and only kept alive after.
private final class SignalWatch: @unchecked Sendable {
    let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        let queue = DispatchQueue(label: "mailsec.signals")
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }
}
