import Foundation
import MIME
import Pipeline
import Policy

/// Everything a composition holds, as a value: the mail (``Composition``,
/// markers in its text), how it came about, the per-mail options and what of
/// it arrived as a letter. What a session edits, what a draft stores
/// (encrypted) and what is built into the mail at send time.
public struct ComposeDraft: Sendable, Hashable, Codable {
    /// One recipient as a list shows it: name (may be empty), address and role.
    public struct Person: Sendable, Hashable, Codable {
        /// The display name; may be empty.
        public var name: String
        /// The mail address.
        public var address: String
        /// To, Cc or Bcc.
        public var role: RecipientRole

        /// A recipient at `address` in `role`.
        public init(name: String = "", address: String, role: RecipientRole) {
            self.name = name
            self.address = address
            self.role = role
        }
    }

    /// An attached file (a forwarded mail is one of type `message/rfc822`).
    public typealias Attachment = Composition.Attachment

    /// The mail; its Message-ID is fixed from the start, so a draft sent
    /// later keeps its identity.
    public var mail: Composition
    /// New, reply, reply-all, forward, or editing a draft.
    public var mode: ComposeMode
    /// Invite postcard recipients to encrypted mail.
    public var invite: Bool
    /// Everybody gets a postcard, even recipients with keys.
    public var enforcePostcard: Bool
    /// Censored or partially encrypted, for postcards of a mail with marked spans.
    public var postcardExtension: PostcardExtension
    /// What arrived as a letter (a decrypted original), guarded against
    /// leaving in a postcard; nil when nothing did.
    public var protected: ProtectedContent?

    /// A draft of `mail` with the per-mail flags.
    public init(_ mail: Composition, mode: ComposeMode = .new, invite: Bool = false, enforcePostcard: Bool = false,
                postcardExtension: PostcardExtension = .censored, protected: ProtectedContent? = nil) {
        self.mail = mail
        if self.mail.messageID == nil {
            let domain = mail.from.address.split(separator: "@").last.map(String.init) ?? "localhost"
            self.mail.messageID = UUID().uuidString.lowercased() + "@" + domain
        }
        self.mode = mode
        self.invite = invite
        self.enforcePostcard = enforcePostcard
        self.postcardExtension = postcardExtension
        self.protected = protected
    }

    /// An empty mail from `from`.
    public init(from: MailAddress) { self.init(Composition(from: from, subject: "", text: "")) }

    /// To, then Cc, then Bcc; setting it puts each person in the list of its role.
    public var recipients: [Person] {
        get {
            [(RecipientRole.to, mail.to), (.cc, mail.cc), (.bcc, mail.bcc)].flatMap { role, list in
                list.map { Person(name: $0.name, address: $0.address, role: role) }
            }
        }
        set {
            func list(_ role: RecipientRole) -> [MailAddress] {
                newValue.filter { $0.role == role }.map { MailAddress(name: $0.name, address: $0.address) }
            }
            (mail.to, mail.cc, mail.bcc) = (list(.to), list(.cc), list(.bcc))
        }
    }

    /// The options the pipeline plans with.
    public var mailOptions: MailOptions {
        MailOptions(enforcePostcard: enforcePostcard, invite: invite, postcardExtension: postcardExtension)
    }

    /// The mail as the pipeline takes it, dated `date`.
    public func message(date: Date = Date()) throws -> MIMEMessage {
        var mail = self.mail
        mail.date = date
        return try mail.message()
    }
}

/// What the composition answers or passes on.
public enum ComposeMode: Sendable, Hashable, Codable {
    case new
    case reply
    case replyAll
    /// Forwarded with the original's text in the body.
    case forwardInline
    /// Forwarded with the original attached whole (`message/rfc822`).
    case forwardAsAttachment
    /// A draft taken up again; its mode before is kept in the draft.
    case editingDraft(id: String)
}
