import Foundation
import Platform

/// A mail could not be streamed: a pipe or a spool file could not be made
/// or used, or a letter's body could not be written in full. Temporary (the
/// system's, not the mail's); the description holds nothing of the mail.
public struct StreamingError: Error, Sendable, CustomStringConvertible {
    /// One line naming the file or folder and the system's reason.
    public let description: String
}

/// A private temporary file (0600 in `$TMPDIR`, else /tmp) without a name
/// (``UnnamedFile``): nothing else can open it, and it is gone when closed,
/// even if the process dies. Letters' ciphertext is written here; a large
/// one stays here instead of in memory.
public final class Spool: @unchecked Sendable {
    // @unchecked: the descriptor is only read with pread, which keeps no position.
    let fd: Int32

    init() throws(StreamingError) {
        let folder = UnnamedFile.temporaryFolder
        switch UnnamedFile.make(in: folder) {
        case .success(let made): fd = made
        case .failure(let error): throw StreamingError(description: "cannot make a temporary file in \(folder): \(error)")
        }
    }

    deinit { close(fd) }

    /// The number of bytes in the file.
    var size: Int {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Calls `body` with the file's bytes in pieces of at most 1 MiB, in order.
    func forEachPiece(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        // No larger than the file: a small letter's read costs no 1 MiB buffer.
        var piece = [UInt8](repeating: 0, count: max(1, min(size, 1 << 20)))
        var offset = 0
        while true {
            let count = piece.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw StreamingError(description: "cannot read a temporary file: \(String(cString: strerror(errno)))") }
            if count == 0 { return }
            try piece.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            offset += count
        }
    }

    /// The whole file in memory.
    func bytes() throws -> [UInt8] {
        var all: [UInt8] = []
        all.reserveCapacity(size)
        try forEachPiece { all += $0 }
        return all
    }
}
