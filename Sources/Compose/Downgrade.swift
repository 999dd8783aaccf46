import Foundation
import MIME
import Pipeline
import Policy

/// Content that arrived as a letter: the decrypted original's subject, the
/// lines of its text and its attachments. A postcard that carries any of it
/// in clear is a downgrade, which needs the sender's confirmation.
///
/// The check reads the postcard the pipeline would write (censored), not the
/// editor's text, so it holds however the text was edited: quoted, re-typed
/// or pasted, content that is still readable in the postcard is found.
public struct ProtectedContent: Sendable, Hashable, Codable {
    /// The original's Subject, without `Re:`/`Fwd:` prefixes.
    public var subject: String
    /// The text's lines, whitespace folded, quote marks removed; blank lines left out.
    public var lines: Set<String>
    /// The bytes of each attachment (kept, like everything of a draft,
    /// encrypted at rest).
    public var attachments: Set<[UInt8]>

    /// Collects what `original` (decrypted) carries.
    public init(_ original: MIMEMessage) {
        subject = Self.baseSubject(original.subject ?? "")
        var lines = Set<String>()
        var attachments = Set<[UInt8]>()
        for (_, part) in original.body?.walk() ?? [] where part.kind == .leaf {
            if let text = part.text, part.contentType.type == "text" {
                let plain = part.contentType.subtype == "html" ? Self.textOfHTML(text) : text
                for line in plain.split(whereSeparator: \.isNewline) {
                    let folded = Self.fold(String(line))
                    if folded.contains(where: { $0.isLetter || $0.isNumber }) { lines.insert(folded) }
                }
            } else if let content = part.content, !content.isEmpty {
                attachments.insert(content)
            }
        }
        self.lines = lines
        self.attachments = attachments
    }

    /// True when `postcard` shows any of this content in clear.
    public func isShown(in postcard: MIMEMessage) -> Bool {
        if subject.count >= 3, let shown = postcard.subject, Self.fold(shown).localizedCaseInsensitiveContains(subject) {
            return true
        }
        var texts: [String] = []
        func collect(_ entity: MIMEEntity) -> Bool {
            for (_, part) in entity.walk() {
                if let embedded = part.embeddedMessage {
                    if let shown = embedded.subject, subject.count >= 3, Self.fold(shown).localizedCaseInsensitiveContains(subject) {
                        return true
                    }
                }
                guard part.kind == .leaf else { continue }
                if let text = part.text, part.contentType.type == "text" {
                    texts.append(part.contentType.subtype == "html" ? Self.textOfHTML(text) : text)
                } else if let content = part.content, attachments.contains(content) {
                    return true
                }
            }
            return false
        }
        if let body = postcard.body, collect(body) { return true }
        for text in texts {
            let shownLines = Set(text.split(whereSeparator: \.isNewline).map { Self.fold(String($0)) })
            let whole = Self.fold(text.split(whereSeparator: \.isNewline).map { Self.unquoted(String($0)) }.joined(separator: " "))
            for line in lines {
                // A short line only counts when it stands alone (a greeting must
                // not match inside any text); a longer one wherever it appears.
                if line.count < 8 ? shownLines.contains(line) : whole.contains(line) { return true }
            }
        }
        return false
    }

    /// `Re: Fwd: AW: subject` → `subject`.
    static func baseSubject(_ subject: String) -> String {
        var rest = subject.trimmingCharacters(in: .whitespaces)
        while let colon = rest.firstIndex(of: ":"), rest.distance(from: rest.startIndex, to: colon) <= 4,
              ["re", "fwd", "fw", "aw", "wg", "tr", "sv", "vs"].contains(rest[..<colon].lowercased()) {
            rest = rest[rest.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fold(rest)
    }

    /// Whitespace runs folded to one space, quote marks (`>`) at the start removed.
    static func fold(_ line: String) -> String {
        unquoted(line).split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    static func unquoted(_ line: String) -> String {
        String(line.drop { $0 == ">" || $0 == " " || $0 == "\t" })
    }

    /// The text of an HTML document, near enough for finding lines: tags and
    /// the few common character references removed.
    static func textOfHTML(_ html: String) -> String {
        var out = ""
        var inTag = false
        for character in html {
            if character == "<" { inTag = true; out.append(" ") } else if character == ">" { inTag = false } else if !inTag { out.append(character) }
        }
        for (reference, character) in [("&nbsp;", " "), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&amp;", "&")] {
            out = out.replacingOccurrences(of: reference, with: character)
        }
        return out
    }
}
