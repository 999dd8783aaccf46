import Foundation

/// When a copy whose last try failed temporarily is tried again: one minute
/// after the first failure, doubling up to an hour; after ``giveUp`` since
/// the copy was queued it fails for good, as a mail server's queue does
/// (Postfix's `maximal_queue_lifetime` is also five days).
public struct Backoff: Sendable, Hashable {
    /// Seconds after the first temporary failure.
    public var first: TimeInterval = 60
    /// The longest wait between tries, in seconds.
    public var longest: TimeInterval = 3600
    /// Seconds after queueing when a copy still not delivered fails for good.
    public var giveUp: TimeInterval = 5 * 86400

    /// The standard backoff: a minute, doubling to an hour, five days in all.
    public init() {}

    /// A minute, doubling to an hour, five days in all.
    public static let standard = Backoff()

    /// The wait after `attempts` tries that did not deliver (attempts ≥ 1).
    public func delay(after attempts: Int) -> TimeInterval {
        let doublings = max(0, min(attempts - 1, 20))
        return min(longest, first * pow(2, Double(doublings)))
    }
}
