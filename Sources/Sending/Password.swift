import Foundation
import SMTP

/// The password could not be had. Never carries the password or the
/// command's output; names the command's exit status at most.
public struct PasswordError: Error, Sendable, CustomStringConvertible {
    /// One line; never the password or the command's output.
    public let description: String
}

/// Gets the password for the submission server, into the SMTP module's
/// ``SecretBytes`` (its own memory, zeroed with `explicit_bzero` when the
/// last reference goes; never a String, which Swift may copy anywhere).
public enum Password {
    /// Gets the password for `config`: runs `password_command` once, or takes
    /// the one in the (private) file; nil when none is configured.
    public static func obtain(for config: UserConfig, timeout: TimeInterval = 120) throws(PasswordError) -> SecretBytes? {
        switch config.submission.password {
        case .none: return nil
        case .inFile:
            return config.filePassword
        case .command(let command): return try run(command, timeout: timeout)
        }
    }

    /// Runs `/bin/sh -c COMMAND` with standard input from /dev/null and
    /// standard output into a pipe; the password is what it prints, less one
    /// final line break. The command is not in our argv (only the shell's),
    /// and what it prints appears nowhere. Killed after `timeout` seconds.
    package static func run(_ command: String, timeout: TimeInterval) throws(PasswordError) -> SecretBytes {
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { throw PasswordError(description: "password_command: cannot make a pipe") }
        // Neither end may leak into the child beyond its standard output (no
        // pipe2 in Glibc's module map; dup2 onto 1 clears the flag there).
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        defer {
            for pointer in argv { if let pointer { explicit_bzero(pointer, strlen(pointer)); free(pointer) } }
        }
        // Our own process group, not one of its own: a command that asks on the
        // terminal (/dev/tty) must stay in the foreground group to read it.
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ)
        close(pipeFDs[1])
        guard spawned == 0 else {
            close(pipeFDs[0])
            throw PasswordError(description: "password_command: cannot run /bin/sh")
        }

        let limit = 4096
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit, alignment: 1)
        var count = 0
        var failure: String?
        var status: Int32 = 0
        var exited = false
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { failure = "password_command: no answer within \(Int(timeout)) s"; break }
            var poller = pollfd(fd: pipeFDs[0], events: Int16(POLLIN), revents: 0)
            // Short slices: the shell may be done while a child it left in the
            // background still holds the pipe open (no end of file would come).
            let ready = poll(&poller, 1, Int32(min(left, 0.1) * 1000) + 1)
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
        if failure != nil && !exited { kill(pid, SIGKILL) }
        if !exited { while waitpid(pid, &status, 0) < 0 && errno == EINTR {} }
        if failure == nil {
            let exited = status & 0x7f == 0
            let code = (status >> 8) & 0xff
            if !exited { failure = "password_command: killed by signal \(status & 0x7f)" }
            else if code != 0 { failure = "password_command: failed with status \(code)" }
        }
        if failure == nil {
            if count > 0 && buffer[count - 1] == 10 { count -= 1 }
            if count > 0 && buffer[count - 1] == 13 { count -= 1 }
            if count == 0 { failure = "password_command: printed no password" }
        }
        defer {
            explicit_bzero(buffer.baseAddress!, buffer.count)
            buffer.deallocate()
        }
        if let failure { throw PasswordError(description: failure) }
        var bytes = Array(buffer[..<count])
        return SecretBytes(consuming: &bytes)  // zeroes the array
    }
}
