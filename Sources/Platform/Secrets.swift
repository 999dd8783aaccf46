import Glibc

/// Overwrites `buffer` with zeros through libc's `explicit_bzero`, a call the
/// optimiser must keep (a plain loop over memory that is freed next may be
/// dropped as a dead store). The one place secrets are wiped.
package func zeroize(_ buffer: UnsafeMutableRawBufferPointer) {
    if let base = buffer.baseAddress, buffer.count > 0 { explicit_bzero(base, buffer.count) }
}

/// Overwrites the bytes of `bytes` with zeros, as the function above.
package func zeroize(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { zeroize($0) }
}

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
                zeroize(UnsafeMutableRawBufferPointer(start: base, count: source.count))
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
        zeroize(storage)
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
