import Synchronization

/// The marked spans of one mail, numbered in the order they are first met,
/// for a partially encrypted postcard: the postcard shows `[#n]`, the
/// reading page fills in span n. The same text (spaces around it aside)
/// keeps its number wherever it stands: in the Subject, in the plain text
/// and again in the HTML alternative.
public final class SpanCatalog: Sendable {
    private struct State { var texts: [String] = []; var numbers: [String: Int] = [:] }
    private let state = Mutex(State())

    /// An empty catalog.
    public init() {}

    /// The number of the span with this text, given on first sight.
    public func number(for content: String) -> Int {
        let text = Self.trimmed(content)
        return state.withLock { state in
            if let number = state.numbers[text] { return number }
            state.texts.append(text)
            state.numbers[text] = state.texts.count
            return state.texts.count
        }
    }

    /// The visible place of the span with this text: `[#n]`.
    public func place(for content: String) -> String { Self.place(number(for: content)) }

    /// `[#n]`.
    public static func place(_ number: Int) -> String { "[#\(number)]" }

    /// The span texts: span 1 first.
    public var spans: [String] { state.withLock { $0.texts } }

    static func trimmed(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars: scalars[first...last])
    }
}

/// A piece of a text whose spans were taken out: literal text, or the place of span n.
public enum TextSegment: Sendable, Equatable {
    case text(String)
    case span(Int)
}

extension Redactor {
    /// `text` cut at its marked spans: the literal pieces, and for each span
    /// its number in `catalog`. Throws when markers do not pair up.
    public func segments(_ text: String, catalog: SpanCatalog, part: String = "text") throws(PolicyError) -> [TextSegment] {
        let scalars = Array(text.unicodeScalars)
        var out: [TextSegment] = []
        var position = 0
        func literal(_ range: Range<Int>) {
            guard !range.isEmpty else { return }
            out.append(.text(String(scalars: scalars[range])))
        }
        for span in try spans(scalars, part: part) {
            literal(position..<span.openStart)
            out.append(.span(catalog.number(for: String(scalars: scalars[span.openEnd..<span.closeStart]))))
            position = span.closeEnd
        }
        literal(position..<scalars.count)
        return out
    }
}
