import Foundation
import Synchronization

/// A request to stop handing on, from SIGTERM or SIGINT (or the watchdog),
/// and the sendmail child that is running, so that none outlives the filter.
///
/// The copy under way gets a short grace to finish (a copy the mail system
/// took is recorded in the journal, not sent again); past it the child's
/// whole process group is killed. No further copy starts.
package enum Stop {
    /// Monotonic nanoseconds when the stop was asked for; 0: not asked.
    private static let requestedAt = Atomic<UInt64>(0)
    /// The process group of the running sendmail child; 0: none.
    private static let group = Atomic<Int32>(0)

    /// How long the copy under way may still take after a stop request.
    static let grace: TimeInterval = 3

    /// True once a stop was asked for.
    package static var isRequested: Bool { requestedAt.load(ordering: .acquiring) != 0 }

    /// Asks the filter to stop handing on (async-signal context is not
    /// needed: call it from a dispatch signal source).
    package static func request() {
        _ = requestedAt.compareExchange(expected: 0, desired: max(1, now()), ordering: .acquiringAndReleasing)
    }

    /// True when the grace after a stop request is over.
    static var graceIsOver: Bool {
        let at = requestedAt.load(ordering: .acquiring)
        return at != 0 && now() >= at + UInt64(grace * 1e9)
    }

    /// Kills the running child's process group at once (SIGKILL): for the
    /// watchdog, just before the filter exits.
    package static func killRunningChild() {
        let pgid = group.load(ordering: .acquiring)
        if pgid > 0 { kill(-pgid, SIGKILL) }
    }

    static func register(_ pgid: pid_t) { group.store(pgid, ordering: .releasing) }
    static func unregister() { group.store(0, ordering: .releasing) }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Only for tests: forget an earlier request.
    static func reset() { requestedAt.store(0, ordering: .releasing) }
}
