/// What became of one transaction: the server's answer for each recipient.
package struct SMTPDelivery: Sendable, Equatable {
    /// One recipient's outcome.
    package enum Status: Sendable, Equatable {
        /// 250/251/252 to RCPT and 250 to the message: the server has taken it.
        case accepted(SMTPReply)
        /// 4xx to RCPT: try this recipient again later.
        case temporary(SMTPReply)
        /// 5xx to RCPT: this recipient is refused.
        case permanent(SMTPReply)

        /// The server's reply that decided it.
        package var reply: SMTPReply {
            switch self {
            case .accepted(let reply), .temporary(let reply), .permanent(let reply): return reply
            }
        }

        /// True when the server took the mail for this recipient.
        package var isAccepted: Bool { if case .accepted = self { return true } else { return false } }
    }

    /// One recipient and its outcome.
    package struct Recipient: Sendable, Equatable {
        /// The recipient's address.
        package let address: String
        /// The outcome.
        package let status: Status
    }

    /// The recipients in the order given, each with its outcome.
    package let recipients: [Recipient]
    /// The server's final reply to the message; nil when no recipient was
    /// accepted and no message was sent.
    package let finalReply: SMTPReply?

    /// True when every recipient was accepted.
    package var allAccepted: Bool { recipients.allSatisfy { $0.status.isAccepted } }
    /// The recipients the server took.
    package var accepted: [String] { recipients.filter { $0.status.isAccepted }.map(\.address) }
}
