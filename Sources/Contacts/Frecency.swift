import Foundation

/// How often and how lately, as one number: every use adds its weight, and
/// every weight halves each ``halfLife`` (exponential decay). The score of
/// uses at times tᵢ with weights wᵢ is, at time t,
///
///     Σ wᵢ · 2^(−(t − tᵢ) / halfLife)
///
/// It is kept as one number and the time it holds for, so a use is one
/// update whatever the history, in any order, and a score is exact at any
/// later time. A mail sent to an address weighs ``sentWeight``; a learned
/// mail it appeared in weighs ``seenWeight`` (whom one writes to says more
/// than who writes).
public enum Frecency {
    /// 30 days.
    public static let halfLife: TimeInterval = 30 * 86400
    /// The weight of a mail sent to the address.
    public static let sentWeight = 1.0
    /// The weight of a learned mail the address appeared in.
    public static let seenWeight = 0.25

    /// `score` at `from`, seen from `to` (later or earlier).
    public static func decayed(_ score: Double, from: TimeInterval, to: TimeInterval) -> Double {
        score * exp2(-(to - from) / halfLife)
    }

    /// Adds a use of `weight` at `time` to `score` kept at `at`; the result is
    /// kept at the later of the two times (so no weight grows).
    public static func adding(_ weight: Double, at time: TimeInterval, to score: Double, keptAt at: TimeInterval)
        -> (score: Double, at: TimeInterval) {
        if time >= at { return (decayed(score, from: at, to: time) + weight, time) }
        return (score + decayed(weight, from: time, to: at), at)
    }
}
