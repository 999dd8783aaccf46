import Outbox

/// Why a delivery attempt did not go through, in the person's words.
/// `permanent` failures wait for the person (resend or discard); the others
/// are tried again later. The reason never holds the password or mail content.
public struct SubmissionFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// Whether a later try may succeed.
    public enum Kind: Sendable, Hashable {
        /// No network, connection refused, time-out, 4xx: try again later.
        case temporary
        /// 5xx, authentication failed, TLS verification failed: the person decides.
        case permanent
    }

    /// Temporary or permanent.
    public let kind: Kind
    /// One line saying why; never the password or mail content.
    public let reason: String
    /// True when the connection is unusable after it (the rest of the run
    /// gets the same answer without another try).
    public let endsSession: Bool

    /// A failure of `kind`; `endsSession` when the connection cannot be used further.
    public init(_ kind: Kind, _ reason: String, endsSession: Bool) {
        self.kind = kind
        self.reason = reason
        self.endsSession = endsSession
    }

    /// The reason.
    public var description: String { reason }

    /// The outcome for each recipient of a copy this failure stopped.
    var outcome: RecipientOutcome { kind == .permanent ? .permanent(reason) : .temporary(reason) }
}

/// One session with a submission server: several transactions, then quit.
public protocol SubmissionSession: AnyObject {
    /// One transaction; the outcome per recipient (a 5xx for one recipient
    /// fails that recipient only). Throws when the whole transaction failed.
    func send(from sender: String, to recipients: [String], message: [UInt8]) async throws(SubmissionFailure)
        -> [String: RecipientOutcome]
    /// QUIT, without waiting long for the answer.
    func quit() async
}

/// Opens sessions with one server (``Submission`` speaks SMTP; an
/// application may bring its own).
public protocol SubmissionTransport: Sendable {
    func open() async throws(SubmissionFailure) -> any SubmissionSession
    /// Whether the server answers at all (for the connection state): TCP
    /// connect to it, nothing sent.
    func probe() async -> ConnectionState
}
