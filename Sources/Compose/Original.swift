import Foundation
import Incoming
import MIME
import OpenPGP
import Pipeline

/// A mail being answered or passed on, read once: an encrypted one opened
/// through the safe decryption of `mailsec decrypt` (``MailDecryptor``),
/// which refuses EFAIL shapes and ciphertext without integrity protection.
public struct Original: Sendable {
    /// True when the mail arrived encrypted (a letter) and was decrypted.
    public let arrivedAsLetter: Bool
    /// The From addresses.
    public let from: [MailAddress]
    /// The Reply-To addresses; a reply goes there when given.
    public let replyTo: [MailAddress]
    /// The To addresses.
    public let to: [MailAddress]
    /// The Cc addresses.
    public let cc: [MailAddress]
    /// The Subject (the protected one of a letter).
    public let subject: String
    /// Without angle brackets.
    public let messageID: String?
    /// Message-IDs of the thread before it, without angle brackets.
    public let references: [String]
    /// The Date field as written, for the attribution line.
    public let date: String?
    /// The readable text: the first text/plain part, else the HTML's text.
    public let text: String
    /// Its attached files.
    public let attachments: [ComposeDraft.Attachment]
    /// The mail as readable bytes (a letter decrypted): what a forward as attachment carries.
    public let bytes: [UInt8]
    /// What a postcard must not show without confirmation; nil unless it arrived as a letter.
    public let protected: ProtectedContent?

    /// Reads `raw`; decrypts it with the keys of `gnupg` when it is encrypted.
    public static func open(_ raw: [UInt8], gnupg: GnuPG, options: ParseOptions = .standard) throws -> Original {
        let parsed = try MIMEMessage.parse(raw, options: options)
        // Any encrypted part at all goes to the decryptor, which opens the
        // whole-body shape and refuses the others (EFAIL) with a clear reason.
        guard MailPipeline.isEncrypted(parsed) || !MailStructure(parsed).encrypted.isEmpty else {
            return Original(parsed, bytes: raw, arrivedAsLetter: false)
        }
        let (message, _) = try MailDecryptor(gnupg: gnupg, options: options).decrypt(raw)
        return Original(message, bytes: message.serialize(), arrivedAsLetter: true)
    }

    init(_ message: MIMEMessage, bytes: [UInt8], arrivedAsLetter: Bool) {
        self.arrivedAsLetter = arrivedAsLetter
        // Every value a sender chose is made inert here (one line, no controls),
        // so that no reply, forward, screen or template can be steered by it.
        func inert(_ field: AddressField) -> [MailAddress] {
            message.addresses(field).map { MailAddress(name: InertText.line($0.name), address: InertText.line($0.address)) }
        }
        from = inert(.from)
        replyTo = inert(.replyTo)
        to = inert(.to)
        cc = inert(.cc)
        subject = InertText.line(message.subject ?? "")
        messageID = message.messageID.map(InertText.line)
        references = Self.messageIDs(in: message.header("References") ?? "").map(InertText.line)
        date = message.header("Date").map(InertText.line)
        self.bytes = bytes
        var text: String?
        var html: String?
        var attachments: [ComposeDraft.Attachment] = []
        for (_, part) in message.body?.walk() ?? [] where part.kind == .leaf {
            let type = part.contentType
            if part.filename == nil && part.disposition != "attachment" && type.type == "text" {
                if type.subtype == "plain", text == nil { text = part.text; continue }
                if type.subtype == "html", html == nil { html = part.text; continue }
            }
            if let content = part.content, part.filename != nil || part.disposition == "attachment" {
                attachments.append(.init(filename: InertText.line(part.filename ?? "attachment"), contentType: type.description, data: content))
            }
        }
        self.text = text ?? html.map(ProtectedContent.textOfHTML) ?? ""
        self.attachments = attachments
        protected = arrivedAsLetter ? ProtectedContent(message) : nil
    }

    /// The `<id>` tokens of a References or In-Reply-To field, without brackets.
    static func messageIDs(in field: String) -> [String] {
        var ids: [String] = []
        var rest = Substring(field)
        while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
            let id = rest[rest.index(after: open)..<close].trimmingCharacters(in: .whitespaces)
            if !id.isEmpty { ids.append(id) }
            rest = rest[rest.index(after: close)...]
        }
        return ids
    }

    /// `Re: subject`, the prefix added once.
    public var replySubject: String { Self.prefixed("Re:", subject, already: ["re:"]) }

    /// `Fwd: subject`, the prefix added once.
    public var forwardSubject: String { Self.prefixed("Fwd:", subject, already: ["fwd:", "fw:"]) }

    static func prefixed(_ prefix: String, _ subject: String, already: [String]) -> String {
        let trimmed = subject.trimmingCharacters(in: .whitespaces)
        if already.contains(where: { trimmed.lowercased().hasPrefix($0) }) { return trimmed }
        return trimmed.isEmpty ? prefix : "\(prefix) \(trimmed)"
    }

    /// The text quoted for a reply: an attribution line, then each line after `> `.
    public var quoted: String {
        let who = from.first.map { $0.name.isEmpty ? $0.address : $0.name } ?? "someone"
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        let body = (lines.last == "" ? lines.dropLast() : lines[...]).map { $0.isEmpty ? ">" : "> " + $0 }
        return (date.map { "On \($0), \(who) wrote:" } ?? "\(who) wrote:") + "\n" + body.joined(separator: "\n") + "\n"
    }

    /// The forwarded block of an inline forward: the original's header lines and text.
    public var forwardedBlock: String {
        var lines = ["---------- Forwarded message ----------"]
        if !from.isEmpty { lines.append("From: " + from.map(\.description).joined(separator: ", ")) }
        if let date { lines.append("Date: " + date) }
        lines.append("Subject: " + subject)
        if !to.isEmpty { lines.append("To: " + to.map(\.description).joined(separator: ", ")) }
        if !cc.isEmpty { lines.append("Cc: " + cc.map(\.description).joined(separator: ", ")) }
        return lines.joined(separator: "\n") + "\n\n" + text
    }
}
