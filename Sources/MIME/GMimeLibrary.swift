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
public struct MIMEError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong; cases may be added later.
    public enum Code: Sendable, Equatable {
        /// The input is larger than ``ParseOptions/maxSize``.
        case tooLarge(limit: Int)
        /// Parts nest deeper than ``ParseOptions/maxDepth``.
        case tooDeep(limit: Int)
        /// The message has more parts than ``ParseOptions/maxParts``.
        case tooManyParts(limit: Int)
        /// A header section has more fields than ``ParseOptions/maxHeaders``.
        case tooManyHeaders(limit: Int)
        /// A header section holds a NUL byte, which mail may not carry.
        case nulInHeader
        /// GMime could not make a message or part out of the input.
        case notParsable
        /// Reading or writing failed (the text is GLib's or the system's).
        case io(String)
        /// An argument is not acceptable (for example an empty media type).
        case invalidArgument(String)
    }

    public let code: Code

    public init(_ code: Code) { self.code = code }

    public var description: String {
        switch code {
        case .tooLarge(let limit): "message is larger than the limit of \(limit) bytes"
        case .tooDeep(let limit): "MIME parts nest deeper than the limit of \(limit)"
        case .tooManyParts(let limit): "message has more than the limit of \(limit) MIME parts"
        case .tooManyHeaders(let limit): "a header section has more than the limit of \(limit) fields"
        case .nulInHeader: "a header section contains a NUL byte, which mail may not carry"
        case .notParsable: "input is not a MIME message"
        case .io(let reason): "I/O error: \(reason)"
        case .invalidArgument(let what): "invalid argument: \(what)"
        }
    }

    /// Copies a `GError` out and frees it.
    init(taking error: UnsafeMutablePointer<GError>?) {
        let reason = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "unknown error"
        if let error { g_error_free(error) }
        self.init(.io(reason))
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

    deinit { g_object_unref(raw) }

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
