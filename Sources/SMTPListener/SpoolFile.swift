import Foundation
import Platform

/// A mail's content on disk: one file in the spool folder that has no name
/// from the moment it exists (O_TMPFILE; else made by mkstemp and unlinked at
/// once), mode 0600. Owns its descriptor and closes it in `deinit`, which is
/// when the disk space goes back: no path, so nothing is left behind by a
/// disconnect, an error or a crash.
///
/// Written only by the session that made it (on its event loop), then read
/// with `pread`, which has no shared offset: safe from any thread, hence Sendable.
final class SpoolFile: @unchecked Sendable {
    private let fd: Int32
    private(set) var size = 0

    init(directory: String) throws {
        switch UnnamedFile.make(in: directory) {
        case .success(let fd): self.fd = fd
        case .failure(let error): throw ListenerError(.spoolFailed, "cannot make a spool file in \(directory): \(error)")
        }
    }

    deinit { close(fd) }

    /// Appends `bytes`; throws when the disk is full or failing.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(size + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw ListenerError(.spoolFailed, "cannot write a spool file: \(String(cString: strerror(errno)))")
            }
            done += n
        }
        size += done
    }

    /// The whole content.
    func read(count: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var done = 0
        try result.withUnsafeMutableBytes { buffer in
            while done < count {
                let n = pread(fd, buffer.baseAddress! + done, count - done, off_t(done))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    throw ListenerError(.spoolFailed, "cannot read a spool file: \(n < 0 ? String(cString: strerror(errno)) : "it is shorter than written")")
                }
                done += n
            }
        }
        return result
    }
}
