/// What became of one transaction: the server's answer for each recipient.
public struct SMTPDelivery: Sendable, Equatable {
    /// One recipient's outcome.
    public enum Status: Sendable, Equatable {
        /// 250/251/252 to RCPT and 250 to the message: the server has taken it.
        case accepted(SMTPReply)
        /// 4xx to RCPT: try this recipient again later.
        case temporary(SMTPReply)
        /// 5xx to RCPT: this recipient is refused.
        case permanent(SMTPReply)

        /// The server's reply that decided it.
        public var reply: SMTPReply {
            switch self {
            case .accepted(let reply), .temporary(let reply), .permanent(let reply): return reply
            }
        }

        /// True when the server took the mail for this recipient.
        public var isAccepted: Bool { if case .accepted = self { return true } else { return false } }
    }

    /// One recipient and its outcome.
    public struct Recipient: Sendable, Equatable {
        /// The recipient's address.
        public let address: String
        /// The outcome.
        public let status: Status
    }

    /// The recipients in the order given, each with its outcome.
    public let recipients: [Recipient]
    /// The server's final reply to the message; nil when no recipient was
    /// accepted and no message was sent.
    public let finalReply: SMTPReply?

    /// True when every recipient was accepted.
    public var allAccepted: Bool { recipients.allSatisfy { $0.status.isAccepted } }
    /// The recipients the server took.
    public var accepted: [String] { recipients.filter { $0.status.isAccepted }.map(\.address) }
}
