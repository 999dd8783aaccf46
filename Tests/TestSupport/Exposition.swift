import Foundation

/// Prometheus' text exposition (format 0.0.4) as series → value: each sample
/// line `name{label="value",…} number` keyed by everything before the number,
/// as it stands (swift-prometheus writes labels in the order they were given).
/// Throws on a line that is neither a comment nor a sample with a number,
/// so that a scrape cut off or garbled fails the test that reads it.
public func parseExposition(_ text: String) throws -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            throw FixtureError(message: "not an exposition line: \(line)")
        }
        let series = String(line[..<space])
        guard samples[series] == nil else { throw FixtureError(message: "series twice: \(series)") }
        samples[series] = value
    }
    guard !samples.isEmpty else { throw FixtureError(message: "an exposition without samples") }
    return samples
}

extension Dictionary where Key == String, Value == Double {
    /// The sample of `series`, 0 when it is absent (a labelled counter not yet incremented).
    public func value(_ series: String) -> Double { self[series] ?? 0 }

    /// The sum of every series of the metric `name` (any labels).
    public func sum(_ name: String) -> Double {
        filter { $0.key == name || $0.key.hasPrefix(name + "{") }.values.reduce(0, +)
    }
}
