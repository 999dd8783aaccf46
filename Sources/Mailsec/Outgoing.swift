@_exported import Compose
@_exported import ComposeStore
@_exported import Incoming
@_exported import MIME
@_exported import OpenPGP
@_exported import Pipeline
@_exported import Policy
@_exported import Sending
@_exported import Settings

/// The library's entry point for sending: it plans a mail (who gets a
/// letter, who a postcard, and why) and turns it into its copies, handing
/// them to a ``Destination``. One `import Mailsec` brings every type it
/// names.
///
/// ```swift
/// let outgoing = Outgoing(gnupgHome: home)
/// let plan = try outgoing.plan(mailBytes)
/// try outgoing.send(mailBytes, to: .custom { copy, isNotice in ... })
/// ```
///
/// All cryptography (and publishing, for partially encrypted postcards)
/// is done before the first copy goes; letters go first, then the password
/// notice, then postcards; key continuity remembers a letter's keys once it
/// went (`MailPipeline.send(_:to:)` holds the rules).
public struct Outgoing: Sendable {
    /// The pipeline the plan and the copies come from. The package's own: its
    /// steps (prepare, write, notice, withdraw) only work in that order, and
    /// ``send(_:envelopeSender:envelopeRecipients:to:)`` runs them.
    package let pipeline: MailPipeline

    /// Where the copies of a mail go.
    public enum Destination: Sendable {
        /// A closure called with each copy in sending order, and whether the
        /// copy is the password notice to the sender. A throw stops the mail
        /// there: the copies before it went, the rest did not, and a published
        /// page no postcard links to yet is withdrawn.
        case custom(@Sendable (WrittenCopy, _ isNotice: Bool) throws -> Void)
    }

    /// Sending with the keys of `gnupgHome`, under `policy` (the same
    /// settings as the `config.toml` keys `mode`, `invite`, `extension`,
    /// `[markers]`, `[[rules]]`), publishing through `reading` when the policy
    /// asks for partially encrypted postcards, and remembering each letter's
    /// keys in `continuity` (nil: not remembered).
    public init(gnupgHome: String, policy: PolicySettings = PolicySettings(), reading: ReadingSettings? = nil,
                continuity: (any KeyContinuityStore)? = nil) {
        pipeline = MailPipeline(gnupg: GnuPG(home: gnupgHome), options: PipelineOptions(policy: policy, reading: reading))
            .with(continuity: continuity)
    }

    /// Who gets what, and why, for the mail in `bytes` (one key listing;
    /// nothing is written or sent). `envelopeRecipients` (else To, Cc and
    /// Bcc) and `envelopeSender` (else From) as an MTA would give them.
    public func plan(_ bytes: [UInt8], envelopeSender: String? = nil, envelopeRecipients: [String]? = nil) throws -> Plan {
        try prepare(bytes, envelopeSender, envelopeRecipients).plan
    }

    /// Plans the mail in `bytes`, writes every copy and hands them to
    /// `destination` in sending order. Throws before anything goes when the
    /// mail cannot be sent as the policy demands (a letter required without a
    /// key, unbalanced markers, a remembered key that vanished).
    public func send(_ bytes: [UInt8], envelopeSender: String? = nil, envelopeRecipients: [String]? = nil,
                     to destination: Destination) throws {
        let prepared = try prepare(bytes, envelopeSender, envelopeRecipients)
        switch destination {
        case .custom(let body): try pipeline.send(prepared, to: HandingTo(body))
        }
    }

    private func prepare(_ bytes: [UInt8], _ sender: String?, _ recipients: [String]?) throws -> PreparedMail {
        // The bytes as they came: a mail encrypted already goes out as exactly those.
        try pipeline.prepare(MIMEMessage.parse(bytes), original: bytes, envelopeSender: sender, envelopeRecipients: recipients)
    }
}
