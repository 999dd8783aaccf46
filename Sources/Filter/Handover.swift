import Foundation
import SMTP

/// A copy could not be handed on. Always temporary for the filter (75).
public struct HandoverError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// Hands written copies back to the mail system. Over SMTP all copies of a
/// mail share one connection, one transaction each (the greeting and EHLO
/// are paid once per mail, not per copy); with sendmail each copy is a run
/// of its own. Close the handover when the mail is done.
final class Handover {
    private let method: Reinjection
    private let timeout: TimeInterval
    private let finalReplyTimeout: TimeInterval
    private var connection: BlockingSMTPConnection?

    /// `timeout` for each step (a sendmail run: the whole of it);
    /// `finalReplyTimeout` for the SMTP reply after the message, longer on
    /// purpose (RFC 1047: a copy taken after we stopped waiting is sent again).
    init(via method: Reinjection, timeout: TimeInterval, finalReplyTimeout: TimeInterval? = nil) {
        self.method = method
        self.timeout = timeout
        self.finalReplyTimeout = finalReplyTimeout ?? timeout
    }

    deinit { close() }

    /// Hands on one copy; when this returns, the mail system has taken it.
    func send(_ bytes: [UInt8], sender: String, recipients: [String]) throws(HandoverError) {
        switch method {
        case .sendmail(let command):
            try Self.sendmail(command, bytes, sender: sender, recipients: recipients, timeout: timeout)
        case .smtp(let host, let port):
            let client: BlockingSMTPConnection
            if let connection { client = connection } else {
                // Loopback re-injection: no TLS, no AUTH, and our own name
                // needs no DNS look-up.
                let server = SMTPServer(host: host, port: port, security: .none, heloName: "localhost",
                                        timeouts: .uniform(step: timeout, finalReply: finalReplyTimeout))
                do { client = try BlockingSMTPConnection.open(server) } catch {
                    throw HandoverError(description: error.description)  // closed; no QUIT on a session that never began
                }
                connection = client
            }
            // All or nothing: the journal records a copy as a whole, so a
            // copy some of whose recipients were refused is not sent at all.
            do { _ = try client.send(from: sender, to: recipients, message: bytes, allOrNothing: true) } catch {
                // A connection after a failed transaction is not used again.
                close()
                throw HandoverError(description: error.description)
            }
        }
    }

    /// Ends the SMTP session, if one is open: QUIT without waiting for its
    /// answer (every copy was taken already; a peer stalling on QUIT must not
    /// hold the filter past its time limit, which would send everything again).
    func close() {
        connection?.quit()
        connection = nil
    }

    /// Runs `command -f SENDER -- RCPT…` with the copy on stdin, killing it
    /// after `timeout`. The copy passes through a private temporary file.
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

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(command.dropFirst()) + ["-f", sender, "--"] + recipients
        process.standardInput = FileHandle(fileDescriptor: fd, closeOnDealloc: false)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        do { try process.run() } catch {
            throw HandoverError(description: "cannot run \(executable)")
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            if done.wait(timeout: .now() + 5) == .timedOut { kill(process.processIdentifier, SIGKILL) }
            throw HandoverError(description: "\(executable) did not finish within \(Int(timeout)) s")
        }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw HandoverError(description: "\(executable) failed with status \(process.terminationStatus)")
        }
    }
}
