import Foundation

/// Bytes that must not outlive their use: a password, a token. Held in
/// memory of its own, zeroed with `explicit_bzero` (which the optimiser keeps)
/// when the last reference goes. Never printed: `description` says only how
/// long it is.
///
/// `@unchecked Sendable`: the bytes are written once, in `init`, and only read after.
public final class SecretBytes: @unchecked Sendable, CustomStringConvertible {
    private let storage: UnsafeMutableRawBufferPointer

    /// Takes `bytes` and zeroes the caller's array (it is `inout` for that).
    public init(consuming bytes: inout [UInt8]) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        bytes.withUnsafeMutableBytes { source in
            if let base = source.baseAddress {
                storage.baseAddress!.copyMemory(from: base, byteCount: source.count)
                explicit_bzero(base, source.count)
            }
        }
        self.storage = storage
        count = bytes.count
    }

    /// Copies `text` as UTF-8. Prefer ``init(consuming:)``: a Swift `String`
    /// cannot be zeroed, so its own copy lives on until it is freed.
    public convenience init(_ text: String) {
        var bytes = Array(text.utf8)
        self.init(consuming: &bytes)
    }

    deinit {
        explicit_bzero(storage.baseAddress!, storage.count)
        storage.deallocate()
    }

    /// The number of bytes.
    public let count: Int

    /// Lends the bytes to `body`; do not let them escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[..<count]))
    }

    /// The length only, never the bytes.
    public var description: String { "SecretBytes(\(count) bytes)" }
}

/// A buffer for building protocol lines that hold a secret (AUTH); zeroed
/// when the last reference goes.
///
/// `@unchecked Sendable`: filled by one function, then only read (handed to
/// the event loop that writes it).
final class SecretBuffer: @unchecked Sendable {
    private(set) var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    func append(_ byte: UInt8) { bytes.append(byte) }
    func append(contentsOf other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }
    func append(_ secret: SecretBytes) {
        secret.withUnsafeBytes { bytes.append(contentsOf: $0) }
    }

    /// Base64 (RFC 4648) of the bytes, itself a secret.
    func base64() -> SecretBuffer {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let out = SecretBuffer(capacity: (bytes.count + 2) / 3 * 4 + 2)
        var index = 0
        while index < bytes.count {
            let b0 = bytes[index]
            let b1 = index + 1 < bytes.count ? bytes[index + 1] : 0
            let b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(index + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return out
    }

    deinit {
        // The array's capacity was reserved up front, so it was never moved
        // (and no unzeroed copy left behind) while it was filled.
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
    }
}
