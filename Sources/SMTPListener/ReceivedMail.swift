import Synchronization

/// One mail as received: envelope and content (in memory or spooled).
package struct ReceivedMail: Sendable {
    private static let counter = Atomic<UInt64>(0)
    /// This mail's number in this process, unique: what ``MailHandler/replied(to:reached:)`` is told about.
    package let serial: UInt64
    enum Content: Sendable {
        case memory([UInt8])
        case spooled(SpoolFile)
    }

    /// The envelope sender, without angle brackets; "" for the null sender.
    package let sender: String
    /// The accepted recipients, in order, without angle brackets.
    package let recipients: [String]
    /// Octets of content (after dot-unstuffing).
    package let size: Int
    /// The client's address ("127.0.0.1:40312"), for log lines.
    package let client: String
    let content: Content

    init(sender: String, recipients: [String], size: Int, client: String, content: Content) {
        self.sender = sender
        self.recipients = recipients
        self.size = size
        self.client = client
        self.content = content
        serial = Self.counter.add(1, ordering: .relaxed).newValue
    }

    /// The whole content, dot-unstuffed, with line ends as received (CRLF
    /// from any RFC 5321 client; a bare LF or CR inside a line is kept).
    /// Throws ``ListenerError`` (`spool-failed`) when a spool file cannot be read.
    package func bytes() throws -> [UInt8] {
        switch content {
        case .memory(let bytes): return bytes
        case .spooled(let file): return try file.read(count: size)
        }
    }

    /// True when the content is in a spool file rather than in memory.
    package var isSpooled: Bool {
        if case .spooled = content { return true }
        return false
    }
}
