internal import CGMime
import Foundation

/// GMime's one-time initialisation (`g_mime_init`), run lazily and once.
enum GMimeLibrary {
    private static let initialised: Bool = {
        g_mime_init()
        return true
    }()

    static func initialise() { _ = initialised }
}

/// An error from the MIME layer. The description never quotes message content.
///
/// Match a code in a `catch` clause with `catch MIMEError.Code.tooLarge`; the
/// limit or reason that goes with a code is on the error (``limit``, ``detail``).
public struct MIMEError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong. A struct rather than an enum, so that codes can be
    /// added without breaking a caller's `switch` (after GRDB's `ResultCode`).
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The code's stable name.
        public let rawValue: String
        /// A code by its name; the named static members are the ones mailsec throws.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The input is larger than ``ParseOptions/maxSize`` (``MIMEError/limit``: the limit in bytes).
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// Parts nest deeper than ``ParseOptions/maxDepth`` (``MIMEError/limit``).
        public static let tooDeep = Code(rawValue: "tooDeep")
        /// The message has more parts than ``ParseOptions/maxParts`` (``MIMEError/limit``).
        public static let tooManyParts = Code(rawValue: "tooManyParts")
        /// A header section has more fields than ``ParseOptions/maxHeaders`` (``MIMEError/limit``).
        public static let tooManyHeaders = Code(rawValue: "tooManyHeaders")
        /// A header section holds a NUL byte, which mail may not carry.
        public static let nulInHeader = Code(rawValue: "nulInHeader")
        /// Encoded-words left open in a header field, so many that decoding them would cost more than linear time.
        public static let encodedWordsUnbounded = Code(rawValue: "encodedWordsUnbounded")
        /// GMime could not make a message or part out of the input.
        public static let notParsable = Code(rawValue: "notParsable")
        /// Reading or writing failed (``MIMEError/detail``: GLib's or the system's text).
        public static let io = Code(rawValue: "io")
        /// An argument is not acceptable, for example an empty media type (``MIMEError/detail``: which).
        public static let invalidArgument = Code(rawValue: "invalidArgument")

        /// Lets `catch MIMEError.Code.notParsable` match a thrown ``MIMEError``.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? MIMEError)?.code == code
        }
    }

    /// What went wrong.
    public let code: Code
    /// The limit that was exceeded, for the `too…` codes.
    public let limit: Int?
    /// The reason (``Code/io``) or the argument (``Code/invalidArgument``); never message content.
    public let detail: String?

    /// An error with `code`, and the limit or detail that goes with it.
    public init(_ code: Code, limit: Int? = nil, detail: String? = nil) {
        self.code = code
        self.limit = limit
        self.detail = detail
    }

    /// One line naming the problem (and the limit), without message content.
    public var description: String {
        let limit = limit.map(String.init) ?? "?"
        return switch code {
        case .tooLarge: "message is larger than the limit of \(limit) bytes"
        case .tooDeep: "MIME parts nest deeper than the limit of \(limit)"
        case .tooManyParts: "message has more than the limit of \(limit) MIME parts"
        case .tooManyHeaders: "a header section has more than the limit of \(limit) fields"
        case .nulInHeader: "a header section contains a NUL byte, which mail may not carry"
        case .encodedWordsUnbounded: "a header field holds so many encoded-words (=?) without their end (?=) that reading it would "
            + "cost more than linear time"
        case .notParsable: "input is not a MIME message"
        case .io: "I/O error: \(detail ?? "unknown")"
        case .invalidArgument: "invalid argument: \(detail ?? "unknown")"
        default: "MIME error \(code.rawValue)" + (detail.map { ": \($0)" } ?? "")
        }
    }

    /// Copies a `GError` out and frees it.
    init(taking error: UnsafeMutablePointer<GError>?) {
        let reason = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "unknown error"
        if let error { g_error_free(error) }
        self.init(.io, detail: reason)
    }
}

/// Reinterprets a GObject pointer as another GObject type; callers check the
/// type first (the `mailsec_gmime_is_*` shims).
@inline(__always)
func cast<T, U>(_ pointer: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<U> {
    UnsafeMutablePointer<U>(OpaquePointer(pointer))
}

/// Takes over a `char *` that the caller must `g_free`.
func takeString(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
    guard let pointer else { return nil }
    defer { g_free(pointer) }
    return String(cString: pointer)
}

/// An in-memory GMime stream (`GMimeStreamMem`) that we own.
final class MemoryStream {
    let raw: UnsafeMutablePointer<GMimeStream>

    init() {
        GMimeLibrary.initialise()
        raw = g_mime_stream_mem_new()
    }

    /// A stream over a copy of `bytes` (`g_mime_stream_mem_new_with_buffer` copies).
    init(copying bytes: [UInt8]) {
        GMimeLibrary.initialise()
        raw = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { g_mime_stream_mem_new_with_buffer($0.baseAddress, $0.count) }
        }
    }

    /// A stream over the whole input of `fd`, read into one buffer the
    /// stream owns (no second copy): a regular file's first `size` bytes as
    /// `fstat` gave them, anything else (a pipe) to its end. Throws
    /// ``MIMEError/Kind/tooLarge`` past `limit` bytes.
    init(readingAll fd: Int32, limit: Int) throws {
        GMimeLibrary.initialise()
        let limit = min(limit, ParseOptions.largestSize)  // a GByteArray's length is a guint
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw MIMEError(.io, detail: String(cString: strerror(errno))) }
        let regular = (info.st_mode & S_IFMT) == S_IFREG
        guard !regular || Int(info.st_size) <= limit else { throw MIMEError(.tooLarge, limit: limit) }
        let array = g_byte_array_sized_new(guint(regular ? Int(info.st_size) : 64 << 10))!
        raw = g_mime_stream_mem_new_with_byte_array(array)  // owns `array` from here
        var length = 0
        while true {
            // A regular file is read up to its size (one read, nearly always); a pipe in
            // pieces of 64 KiB, to one byte past the limit.
            let want = regular ? Int(info.st_size) - length : min(64 << 10, limit + 1 - length)
            if want <= 0 { break }
            g_byte_array_set_size(array, guint(length + want))
            let got = regular ? pread(fd, array.pointee.data + length, want, off_t(length)) : read(fd, array.pointee.data + length, want)
            if got < 0 {
                if errno == EINTR { g_byte_array_set_size(array, guint(length)); continue }
                throw MIMEError(.io, detail: String(cString: strerror(errno)))
            }
            length += got
            g_byte_array_set_size(array, guint(length))
            if got == 0 { break }
            guard length <= limit else { throw MIMEError(.tooLarge, limit: limit) }
        }
    }

    deinit { g_object_unref(raw) }

    /// Everything written to the stream so far, lent to `body` without a copy.
    func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let memory: UnsafeMutablePointer<GMimeStreamMem> = cast(raw)
        guard let array = g_mime_stream_mem_get_byte_array(memory), array.pointee.len > 0 else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(start: array.pointee.data, count: Int(array.pointee.len))) }
    }

    /// Everything written to the stream so far.
    var bytes: [UInt8] {
        let memory: UnsafeMutablePointer<GMimeStreamMem> = cast(raw)
        guard let array = g_mime_stream_mem_get_byte_array(memory), array.pointee.len > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: array.pointee.data, count: Int(array.pointee.len)))
    }
}

/// Facts about the GMime library in use.
public enum MIMELibrary {
    /// GMime's version, e.g. `3.2.13` (`gmime_major_version` and friends).
    public static var version: String {
        "\(gmime_major_version).\(gmime_minor_version).\(gmime_micro_version)"
    }
}
