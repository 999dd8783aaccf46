import Foundation
import SMTP

/// A copy could not be handed on. Always temporary for the filter (75).
public struct HandoverError: Error, Sendable, CustomStringConvertible {
    /// One line naming the hand-over and why it failed; never message content.
    public let description: String
}

extension FilterConfig {
    /// For a process that filters one mail (give it to ``FilterResources``,
    /// and ``ReinjectionPool/closeAll()`` at the end): with SMTP re-injection,
    /// a pool whose one session is opened now in the background
    /// (``ReinjectionPool/openAhead(_:)``), while the mail is encrypted,
    /// instead of when the first copy is ready. Nil for sendmail.
    public func prepareHandover() -> ReinjectionPool? {
        guard let server = Handover(self).server else { return nil }
        let pool = ReinjectionPool(capacity: 1)
        pool.openAhead(server)
        return pool
    }
}

/// Hands written copies back to the mail system. Over SMTP all copies of a
/// mail share one connection, one transaction each (the greeting and EHLO
/// are paid once per mail, not per copy; with a ``ReinjectionPool``, once
/// for many mails); with sendmail each copy is a run of its own. Close the
/// handover when the mail is done.
final class Handover {
    private let method: Reinjection
    private let timeout: TimeInterval
    private let finalReplyTimeout: TimeInterval
    private let pool: ReinjectionPool?
    private var connection: BlockingSMTPConnection?

    /// `timeout` for each step (a sendmail run: the whole of it);
    /// `finalReplyTimeout` for the SMTP reply after the message, longer on
    /// purpose (RFC 1047: a copy taken after we stopped waiting is sent again).
    /// With `pool`, the SMTP session comes from it and goes back to it.
    init(via method: Reinjection, timeout: TimeInterval, finalReplyTimeout: TimeInterval? = nil, pool: ReinjectionPool? = nil) {
        self.method = method
        self.timeout = timeout
        self.finalReplyTimeout = finalReplyTimeout ?? timeout
        self.pool = pool
    }

    /// The configured hand-over of `config`.
    convenience init(_ config: FilterConfig, pool: ReinjectionPool? = nil) {
        self.init(via: config.reinjection, timeout: config.reinjectionTimeout,
                  finalReplyTimeout: config.reinjectionFinalTimeout ?? config.reinjectionTimeout * 1.5, pool: pool)
    }

    deinit { close() }

    var server: SMTPServer? {
        guard case .smtp(let host, let port) = method else { return nil }
        // Loopback re-injection: no TLS, no AUTH, and our own name needs no DNS look-up.
        return SMTPServer(host: host, port: port, security: .none, heloName: "localhost",
                          timeouts: .uniform(step: timeout, finalReply: finalReplyTimeout))
    }

    /// Hands on one copy; when this returns, the mail system has taken it.
    func send(_ bytes: [UInt8], sender: String, recipients: [String]) throws(HandoverError) {
        switch method {
        case .sendmail(let command):
            try Self.sendmail(command, bytes, sender: sender, recipients: recipients, timeout: timeout)
        case .smtp:
            guard let server else { return }
            let client: BlockingSMTPConnection
            if let connection { client = connection } else {
                do throws(SMTPError) {
                    if let pool { client = try pool.take(server) } else { client = try BlockingSMTPConnection.open(server) }
                } catch {
                    throw HandoverError(description: error.description)  // closed; no QUIT on a session that never began
                }
                connection = client
            }
            // All or nothing: the journal records a copy as a whole, so a
            // copy some of whose recipients were refused is not sent at all.
            do { _ = try client.send(from: sender, to: recipients, message: bytes, allOrNothing: true) } catch {
                // A connection after a failed transaction is not used again.
                client.quit()
                connection = nil
                throw HandoverError(description: error.description)
            }
        }
    }

    /// Ends the SMTP session, if one is open: back to the pool, or QUIT
    /// without waiting for its answer (every copy was taken already; a peer
    /// stalling on QUIT must not hold the filter past its time limit, which
    /// would send everything again).
    func close() {
        guard let connection else { return }
        self.connection = nil
        if let pool, let server { pool.give(connection, server) } else { connection.quit() }
    }

    /// Runs `command -f SENDER -- RCPT…` with the copy on stdin, in a process
    /// group of its own that is killed as a whole after `timeout` (or when a
    /// stop was asked for and its grace is over). The copy passes through a
    /// private temporary file.
    static func sendmail(_ command: [String], _ bytes: [UInt8], sender: String, recipients: [String],
                         timeout: TimeInterval) throws(HandoverError) {
        guard let executable = command.first else { throw HandoverError(description: "no sendmail command") }
        var template = Array("/tmp/mailsec-copy.XXXXXX".utf8CString)
        let fd = mkstemp(&template)   // 0600
        guard fd >= 0 else { throw HandoverError(description: "cannot make a temporary file") }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { Glibc.close(fd); unlink(path) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw HandoverError(description: "cannot write a temporary file") }
            offset += written
        }
        lseek(fd, 0, SEEK_SET)

        let arguments = [executable] + Array(command.dropFirst()) + ["-f", sender, "--"] + recipients
        let pid = try spawnInOwnGroup(executable, arguments, stdin: fd)
        Stop.register(pid)
        defer { Stop.unregister() }
        let deadline = Stop.now() + UInt64(timeout * 1e9)
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { break }
            if done < 0 && errno != EINTR { throw HandoverError(description: "lost track of \(executable)") }
            if Stop.graceIsOver {
                killGroup(pid)
                throw HandoverError(description: "\(executable) was stopped by a signal")
            }
            if Stop.now() >= deadline {
                killGroup(pid)
                throw HandoverError(description: "\(executable) did not finish within \(Int(timeout)) s")
            }
            usleep(5_000)
        }
        // WIFEXITED and WEXITSTATUS are macros Swift does not import.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw HandoverError(description: "\(executable) failed with status \(status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + status & 0x7F)")
        }
    }

    /// Starts `executable` as the leader of a new process group (so that it
    /// and everything it starts can be killed together), with `stdin` as its
    /// standard input, /dev/null for output, and default signal handling.
    private static func spawnInOwnGroup(_ executable: String, _ arguments: [String], stdin: Int32) throws(HandoverError) -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let err = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        guard err == 0 else { throw HandoverError(description: "cannot run \(executable)") }
        return pid
    }

    /// Ends the child's whole group: SIGTERM, up to 2 s for the leader, then
    /// SIGKILL for whatever is left of the group, and the leader reaped.
    private static func killGroup(_ pid: pid_t) {
        kill(-pid, SIGTERM)
        var status: Int32 = 0
        let until = Stop.now() + 2_000_000_000
        while waitpid(pid, &status, WNOHANG) == 0 && Stop.now() < until { usleep(5_000) }
        kill(-pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }
}
