import Foundation
import Platform
import Settings
import SMTP

/// A copy could not be handed on. Always temporary for the filter (75).
package struct HandoverError: Error, Sendable, CustomStringConvertible {
    /// One line naming the hand-over and why it failed; never message content.
    package let description: String
}

extension FilterConfig {
    /// For a process that filters one mail (give it to ``FilterResources``,
    /// and ``ReinjectionPool/closeAll()`` at the end): with SMTP re-injection,
    /// a pool whose one session is opened now in the background
    /// (``ReinjectionPool/openAhead(_:)``), while the mail is encrypted,
    /// instead of when the first copy is ready. Nil for sendmail.
    package func prepareHandover() -> ReinjectionPool? {
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
    /// stop was asked for and its grace is over). The copy goes to the child
    /// straight from memory: no file holds it, so no way of ending (the
    /// watchdog's `_exit`, a signal, kill -9) can leave it behind.
    static func sendmail(_ command: [String], _ bytes: [UInt8], sender: String, recipients: [String],
                         timeout: TimeInterval) throws(HandoverError) {
        guard let executable = command.first else { throw HandoverError(description: "no sendmail command") }
        guard let channel = ChildProcess.inputChannel() else { throw HandoverError(description: "cannot make a channel to \(executable)") }
        var ours: Int32? = channel.ours
        defer { if let ours { Glibc.close(ours) } }
        let arguments = [executable] + Array(command.dropFirst()) + ["-f", sender, "--"] + recipients
        let spawned = ChildProcess.spawn(executable, arguments, stdin: .descriptor(channel.child), stdout: .null, stderr: .null,
                                         ownGroup: true)
        Glibc.close(channel.child)
        guard case .success(let pid) = spawned else { throw HandoverError(description: "cannot run \(executable)") }
        Stop.register(pid)
        defer { Stop.unregister() }
        let deadline = Stop.now() + UInt64(timeout * 1e9)
        var offset = 0
        var status: Int32 = 0
        while true {
            if let fd = ours {
                if let fed = ChildProcess.feed(bytes, to: fd, offset: offset) { offset = fed } else { offset = -1 }
                // All of it given (end of file for the child), or the child stopped reading.
                if offset < 0 || offset == bytes.count { Glibc.close(fd); ours = nil }
            }
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { break }
            if done < 0 && errno != EINTR { throw HandoverError(description: "lost track of \(executable)") }
            if Stop.graceIsOver {
                ChildProcess.killGroup(pid)
                throw HandoverError(description: "\(executable) was stopped by a signal")
            }
            if Stop.now() >= deadline {
                ChildProcess.killGroup(pid)
                throw HandoverError(description: "\(executable) did not finish within \(Int(timeout)) s")
            }
            if let fd = ours {
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, 5)
            } else {
                usleep(5_000)
            }
        }
        guard ChildProcess.exitCode(status) == 0 else {
            throw HandoverError(description: "\(executable) failed with status \(ChildProcess.exitCode(status))")
        }
        // A sendmail that ends well without reading the whole copy may have taken part of it: not a hand-over.
        guard offset == bytes.count else { throw HandoverError(description: "\(executable) ended before reading the whole copy") }
    }
}
