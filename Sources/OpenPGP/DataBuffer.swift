internal import CGPGME
import Foundation
import Platform

/// Owns one `gpgme_data_t`, released in `deinit`.
final class DataBuffer {
    private(set) var raw: gpgme_data_t?
    /// A memory buffer GPGME filled: it may hold (partial) plaintext.
    private let isMemory: Bool

    private init(raw: gpgme_data_t, isMemory: Bool = false) {
        self.raw = raw
        self.isMemory = isMemory
    }

    /// A memory buffer not taken (an operation failed half way) is zeroed too.
    deinit {
        if isMemory {
            _ = takeBytes()
        } else if let raw {
            gpgme_data_release(raw)
        }
    }

    /// An empty, growing memory buffer for output (`gpgme_data_new`).
    static func memory() throws(GPGMEError) -> DataBuffer {
        var dh: gpgme_data_t?
        try GPGMELibrary.initialise()  // GPGME refuses every call before its version check (Not operational)
        try check(gpgme_data_new(&dh), .data)
        guard let dh else { throw GPGMEError(code: .general, .data) }
        return DataBuffer(raw: dh, isMemory: true)
    }

    /// A buffer that reads or writes the open file descriptor `fd`
    /// (`gpgme_data_new_from_fd`): the data streams through, it is not held in memory.
    static func fileDescriptor(_ fd: Int32) throws(GPGMEError) -> DataBuffer {
        var dh: gpgme_data_t?
        try GPGMELibrary.initialise()  // GPGME refuses every call before its version check (Not operational)
        try check(gpgme_data_new_from_fd(&dh, fd), .data)
        guard let dh else { throw GPGMEError(code: .general, .data) }
        return DataBuffer(raw: dh)
    }

    /// Runs `body` with a buffer that reads `bytes` in place, without a copy
    /// (`gpgme_data_new_from_mem` with copy = 0). The buffer must not escape `body`.
    static func borrowing<R>(_ bytes: [UInt8], _ body: (DataBuffer) throws -> R) throws -> R {
        try bytes.withUnsafeBufferPointer { buffer in
            var dh: gpgme_data_t?
            // GPGME wants a non-null pointer even for empty input.
            let base = UnsafeRawPointer(buffer.baseAddress) ?? UnsafeRawPointer(bitPattern: 1)!
            try GPGMELibrary.initialise()
            try check(gpgme_data_new_from_mem(&dh, base.assumingMemoryBound(to: CChar.self), buffer.count, 0), .data)
            guard let dh else { throw GPGMEError(code: .general, .data) }
            let data = DataBuffer(raw: dh)
            return try body(data)
        }
    }

    /// Hands over the written bytes and releases the buffer
    /// (`gpgme_data_release_and_get_mem`). GPGME's copy is zeroed before it is
    /// freed, since it may hold decrypted text.
    func takeBytes() -> [UInt8] {
        guard let dh = raw else { return [] }
        raw = nil
        var length = 0
        guard let mem = gpgme_data_release_and_get_mem(dh, &length) else { return [] }
        defer {
            // explicit_bzero is not optimised away, unlike a memset before free.
            zeroize(UnsafeMutableRawBufferPointer(start: mem, count: length))
            gpgme_free(mem)
        }
        return Array(UnsafeRawBufferPointer(start: mem, count: length))
    }
}
