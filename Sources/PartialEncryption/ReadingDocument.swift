import Foundation

/// What is published for a partially encrypted postcard: the postcard's
/// sender, subject and main text with numbered places for the spans, and the
/// spans themselves only inside the encrypted blob. Neither the password nor
/// any span text is in it.
///
/// JSON, version 1: `{"v":1,"from":[…],"subject":[…],"body":[…],"spans":N,
/// "blob":"base64url","lifetime":seconds?}`. A text is an array of segments:
/// a string is literal text, an integer n stands for span n (1-based), so
/// nothing the sender wrote can pass for a span.
public struct ReadingDocument: Sendable, Equatable, Codable {
    /// A piece of text: literal, or the place of span n.
    public enum Segment: Sendable, Equatable, Codable {
        case text(String)
        case span(Int)

        /// A number is a span's place, a string literal text.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) { self = .span(number) } else { self = .text(try container.decode(String.self)) }
        }

        /// Writes a span's place as a number, text as a string.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .span(let number): try container.encode(number)
            }
        }
    }

    /// The most spans a document may have.
    public static let maximumSpans = 10_000

    /// The document format, 1.
    public var version: Int
    /// The From field, with span places.
    public var from: [Segment]
    /// The Subject, with span places.
    public var subject: [Segment]
    /// The body text, with span places.
    public var body: [Segment]
    /// How many spans the blob holds; the page lists those not placed in the texts.
    public var spanCount: Int
    /// The encrypted spans, base64url (see `SpanBlob`).
    public var blob: String
    /// The lifetime the publisher asks for, in seconds; the server may shorten it.
    public var lifetime: Int?

    enum CodingKeys: String, CodingKey {
        case version = "v", from, subject, body, spanCount = "spans", blob, lifetime
    }

    /// A document of version 1.
    public init(from: [Segment], subject: [Segment], body: [Segment], spanCount: Int, blob: SpanBlob, lifetime: Int? = nil) {
        self.version = 1
        self.from = from
        self.subject = subject
        self.body = body
        self.spanCount = spanCount
        self.blob = blob.base64URL
        self.lifetime = lifetime
    }

    /// Checks what a server must check before storing a document.
    public func validate() throws(SpanBlobError) {
        guard version == 1 else { throw SpanBlobError(.unsupportedVersion) }
        guard (1...Self.maximumSpans).contains(spanCount) else { throw SpanBlobError(.malformed) }
        for segment in from + subject + body {
            if case .span(let number) = segment, !(1...spanCount).contains(number) { throw SpanBlobError(.malformed) }
        }
        if let lifetime, lifetime <= 0 { throw SpanBlobError(.malformed) }
        _ = try SpanBlob(base64URL: blob)
    }

    /// The document as compact JSON with sorted keys.
    public func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    /// Reads a document; `.malformed` for anything else.
    public static func decode(_ bytes: [UInt8]) throws(SpanBlobError) -> ReadingDocument {
        do { return try JSONDecoder().decode(ReadingDocument.self, from: Data(bytes)) } catch { throw SpanBlobError(.malformed) }
    }

    /// `text` with every span's place filled from `spans` (for tests and `mailsec reveal`).
    public static func fill(_ text: [Segment], _ spans: [String]) -> String {
        text.map { segment in
            switch segment {
            case .text(let text): text
            // No arithmetic on the number: it may be any Int a server sent (Int.min - 1 traps).
            case .span(let number): number >= 1 && number <= spans.count ? spans[number - 1] : ""
            }
        }.joined()
    }
}
