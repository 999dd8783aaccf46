internal import CGMime
import Foundation

/// Limits and behaviour of the parser.
public struct ParseOptions: Sendable, Hashable {
    /// The largest input accepted, in bytes.
    public var maxSize: Int
    /// The deepest nesting of parts accepted (multiparts and embedded
    /// messages); the top-level body is depth 1.
    public var maxDepth: Int
    /// The most parts accepted, embedded messages' parts included.
    public var maxParts: Int
    /// The most header fields accepted in one header section.
    public var maxHeaders: Int

    /// The largest ``maxSize`` the parser can take: a message is held in one GLib byte array,
    /// whose length is 32 bits, with room for a last read of 64 KiB (4,294,901,759 bytes).
    public static let largestSize = Int(UInt32.max) - (64 << 10)

    /// Limits; the defaults are ``standard``.
    public init(maxSize: Int = 64 << 20, maxDepth: Int = 32, maxParts: Int = 10_000, maxHeaders: Int = 2_000) {
        self.maxSize = maxSize
        self.maxDepth = maxDepth
        self.maxParts = maxParts
        self.maxHeaders = maxHeaders
    }

    /// Checks a parsed tree against the limits on depth, parts and header fields.
    func check(headers: Int, body: MIMEEntity?) throws {
        guard headers <= maxHeaders else { throw MIMEError(.tooManyHeaders, limit: maxHeaders) }
        guard let body else { return }
        guard body.depth <= maxDepth else { throw MIMEError(.tooDeep, limit: maxDepth) }
        let parts = body.walk()
        guard parts.count <= maxParts else { throw MIMEError(.tooManyParts, limit: maxParts) }
        for (_, part) in parts {
            guard headerCount(of: part.raw) <= maxHeaders,
                  (part.embeddedMessage.map { headerCount(of: $0.object) } ?? 0) <= maxHeaders else {
                throw MIMEError(.tooManyHeaders, limit: maxHeaders)
            }
        }
    }

    /// No limits: for copies of what was parsed under limits already.
    package static let unlimited = ParseOptions(maxSize: .max, maxDepth: .max, maxParts: .max, maxHeaders: .max)

    /// 64 MiB, nesting up to 32 levels, 10,000 parts, 2,000 fields per header section.
    public static let standard = ParseOptions()
}

/// A problem the parser noticed and worked around (`GMimeParserWarning`).
public struct ParseIssue: Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem.
    public enum Kind: Sendable, Hashable {
        case duplicatedHeader, duplicatedParameter, unencoded8BitHeader, invalidContentType
        case invalidEncodedWord, malformedMultipart, truncatedMessage, malformedMessage
        case invalidHeaderName, conflictingHeader, conflictingParameter, multipartWithoutBoundary
        case invalidParameter, invalidAddressList, nestingOverflow, partWithoutContent
        case partWithoutHeadersOrContent
        case other(UInt32)

        init(_ warning: GMimeParserWarning) {
            switch warning {
            case GMIME_WARN_DUPLICATED_HEADER: self = .duplicatedHeader
            case GMIME_WARN_DUPLICATED_PARAMETER: self = .duplicatedParameter
            case GMIME_WARN_UNENCODED_8BIT_HEADER: self = .unencoded8BitHeader
            case GMIME_WARN_INVALID_CONTENT_TYPE: self = .invalidContentType
            case GMIME_WARN_INVALID_RFC2047_HEADER_VALUE: self = .invalidEncodedWord
            case GMIME_WARN_MALFORMED_MULTIPART: self = .malformedMultipart
            case GMIME_WARN_TRUNCATED_MESSAGE: self = .truncatedMessage
            case GMIME_WARN_MALFORMED_MESSAGE: self = .malformedMessage
            case GMIME_CRIT_INVALID_HEADER_NAME: self = .invalidHeaderName
            case GMIME_CRIT_CONFLICTING_HEADER: self = .conflictingHeader
            case GMIME_CRIT_CONFLICTING_PARAMETER: self = .conflictingParameter
            case GMIME_CRIT_MULTIPART_WITHOUT_BOUNDARY: self = .multipartWithoutBoundary
            case GMIME_WARN_INVALID_PARAMETER: self = .invalidParameter
            case GMIME_WARN_INVALID_ADDRESS_LIST: self = .invalidAddressList
            case GMIME_CRIT_NESTING_OVERFLOW: self = .nestingOverflow
            case GMIME_WARN_PART_WITHOUT_CONTENT: self = .partWithoutContent
            case GMIME_CRIT_PART_WITHOUT_HEADERS_OR_CONTENT: self = .partWithoutHeadersOrContent
            default: self = .other(warning.rawValue)
            }
        }
    }

    /// What is wrong.
    public let kind: Kind
    /// Byte offset in the input where the parser noticed it, if known.
    public let offset: Int64?

    /// GMime's `GMIME_CRIT_*` issues: parts of the input may be skipped or read
    /// differently by other software.
    public var isCritical: Bool {
        switch kind {
        case .invalidHeaderName, .conflictingHeader, .conflictingParameter, .multipartWithoutBoundary,
             .nestingOverflow, .partWithoutHeadersOrContent: true
        default: false
        }
    }

    /// The problem in words, without message content.
    public var description: String {
        "\(kind)" + (offset.map { " at byte \($0)" } ?? "")
    }
}

/// Collects parser warnings through GMime's warning callback.
///
/// GMime copies the parser options, callback and user data included, into
/// every header list it builds, and calls the callback again when a header is
/// changed long after the parse. So the callback gets no pointer of ours:
/// it reports to the collector that is parsing on this thread right now, and
/// warnings outside a parse are dropped.
final class IssueCollector {
    var issues: [ParseIssue] = []

    /// The collector parsing on the current thread, if any.
    private static let current: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs `body` with GMime parser options whose warnings land here.
    func withParserOptions<R>(_ body: (OpaquePointer?) throws -> R) rethrows -> R {
        GMimeLibrary.initialise()
        let options = g_mime_parser_options_new()
        defer { g_mime_parser_options_free(options) }
        g_mime_parser_options_set_warning_callback(options, { offset, code, _, _ in
            guard let active = pthread_getspecific(IssueCollector.current) else { return }
            let collector = Unmanaged<IssueCollector>.fromOpaque(active).takeUnretainedValue()
            collector.issues.append(ParseIssue(kind: .init(code), offset: offset >= 0 ? Int64(offset) : nil))
        }, nil)
        let previous = pthread_getspecific(Self.current)
        pthread_setspecific(Self.current, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(Self.current, previous) }
        return try withExtendedLifetime(self) { try body(options) }
    }
}
