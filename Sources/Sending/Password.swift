import Foundation
import Platform
import Settings
import SMTP

/// The password could not be had. Never carries the password or the
/// command's output; names the command's exit status at most.
public struct PasswordError: Error, Sendable, CustomStringConvertible {
    /// One line; never the password or the command's output.
    public let description: String
    /// True when the command gave no answer in time: nobody said no, so
    /// what waits for the password stays pending and is tried again.
    public var timedOut = false
}

/// Gets the password for the submission server, into the SMTP module's
/// ``SecretBytes`` (its own memory, zeroed with `explicit_bzero` when the
/// last reference goes; never a String, which Swift may copy anywhere).
package enum Password {
    /// How long `password_command` may take unless `password_timeout` says otherwise.
    package static let defaultTimeout = 60

    /// Gets the password for `config`: runs `password_command` once (for at
    /// most `password_timeout` seconds), or takes the one in the (private)
    /// file; nil when none is configured.
    package static func obtain(for config: UserConfig) throws(PasswordError) -> SecretBytes? {
        switch config.submission.password {
        case .none: return nil
        case .inFile:
            return config.filePassword
        case .command(let command):
            return try run(command, timeout: TimeInterval(config.submission.passwordTimeout ?? defaultTimeout))
        }
    }

    /// Runs `/bin/sh -c COMMAND` with standard input from /dev/null, standard
    /// output into a pipe and standard error to /dev/null (what it says is not
    /// ours to show, and a child it leaves behind must not hold our standard
    /// error open); the password is what it prints, less one final line
    /// break. The command is not in our argv (only the shell's), and what it
    /// prints appears nowhere. It runs in a process group of its own, which is
    /// ended as a whole when it is done or after `timeout` seconds: nothing it
    /// started outlives it. On a terminal the group gets the terminal for the
    /// while (a command may ask for a passphrase on /dev/tty).
    package static func run(_ command: String, timeout: TimeInterval) throws(PasswordError) -> SecretBytes {
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { throw PasswordError(description: "password_command: cannot make a pipe") }
        // Neither end may leak into the child beyond its standard output (no
        // pipe2 in Glibc's module map; dup2 onto 1 clears the flag there).
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let spawned = ChildProcess.spawn("/bin/sh", ["/bin/sh", "-c", command], stdin: .null, stdout: .descriptor(pipeFDs[1]),
                                         stderr: .null, ownGroup: true)
        close(pipeFDs[1])
        guard case .success(let pid) = spawned else {
            close(pipeFDs[0])
            throw PasswordError(description: "password_command: cannot run /bin/sh")
        }
        let terminal = Terminal.handOver(to: pid)
        defer { terminal?.takeBack() }

        let limit = 4096
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit, alignment: 1)
        var count = 0
        var failure: String?
        var timedOut = false
        var status: Int32 = 0
        var exited = false
        let deadline = ChildProcess.monotonicNanoseconds() + UInt64(timeout * 1e9)
        while true {
            let now = ChildProcess.monotonicNanoseconds()
            if now >= deadline { failure = "password_command: no answer within \(Int(timeout)) s"; timedOut = true; break }
            var poller = pollfd(fd: pipeFDs[0], events: Int16(POLLIN), revents: 0)
            // Short slices: the shell may be done while a child it left in the
            // background still holds the pipe open (no end of file would come).
            let ready = poll(&poller, 1, Int32(min(deadline - now, 100_000_000) / 1_000_000) + 1)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { failure = "password_command: cannot read its output"; break }
            if ready == 0 {
                if exited { break }  // the shell is gone and nothing more came: that was all
                if waitpid(pid, &status, WNOHANG) == pid { exited = true }
                continue
            }
            if count == limit { failure = "password_command: printed more than \(limit) bytes"; break }
            let got = read(pipeFDs[0], buffer.baseAddress! + count, limit - count)
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            count += got
        }
        close(pipeFDs[0])
        // All of the output came: the shell has until the deadline to end.
        while failure == nil && !exited {
            if waitpid(pid, &status, WNOHANG) == pid { exited = true; break }
            if ChildProcess.monotonicNanoseconds() >= deadline {
                failure = "password_command: no answer within \(Int(timeout)) s"
                timedOut = true
                break
            }
            usleep(5_000)
        }
        // Whatever the command left running goes with it (the leader reaped, if it was not yet).
        if exited { kill(-pid, SIGKILL) } else { ChildProcess.killGroup(pid) }
        if failure == nil {
            let code = ChildProcess.exitCode(status)
            if code > 128 { failure = "password_command: killed by signal \(code - 128)" }
            else if code != 0 { failure = "password_command: failed with status \(code)" }
        }
        if failure == nil {
            if count > 0 && buffer[count - 1] == 10 { count -= 1 }
            if count > 0 && buffer[count - 1] == 13 { count -= 1 }
            if count == 0 { failure = "password_command: printed no password" }
        }
        defer {
            zeroize(UnsafeMutableRawBufferPointer(buffer))
            buffer.deallocate()
        }
        if let failure { throw PasswordError(description: failure, timedOut: timedOut) }
        var bytes = Array(buffer[..<count])
        return SecretBytes(consuming: &bytes)  // zeroes the array
    }
}

/// The controlling terminal lent to a child's process group: when we are in
/// the terminal's foreground, the child's group is made the foreground (so
/// that it may read a passphrase from /dev/tty) and we take it back after.
struct Terminal {
    let fd: Int32

    /// Lends the terminal to the group `pid` leads; nil without a terminal
    /// or when we are not in its foreground (then it is not ours to lend).
    static func handOver(to pid: pid_t) -> Terminal? {
        let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard tcgetpgrp(fd) == getpgrp(), tcsetpgrp(fd, pid) == 0 else {
            close(fd)
            return nil
        }
        // A member that read the terminal before it was lent was stopped (SIGTTIN): on it goes.
        kill(-pid, SIGCONT)
        return Terminal(fd: fd)
    }

    /// Takes the terminal back for our own group. From the background that
    /// raises SIGTTOU, which is ignored for the call.
    func takeBack() {
        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var previous = sigaction()
        sigaction(SIGTTOU, &ignore, &previous)
        _ = tcsetpgrp(fd, getpgrp())
        sigaction(SIGTTOU, &previous, nil)
        close(fd)
    }
}
