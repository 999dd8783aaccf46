import Monitoring
import Prometheus

/// `mailsec serve --metrics-listen`: requests by status, documents
/// published, opened, deleted and expired, and the connections open.
final class ReadingMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let published: Counter
    let opened: Counter
    let deleted: Counter
    let expired: Counter
    private let connections: Gauge

    init() {
        published = registry.makeCounter(name: "mailsec_serve_documents_published_total", help: "Documents published (201)")
        opened = registry.makeCounter(name: "mailsec_serve_documents_opened_total",
                                      help: "Documents fetched by a reading page (GET /api/postcards/ID answered 200)")
        deleted = registry.makeCounter(name: "mailsec_serve_documents_deleted_total", help: "Documents deleted by their publisher")
        expired = registry.makeCounter(name: "mailsec_serve_documents_expired_total", help: "Documents removed at their expiry")
        connections = registry.makeGauge(name: "mailsec_serve_open_connections", help: "Client connections open now")
    }

    /// One request answered with `status`.
    func request(_ status: Int) {
        registry.makeCounter(name: "mailsec_serve_requests_total", labels: [("status", String(status))],
                             help: "Requests answered, by HTTP status").increment()
    }

    /// Before a scrape: the connections open now.
    func refresh(connections open: Int) { connections.set(Int64(open)) }
}
