import Filter
import Foundation
import Monitoring
import OpenPGP
import Prometheus
import Synchronization

/// The resident filter's metrics (`[listen] metrics_address`). Counters move
/// once per mail the listener handed to the filter, when its answer is known;
/// a retried mail counts again. With `[store]`, the key sync's state too
/// (``keySync(revision:success:)``, ``keySyncFailed(_:)``).
package final class FilterMetrics: Sendable {
    /// Every metric below, as `GET /metrics` shows it.
    package let registry = PrometheusCollectorRegistry()
    private let duration: DurationHistogram
    private let censored: Counter
    private let withheld: Counter
    private let gpgStarted: Counter
    private let gpgSeen = Mutex(0)
    private let inProgress: Gauge
    private let waiting: Gauge
    private let syncRevision: Gauge
    private let syncSuccess: Gauge
    private let syncLag: Gauge
    private let syncPending: Gauge

    static let outcomes = ["sent", "deferred", "refused", "rejected"]
    static let kinds = ["letter", "postcard", "unchanged", "password-notice"]

    package init() {
        // Every fixed series exists from the start, at 0: a rate needs a first value.
        for outcome in Self.outcomes { _ = Self.mails(registry, outcome) }
        for kind in Self.kinds { _ = Self.copies(registry, kind) }
        // Kept: swift-prometheus stops the process when a metric is made again with another help text.
        censored = registry.makeCounter(name: "mailsec_filter_censored_postcards_total",
                                        help: "Postcards handed on with the sender's marked spans taken out")
        withheld = registry.makeCounter(name: "mailsec_filter_withheld_parts_total",
                                        help: "Parts the postcards handed on withheld (opaque_parts = withhold)")
        duration = registry.makeDurationHistogram(
            name: "mailsec_filter_mail_duration_seconds",
            buckets: [.milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                      .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(120)],
            help: "Time from a mail's end of data to its answer")
        gpgStarted = registry.makeCounter(name: "mailsec_gpg_processes_started_total",
                                          help: "gpg processes started by this filter (operations and version probes)")
        inProgress = registry.makeGauge(name: "mailsec_filter_mails_in_progress", help: "Mails a worker is filtering now")
        waiting = registry.makeGauge(name: "mailsec_filter_mails_waiting", help: "Mails received and waiting for a free worker")
        syncRevision = registry.makeGauge(name: "mailsec_key_sync_revision",
                                          help: "The revision of the published keys this node applied last to its keyring")
        syncSuccess = registry.makeGauge(name: "mailsec_key_sync_last_success_timestamp_seconds",
                                         help: "When the key sync last found this node's keyring up to date with the shared store (Unix time)")
        syncLag = registry.makeGauge(name: "mailsec_key_sync_lag_seconds",
                                     help: "Seconds from the last applied publication's announcement (or its check) to its keyring being in use")
        syncPending = registry.makeGauge(name: "mailsec_key_sync_pending_revisions",
                                         help: "Revisions published and not applied when last seen (a refused one stays here)")
        for reason in Self.syncFailures { _ = Self.syncFailure(registry, reason) }
    }

    static let syncFailures = ["unreachable", "refused", "keyring"]

    static func syncFailure(_ registry: PrometheusCollectorRegistry, _ reason: String) -> Counter {
        registry.makeCounter(name: "mailsec_key_sync_failures_total", labels: [("reason", reason)],
                             help: "Key sync checks that failed: the shared store unreachable, a published revision refused, or the node's own keyring folder failing (full, read-only)")
    }

    /// The keyring is at `revision` and the store was read at `success` (nil: it was not reached);
    /// `pending` revisions wait (nil: not known), `lag` seconds went from announcement to use.
    func keySync(revision: Int64, success: Date?, pending: Int?, lag: Double?) {
        syncRevision.set(revision)
        if let success { syncSuccess.set(success.timeIntervalSince1970) }
        if let pending { syncPending.set(Int64(pending)) }
        if let lag { syncLag.set(lag) }
    }

    /// A key sync check failed: `reason` is one of ``syncFailures``.
    func keySyncFailed(_ reason: String) {
        Self.syncFailure(registry, reason).increment()
    }

    static func mails(_ registry: PrometheusCollectorRegistry, _ outcome: String) -> Counter {
        registry.makeCounter(name: "mailsec_filter_mails_total", labels: [("outcome", outcome)],
                             help: "Mails answered, by outcome: sent (250), deferred (451), refused and rejected (554)")
    }

    static func copies(_ registry: PrometheusCollectorRegistry, _ kind: String) -> Counter {
        registry.makeCounter(name: "mailsec_filter_copies_total", labels: [("kind", kind)],
                             help: "Copies handed on, by kind")
    }

    /// One mail answered with `result` after `elapsed`.
    func record(_ result: FilterResult, elapsed: Duration) {
        Self.mails(registry, result.outcome).increment()
        let handed = result.handed
        for (kind, count) in zip(Self.kinds, [handed.letters, handed.postcards, handed.unchanged, handed.notices]) where count > 0 {
            Self.copies(registry, kind).increment(by: Int64(count))
        }
        if result.censoredPostcards > 0 { censored.increment(by: Int64(result.censoredPostcards)) }
        if result.withheldParts > 0 { withheld.increment(by: Int64(result.withheldParts)) }
        for (decision, reason) in result.decisions {
            registry.makeCounter(name: "mailsec_filter_recipient_decisions_total", labels: [("decision", decision), ("reason", reason)],
                                 help: "Recipients' decisions in the plans made, by decision and reason (as mailsec plan --json names them)")
                .increment()
        }
        duration.record(elapsed)
    }

    /// Before a scrape: the mails at work and waiting, and the gpg processes started since the last one.
    func refresh(busy: Int, waiting count: Int) {
        inProgress.set(Int64(busy))
        waiting.set(Int64(count))
        let now = GnuPG.processesStarted
        let delta = gpgSeen.withLock { seen in
            defer { seen = max(seen, now) }
            return now - seen
        }
        if delta > 0 { gpgStarted.increment(by: Int64(delta)) }
    }
}
