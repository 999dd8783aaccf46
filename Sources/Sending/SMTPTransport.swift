import Foundation
import Outbox
import Platform
import Settings
import SMTP

/// The submission server of the configuration, spoken to with the SMTP
/// module: STARTTLS or implicit TLS (never plain), AUTH with the password
/// obtained once per session (from `password_command` or the file) and
/// zeroed when the session is open.
public struct SMTPTransport: SubmissionTransport {
    /// The configuration naming the server, its security and the credentials.
    public let config: UserConfig

    /// A transport to `config`'s submission server.
    public init(config: UserConfig) {
        self.config = config
    }

    /// The server as the SMTP module takes it.
    var server: SMTPServer {
        let settings = config.submission
        var timeouts = SMTPTimeouts.rfc5321
        if let step = settings.timeout {
            // One figure for every step; the final reply after DATA keeps its
            // longer wait (the RFC 1047 window is shorter the longer we wait).
            timeouts = .uniform(step: TimeInterval(step), finalReply: max(TimeInterval(step), SMTPTimeouts.rfc5321.finalReply))
        }
        return SMTPServer(host: settings.host, port: settings.port, security: settings.security == .tls ? .tls : .startTLS,
                          caFile: settings.caFile, heloName: settings.heloName, timeouts: timeouts)
    }

    /// Connects, secures (STARTTLS or implicit TLS) and authenticates: a session ready for mail.
    public func open() async throws(SubmissionFailure) -> any SubmissionSession {
        var credentials: SMTPCredentials?
        if let username = config.submission.username {
            let secret: SecretBytes?
            do { secret = try Password.obtain(for: config) } catch {
                // The password could not be had: the person must look (a
                // locked password store waits for them, it is not the network).
                // No answer in time is no refusal: the copies stay pending.
                throw SubmissionFailure(error.timedOut ? .temporary : .permanent, error.description, endsSession: true)
            }
            if let secret { credentials = SMTPCredentials(username: username, secret: secret, mechanisms: config.submission.mechanisms) }
        }
        do {
            return SMTPSession(connection: try await SMTPConnection.open(server, credentials: credentials))
        } catch {
            throw Self.failure(error)
        }
    }

    /// Whether the server answers now: online, offline (no route) or unreachable.
    public func probe() async -> ConnectionState {
        let settings = config.submission
        let timeout = TimeInterval(settings.timeout ?? 10)
        return await withCheckedContinuation { done in
            Thread.detachNewThread { done.resume(returning: Reachability.check(host: settings.host, port: settings.port, timeout: timeout)) }
        }
    }

    /// An SMTP error in the outbox's words: authentication and TLS failures
    /// and 5xx are permanent, the rest temporary.
    static func failure(_ error: SMTPError) -> SubmissionFailure {
        let reason: String
        switch error.code {
        case .authenticationFailed:
            reason = "authentication failed" + (error.reply.map { " (\($0.code) \($0.text))" } ?? "")
        case .tlsFailed: reason = "TLS verification failed: \(error.description)"
        case .tlsUnavailable: reason = "the server offers no TLS: \(error.description)"
        default: reason = error.description
        }
        let endsSession = error.code != .permanent && error.code != .temporary
        return SubmissionFailure(error.isTemporary ? .temporary : .permanent, reason, endsSession: endsSession)
    }
}

/// One SMTP session as a ``SubmissionSession``.
final class SMTPSession: SubmissionSession {
    let connection: SMTPConnection

    init(connection: SMTPConnection) {
        self.connection = connection
    }

    func send(from sender: String, to recipients: [String], message: [UInt8]) async throws(SubmissionFailure)
        -> [String: RecipientOutcome] {
        let delivery: SMTPDelivery
        do { delivery = try await connection.send(from: sender, to: recipients, message: message) } catch {
            var failure = SMTPTransport.failure(error)
            // A transaction refused as a whole leaves the session usable only while it is open.
            if await !connection.isOpen { failure = SubmissionFailure(failure.kind, failure.reason, endsSession: true) }
            throw failure
        }
        var outcomes: [String: RecipientOutcome] = [:]
        for recipient in delivery.recipients {
            switch recipient.status {
            case .accepted: outcomes[recipient.address] = .accepted
            case .temporary(let reply): outcomes[recipient.address] = .temporary("\(reply.code) \(reply.text)")
            case .permanent(let reply): outcomes[recipient.address] = .permanent("\(reply.code) \(reply.text)")
            }
        }
        return outcomes
    }

    func quit() async { await connection.quit() }
}
