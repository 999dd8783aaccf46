/// Why an SMTP session or transaction failed. The code tells a caller what
/// to do next: ``isTemporary`` means "try again later", anything else waits
/// for a person (or bounces). The text never holds a password or message
/// content; a server's reply in it is sanitised (``SMTPReply/text``).
package struct SMTPError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What failed; a struct, so that codes can be added. Match with `catch SMTPError.Code.…`.
    package struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code's stable name.
        package let rawValue: String
        /// A code by its name.
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        package var description: String { rawValue }

        /// The server answered 4xx to the transaction (MAIL, DATA or the final reply).
        package static let temporary = Code(rawValue: "temporary")
        /// The server answered 5xx, or the message cannot be sent to this server
        /// as it is (too large for its SIZE, an address that needs SMTPUTF8).
        package static let permanent = Code(rawValue: "permanent")
        /// AUTH was refused (535 and other 5xx), or would have needed an
        /// unencrypted connection.
        package static let authenticationFailed = Code(rawValue: "authentication-failed")
        /// TLS was begun and failed: certificate not trusted, wrong name,
        /// expired, handshake error.
        package static let tlsFailed = Code(rawValue: "tls-failed")
        /// TLS was configured and the server did not offer STARTTLS.
        package static let tlsUnavailable = Code(rawValue: "tls-unavailable")
        /// No address of the server could be reached, or the connection was lost.
        package static let connectionFailed = Code(rawValue: "connection-failed")
        /// A step took longer than its time-out (``SMTPTimeouts``).
        package static let timeout = Code(rawValue: "timeout")
        /// The server said something that is not SMTP, or out of turn.
        package static let protocolError = Code(rawValue: "protocol-error")
    }

    /// What failed.
    package let code: Code
    /// One line, for a person: what failed, where, and the server's words.
    package let description: String
    /// The server's reply, when the failure is one.
    package let reply: SMTPReply?

    /// An error with `code`, its line, and the server's reply when there was one.
    package init(_ code: Code, _ description: String, reply: SMTPReply? = nil) {
        self.code = code
        self.description = description
        self.reply = reply
    }

    /// True when trying again later may succeed: 4xx replies (AUTH's 454
    /// included), lost or refused connections, time-outs, garbled replies.
    /// False for 5xx, authentication and TLS failures: those wait for a person.
    package var isTemporary: Bool {
        switch code {
        case .temporary, .connectionFailed, .timeout, .protocolError: return true
        case .authenticationFailed: return reply.map { $0.isTemporary } ?? false
        default: return false
        }
    }
}

extension SMTPError {
    /// The error for a reply that was not the success `step` needed.
    static func rejected(_ reply: SMTPReply, step: String, peer: String, code: Code? = nil) -> SMTPError {
        let kind: Code = code ?? (reply.isTemporary ? .temporary : .permanent)
        return SMTPError(kind, "\(peer) answered \(step) with \(reply)", reply: reply)
    }
}
