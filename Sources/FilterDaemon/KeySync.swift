import Filter
import Foundation
import Pipeline
import Synchronization

/// The resident filter following the keys published in the shared store:
/// woken by each announcement (LISTEN/NOTIFY) and, as the fallback for one
/// it missed, every `key_sync_interval` seconds, it reads the rows after the
/// revision its keyring holds and applies them all as one change
/// (``NodeKeyring/apply(_:)``: a new home beside the old, swapped in), then
/// drops the key look-ups it kept. A store it cannot reach, or a revision it
/// refuses, leaves the keyring as it is: mail goes on with it, and the
/// metrics and one log line (when the state changes) say so.
package final class KeySync: @unchecked Sendable {
    // @unchecked: `condition` guards `woken`, `announced` and `stopped`; the rest is fixed in init or Sendable.
    private let feed: any KeyFeed
    /// The node's keyring.
    package let keyring: NodeKeyring
    private let keys: KeyCache?
    private let metrics: FilterMetrics?
    private let interval: TimeInterval
    private let log: @Sendable (String) -> Void
    private let condition = NSCondition()
    private var woken = false
    private var announced: ContinuousClock.Instant?
    private var stopped = false
    private var listening: KeyFeedListening?
    private var thread: Thread?
    private let failing = Mutex<String?>(nil)
    /// One check at a time: the loop's, and one asked for directly (at start, by a test).
    private let checking = NSLock()
    private let counts = Mutex((checks: 0, applied: 0, failures: 0))
    /// Rows read per query; more are read in further pages of the same check.
    static let page = 500

    /// Follows `feed` into `keyring`, every `interval` seconds at least;
    /// `keys` is the look-up cache to drop after a change.
    package init(feed: any KeyFeed, keyring: NodeKeyring, keys: KeyCache?, metrics: FilterMetrics?, interval: TimeInterval,
                 log: @escaping @Sendable (String) -> Void) {
        self.feed = feed
        self.keyring = keyring
        self.keys = keys
        self.metrics = metrics
        self.interval = interval
        self.log = log
        metrics?.keySync(revision: keyring.revision, success: nil, pending: nil, lag: nil)
    }

    /// Checks made, checks that applied a change, checks that failed (for tests).
    package var statistics: (checks: Int, applied: Int, failures: Int) { counts.withLock { $0 } }

    /// Starts listening and the thread that checks.
    package func start() {
        let listening = feed.follow { [weak self] in self?.wake(announced: true) }
        let thread = Thread { [weak self] in self?.loop() }
        thread.name = "mailsec-key-sync"
        condition.lock()
        self.listening = listening
        self.thread = thread
        condition.unlock()
        thread.start()
    }

    /// Stops listening and checking (a check in progress finishes).
    package func stop() {
        condition.lock()
        stopped = true
        let listening = listening
        condition.broadcast()
        condition.unlock()
        listening?.stop()
    }

    /// Asks for a check now (an announcement, or a test).
    package func wake(announced: Bool = false) {
        condition.lock()
        woken = true
        if announced && self.announced == nil { self.announced = ContinuousClock.now }
        condition.broadcast()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            if !woken && !stopped { _ = condition.wait(until: Date().addingTimeInterval(interval)) }
            if stopped {
                condition.unlock()
                return
            }
            woken = false
            let since = announced
            announced = nil
            condition.unlock()
            check(announcedAt: since)
        }
    }

    /// One check: every row after the keyring's revision read and applied
    /// as one change. True when the keyring is now as current as the store.
    @discardableResult
    package func check(announcedAt: ContinuousClock.Instant? = nil) -> Bool {
        checking.lock()
        defer { checking.unlock() }
        counts.withLock { $0.checks += 1 }
        let started = announcedAt ?? ContinuousClock.now
        var rows: [PublishedKey] = []
        do throws(KeyFeedError) {
            var after = keyring.revision
            while true {
                let page = try feed.changes(after: after, limit: Self.page)
                rows += page
                guard page.count == Self.page, let last = page.last else { break }
                after = last.revision
            }
        } catch {
            fail("unreachable", "mailsec filter: key sync: \(error.description); filtering goes on with the keyring at revision "
                 + "\(keyring.revision)")
            return false
        }
        if !rows.isEmpty {
            do throws(KeyringSyncError) {
                let revision = try keyring.apply(rows)
                keys?.clear()
                counts.withLock { $0.applied += 1 }
                let lag = ContinuousClock.now - started
                let seconds = Double(lag.components.seconds) + Double(lag.components.attoseconds) / 1e18
                metrics?.keySync(revision: revision, success: Date(), pending: 0, lag: seconds)
                log("mailsec filter: key sync: keyring at revision \(revision) (\(rows.count) change\(rows.count == 1 ? "" : "s"), "
                    + "in use \(Int(seconds * 1000)) ms after \(announcedAt == nil ? "the check began" : "the announcement"))")
                recovered()
                return true
            } catch {
                metrics?.keySync(revision: keyring.revision, success: nil, pending: rows.count, lag: nil)
                fail(error.local ? "keyring" : "refused",
                     "mailsec filter: key sync: \(error.description); the keyring stays at revision \(keyring.revision)")
                return false
            }
        }
        keyring.sweep()
        metrics?.keySync(revision: keyring.revision, success: Date(), pending: 0, lag: nil)
        recovered()
        return true
    }

    /// A check went well: after failures, one line says so.
    private func recovered() {
        if failing.withLock({ $0.take() }) != nil {
            log("mailsec filter: key sync: the shared store is reached again and every revision applied; the keyring is at revision "
                + "\(keyring.revision)")
        }
    }

    /// Counts a failed check; says `line` when the failure is new (not every
    /// interval): an outage once, whatever its reasons on the way (refused,
    /// then timing out), and each refusal of another row.
    private func fail(_ reason: String, _ line: String) {
        counts.withLock { $0.failures += 1 }
        metrics?.keySyncFailed(reason)
        let kind = reason == "unreachable" ? reason : line
        let new = failing.withLock { previous in
            defer { previous = kind }
            return previous != kind
        }
        if new { log(line) }
    }
}
