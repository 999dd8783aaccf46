import Hummingbird
import Logging
import NIOCore
import Prometheus

/// A Prometheus endpoint: `GET /metrics` answers the registry's text
/// exposition (format 0.0.4), served by Hummingbird as the reading server is,
/// on an address of its own. Anything else is 404. The resident filter
/// (`[listen] metrics_address`) and `mailsec serve` (`--metrics-listen`) each
/// run one when configured; neither does by default.
package final class MetricsEndpoint: Sendable {
    /// The metrics served.
    package let registry: PrometheusCollectorRegistry
    /// Run before each scrape: values read rather than counted (gauges, the
    /// gpg processes) are brought up to date.
    private let refresh: @Sendable () -> Void

    /// An endpoint for `registry`; `refresh` runs before each scrape.
    package init(registry: PrometheusCollectorRegistry, refresh: @escaping @Sendable () -> Void = {}) {
        self.registry = registry
        self.refresh = refresh
    }

    /// The exposition text as a scrape gets it.
    package func exposition() -> [UInt8] {
        refresh()
        return registry.emitToBuffer()
    }

    /// Serves on `host`:`port` until the calling task is cancelled (or, with
    /// `signals`, until SIGTERM or SIGINT); `onListening` gets the bound port.
    package func run(host: String, port: Int, signals: Bool = false, onListening: @escaping @Sendable (Int) -> Void) async throws {
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.exposition())))
        }
        var logger = Logger(label: "mailsec-metrics")
        logger.logLevel = .warning
        let app = Application(router: router,
                              server: .http1(configuration: .init(idleTimeout: .seconds(30))),
                              configuration: .init(address: .hostname(host, port: port), serverName: "mailsec"),
                              onServerRunning: { channel in onListening(channel.localAddress?.port ?? port) },
                              logger: logger)
        if signals { try await app.runService() } else { try await app.run() }
    }

    /// `HOST:PORT` or `[IPv6]:PORT` for showing an address.
    package static func shown(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
