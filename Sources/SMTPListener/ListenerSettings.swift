import Foundation
import Platform

/// How an ``SMTPListener`` listens and what it allows. The defaults suit a
/// content filter behind Postfix on the same machine (Postfix's own limits:
/// `message_size_limit`, `smtpd_recipient_limit`, RFC 5321's time-outs).
package struct ListenerSettings: Sendable {
    /// The protocol spoken: SMTP (RFC 5321, greeted with EHLO/HELO) or LMTP
    /// (RFC 2033, greeted with LHLO, one reply per recipient after DATA).
    package enum Dialect: Sendable { case smtp, lmtp }

    /// The address to bind. Only loopback addresses unless ``allowNonLoopback``:
    /// the listener has no AUTH and no TLS.
    package var host: String
    /// The port to bind; 0 for any free port (``SMTPListener/start()`` says which).
    package var port: Int
    /// SMTP or LMTP (see ``Dialect``).
    package var dialect: Dialect
    /// The largest message accepted, in octets (announced with SIZE); a
    /// bigger one is read to its end and refused with 552 5.3.4.
    package var maxMessageSize: Int
    /// Sessions at once; the connection over the cap gets 421 4.7.0 and is closed.
    package var maxConnections: Int
    /// Sessions at once from one client address; the one over it gets 421
    /// 4.7.0 too, so that one client's slow connections cannot use up
    /// ``maxConnections`` (32 lets one Postfix through with its default
    /// destination concurrency of 20).
    package var maxConnectionsPerAddress: Int
    /// Recipients per mail; the one over the cap gets 452 4.5.3.
    package var maxRecipients: Int
    /// How long the listener waits for the next command (RFC 5321 4.5.3.2.7: 5 minutes).
    package var idleTimeout: Duration
    /// How long a new session may take to send its first whole command,
    /// counted from the greeting: a client that connects and then trickles
    /// bytes or says nothing holds a slot for this long, not ``idleTimeout``.
    package var firstCommandTimeout: Duration
    /// How long it waits for the next chunk of a message's content (RFC 5321: 3 minutes).
    package var dataTimeout: Duration
    /// Octets of one mail held in memory; a bigger mail goes to a spool file.
    package var memoryLimit: Int
    /// Where spool files go: a folder made 0700 if missing. The files are
    /// 0600 and have no name (removed as soon as made), so nothing stays
    /// behind after the mail, a disconnect or a crash.
    package var spoolDirectory: String
    /// The name in the 220 greeting and the EHLO/LHLO reply.
    package var greetingName: String
    /// Lets ``host`` be an address other machines can reach. Off by default:
    /// anyone who can connect can hand the listener mail.
    package var allowNonLoopback: Bool

    /// Settings for a content filter behind Postfix; each value can be changed.
    package init(host: String = "127.0.0.1",
                port: Int = 10025,
                dialect: Dialect = .smtp,
                maxMessageSize: Int = 10_240_000,
                maxConnections: Int = 100,
                maxConnectionsPerAddress: Int = 32,
                maxRecipients: Int = 1000,
                idleTimeout: Duration = .seconds(300),
                firstCommandTimeout: Duration = .seconds(30),
                dataTimeout: Duration = .seconds(180),
                memoryLimit: Int = 1 << 20,
                spoolDirectory: String = ListenerSettings.defaultSpoolDirectory,
                greetingName: String = ListenerSettings.defaultGreetingName,
                allowNonLoopback: Bool = false) {
        self.host = host
        self.port = port
        self.dialect = dialect
        self.maxMessageSize = maxMessageSize
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.maxRecipients = maxRecipients
        self.idleTimeout = idleTimeout
        self.firstCommandTimeout = firstCommandTimeout
        self.dataTimeout = dataTimeout
        self.memoryLimit = memoryLimit
        self.spoolDirectory = spoolDirectory
        self.greetingName = greetingName
        self.allowNonLoopback = allowNonLoopback
    }

    /// `$TMPDIR/mailsec-spool-UID` (one per user: the folder must be ours).
    package static var defaultSpoolDirectory: String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return base + "/mailsec-spool-\(getuid())"
    }

    /// This machine's host name, or "localhost".
    package static var defaultGreetingName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty || name.contains(where: { $0 == " " || $0.isNewline }) ? "localhost" : name
    }

    /// True for "localhost", 127.0.0.0/8 and ::1: the addresses ``SMTPListener/start()``
    /// binds without ``allowNonLoopback`` (for a configuration check to say so first).
    package static func isLoopback(_ host: String) -> Bool { Loopback.contains(host) }
}
