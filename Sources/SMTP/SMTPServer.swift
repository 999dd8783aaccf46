import Foundation

/// Where and how to reach an SMTP server.
package struct SMTPServer: Sendable, Equatable {
    /// How the connection is protected.
    package enum Security: String, Sendable, Equatable {
        /// No TLS at all: only for re-injection on loopback (the filter).
        case none
        /// Plain connect, then STARTTLS before anything else (RFC 3207, port 587).
        /// A server that does not offer STARTTLS gets nothing.
        case startTLS = "starttls"
        /// TLS from the first byte (RFC 8314, port 465).
        case tls
    }

    /// A host name or an IP address literal. A name is resolved and every
    /// address it has (IPv6 and IPv4) is tried until one connects.
    package var host: String
    /// The TCP port (587 submission, 465 submissions, 25 relay).
    package var port: Int
    /// STARTTLS, implicit TLS, or none (loopback only).
    package var security: Security
    /// A PEM file of the certificate authorities to trust instead of the
    /// system's store. The server's certificate is verified against it and
    /// must name `host` either way.
    package var caFile: String?
    /// The name given in EHLO; nil: this host's fully qualified name
    /// (``HeloName/local()``).
    package var heloName: String?
    /// How long each step may take (RFC 5321 §4.5.3.2).
    package var timeouts: SMTPTimeouts
    /// Allows AUTH over an unencrypted connection, which is still refused
    /// unless `host` is a loopback address.
    package var allowPlaintextAuthOnLoopback: Bool

    /// A server at `host`:`port`; the other settings as documented on each property.
    package init(host: String, port: Int, security: Security, caFile: String? = nil, heloName: String? = nil,
                timeouts: SMTPTimeouts = .rfc5321, allowPlaintextAuthOnLoopback: Bool = false) {
        self.host = host
        self.port = port
        self.security = security
        self.caFile = caFile
        self.heloName = heloName
        self.timeouts = timeouts
        self.allowPlaintextAuthOnLoopback = allowPlaintextAuthOnLoopback
    }

    /// "host:port" for error lines (IPv6 literals in brackets).
    var peer: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// How long each step may take before the session is given up (a time-out
/// is temporary). Defaults are RFC 5321 §4.5.3.2's.
package struct SMTPTimeouts: Sendable, Equatable {
    /// Connecting, all addresses together (not in RFC 5321).
    package var connect: TimeInterval
    /// The 220 greeting (5 min).
    package var greeting: TimeInterval
    /// EHLO, STARTTLS and the TLS handshake, AUTH, RSET (5 min).
    package var command: TimeInterval
    /// MAIL FROM (5 min).
    package var mail: TimeInterval
    /// Each RCPT TO (5 min).
    package var recipient: TimeInterval
    /// The 354 after DATA (2 min).
    package var dataInitiation: TimeInterval
    /// Each block of the message written (3 min).
    package var dataBlock: TimeInterval
    /// The reply after the final ".": 10 min. Deliberately the longest: a copy
    /// the server takes after we gave up waiting is sent again on retry (the
    /// RFC 1047 duplicate window), so this wait is the last to be cut.
    package var finalReply: TimeInterval

    /// Time-outs in seconds; the defaults are RFC 5321 §4.5.3.2's.
    package init(connect: TimeInterval = 30, greeting: TimeInterval = 300, command: TimeInterval = 300,
                mail: TimeInterval = 300, recipient: TimeInterval = 300, dataInitiation: TimeInterval = 120,
                dataBlock: TimeInterval = 180, finalReply: TimeInterval = 600) {
        self.connect = connect
        self.greeting = greeting
        self.command = command
        self.mail = mail
        self.recipient = recipient
        self.dataInitiation = dataInitiation
        self.dataBlock = dataBlock
        self.finalReply = finalReply
    }

    /// RFC 5321 §4.5.3.2, for submission.
    package static let rfc5321 = SMTPTimeouts()

    /// The same `step` for every step and a longer `finalReply` (the filter
    /// works within its MTA's time limit).
    package static func uniform(step: TimeInterval, finalReply: TimeInterval) -> SMTPTimeouts {
        SMTPTimeouts(connect: step, greeting: step, command: step, mail: step, recipient: step,
                     dataInitiation: step, dataBlock: step, finalReply: max(step, finalReply))
    }
}
