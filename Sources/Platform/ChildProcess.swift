import Glibc

/// A child process started by us: the one place that spawns with posix_spawn,
/// feeds a child's standard input from memory, and ends a child's whole
/// process group (the filter's sendmail hand-over, `password_command`).
package enum ChildProcess {
    /// What a child's standard input, output or error is connected to.
    package enum Stream {
        /// /dev/null.
        case null
        /// This descriptor of ours (duplicated onto the child's).
        case descriptor(Int32)
    }

    /// Starts `executable` with `arguments` (argv[0] included) and default
    /// signal handling, a mask of none; with `ownGroup`, as the leader of a
    /// new process group, so that it and everything it starts can be killed
    /// together (``killGroup(_:)``). Returns the pid, or the `errno` of
    /// `posix_spawn` as the failure. Every argument is zeroed after use: an
    /// argument may be a secret command line.
    package static func spawn(_ executable: String, _ arguments: [String], stdin: Stream, stdout: Stream, stderr: Stream,
                              ownGroup: Bool) -> Result<pid_t, OSError> {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let groupFlag = ownGroup ? POSIX_SPAWN_SETPGROUP : 0
        posix_spawnattr_setflags(&attributes, Int16(groupFlag | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGTTIN, SIGTTOU] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, target)
            }
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { if let pointer { explicit_bzero(pointer, strlen(pointer)); free(pointer) } } }
        var pid: pid_t = 0
        let err = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        return err == 0 ? .success(pid) : .failure(OSError(err))
    }

    /// Ends the group `pid` leads: SIGTERM, up to 2 s for the leader, then
    /// SIGKILL for whatever is left of the group, and the leader reaped.
    package static func killGroup(_ pid: pid_t) {
        kill(-pid, SIGTERM)
        kill(-pid, SIGCONT)  // a member stopped (SIGTTIN, say) must see its SIGTERM
        var status: Int32 = 0
        let until = monotonicNanoseconds() + 2_000_000_000
        while waitpid(pid, &status, WNOHANG) == 0 && monotonicNanoseconds() < until { usleep(5_000) }
        kill(-pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// A pair of connected descriptors for feeding a child's standard input
    /// from memory: `child` goes to the child (close it once spawned),
    /// `ours` is written with ``feed(_:from:offset:)``. A socket pair, not a
    /// pipe, so that a child that stops reading costs an EPIPE, never a
    /// SIGPIPE. Both close on exec.
    package static func inputChannel() -> (ours: Int32, child: Int32)? {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return nil }
        shutdown(ends[1], Int32(SHUT_WR))  // the child only reads
        return (ends[0], ends[1])
    }

    /// Writes as much of `bytes[offset...]` to `fd` as fits without
    /// waiting; returns the new offset, or nil when the reader has gone.
    package static func feed(_ bytes: [UInt8], to fd: Int32, offset: Int) -> Int? {
        var offset = offset
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent > 0 { offset += sent; continue }
            if sent < 0 && errno == EINTR { continue }
            if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return offset }
            return nil
        }
        return offset
    }

    /// Monotonic nanoseconds (CLOCK_MONOTONIC): for deadlines a clock change does not move.
    package static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// A wait status decoded (WIFEXITED and friends are macros Swift does
    /// not import): the exit code, or 128 + the signal's number.
    package static func exitCode(_ status: Int32) -> Int32 {
        status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + status & 0x7F
    }
}

/// An `errno` value, named for error lines.
package struct OSError: Error, Sendable, CustomStringConvertible {
    /// The C value.
    package let rawValue: Int32
    /// Wraps `rawValue`.
    package init(_ rawValue: Int32) { self.rawValue = rawValue }
    /// `strerror`'s text.
    package var description: String { String(cString: strerror(rawValue)) }
}
