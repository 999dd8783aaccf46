import Glibc

/// Files that are there completely or not at all: written whole under a
/// private temporary name (0600, `O_EXCL`, never following a link), synced,
/// then renamed (or linked) into place, and the folder synced. The journal,
/// key continuity, the journal's clock and the sent folder write this way.
package enum DurableFile {
    /// Where writing stopped, with the `errno` of the step.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        /// The step that failed.
        package enum Step: Sendable, Equatable {
            /// The temporary file could not be made.
            case create
            /// Its bytes could not all be written (a full disk, say).
            case write
            /// It could not be synced.
            case sync
            /// It could not be put in place.
            case rename
            /// ``DurableFile/create(_:with:)`` only: the file exists already.
            case exists
            /// The file is in place but its folder could not be synced: after
            /// a crash the file may not be there. Callers that can live with
            /// that (a copy filed for the sender) go on.
            case syncFolder
        }

        /// The step that failed.
        package let step: Step
        /// Why.
        package let reason: OSError

        /// `strerror`'s text (never a path or content).
        package var description: String { reason.description }
    }

    /// Replaces the file at `path` with `bytes`. The temporary is made at
    /// `temporary` (default: beside `path`, a name unique to this process
    /// and call, so two threads writing one path do not meet); it is removed
    /// when anything fails before the rename. With `sync` false (a cache,
    /// a clock whose loss only slows it) nothing is synced.
    package static func replace(_ path: String, with bytes: [UInt8], temporary: String? = nil,
                                sync: Bool = true) throws(Failure) {
        let temporary = temporary ?? uniqueName(beside: path)
        try write(bytes, to: temporary, sync: sync)
        guard rename(temporary, path) == 0 else {
            let failure = Failure(step: .rename, reason: OSError(errno))
            unlink(temporary)
            throw failure
        }
        if sync { try syncFolder(of: path) }
    }

    /// Makes the file at `path` with `bytes` unless it exists (``Failure/Step/exists``):
    /// the first of several writers wins, and none reads it half written.
    package static func create(_ path: String, with bytes: [UInt8]) throws(Failure) {
        let temporary = uniqueName(beside: path)
        try write(bytes, to: temporary, sync: true)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            throw Failure(step: errno == EEXIST ? .exists : .rename, reason: OSError(errno))
        }
        try syncFolder(of: path)
    }

    /// Writes `bytes` into the new file `path` (0600, `O_EXCL`, never
    /// following a link), removed again when any step fails. No temporary
    /// name: for a folder no reader sees until it is complete (a key sync's
    /// new generation, swapped in whole), which its maker syncs as a whole
    /// (`sync` false) or file by file.
    package static func writeNew(_ bytes: [UInt8], to path: String, sync: Bool) throws(Failure) {
        try write(bytes, to: path, sync: sync)
    }

    /// `path` with ".PID.RANDOM.tmp" appended.
    static func uniqueName(beside path: String) -> String {
        path + ".\(getpid()).\(UInt64.random(in: 0...UInt64.max)).tmp"
    }

    /// Writes `bytes` into a new file at `temporary`, removing it on failure.
    private static func write(_ bytes: [UInt8], to temporary: String, sync: Bool) throws(Failure) {
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(step: .create, reason: OSError(errno)) }
        var failure: Failure?
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                // A write of 0 bytes where some were asked is a full disk too.
                failure = Failure(step: .write, reason: OSError(written == 0 ? ENOSPC : errno))
                break
            }
            offset += written
        }
        if failure == nil && sync && fsync(fd) != 0 { failure = Failure(step: .sync, reason: OSError(errno)) }
        // close can report a delayed write error (NFS, a full disk): it counts.
        if close(fd) != 0 && failure == nil && errno != EINTR { failure = Failure(step: .write, reason: OSError(errno)) }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }

    /// Syncs the folder `path` is in, so its new name survives a crash.
    private static func syncFolder(of path: String) throws(Failure) {
        let slash = path.utf8.lastIndex(of: UInt8(ascii: "/"))
        let folder = slash.map { $0 == path.utf8.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(step: .syncFolder, reason: OSError(errno)) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure(step: .syncFolder, reason: OSError(errno)) }
    }
}
