import Compose
import Foundation
import MIME
import OpenPGP
import Policy

/// The text `mailsec compose` opens in the editor, and its reading: header
/// lines (To, Cc, Bcc, Subject, Attached, Attach), an empty line, the text,
/// and below git's scissors line a comment block explaining the markers.
/// Everything from the scissors line on is left out, so the text may hold
/// lines that start with `#`.
///
/// Nothing that came from a received mail can become a line of its own or a
/// file to read: every value is written on one line without controls
/// (``InertText``), display names quoted, addresses only when plain, and the
/// attachments already there are named by number (`Attached: 2`), never by a
/// name that the reading could take for a path.
struct ComposeTemplate {
    static let scissors = "# ------------------------ >8 ------------------------"

    /// The fields a person may write, as they are spelled in the template.
    static let fields = ["To", "Cc", "Bcc", "Subject", "Attached", "Attach"]

    /// A problem of an edited template: one line, naming the template's line.
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// What an edited template says.
    struct Reading {
        var recipients: [ComposeDraft.Person]
        var subject: String
        var text: String
        var attachments: [ComposeDraft.Attachment]
    }

    /// `address` as a template writes it: `"Name" <local@domain>` (the name
    /// quoted, so that a comma or an address inside it stays name), or the
    /// address alone. An address that is not plain is refused.
    static func mailbox(_ address: MailAddress) throws -> String {
        guard InertText.isPlainAddress(address.address) else {
            throw CommandFailure("a recipient is not a mail address (local@domain): " + InertText.line(address.address),
                                 status: .dataError)
        }
        let name = InertText.line(address.name).trimmingCharacters(in: .whitespaces)
        return name.isEmpty ? address.address : InertText.quoted(name) + " <" + address.address + ">"
    }

    /// The template for `draft`: its fields, its text, and the comment block.
    static func text(for draft: ComposeDraft, redactor: Redactor, mode: String) throws -> String {
        func list(_ addresses: [MailAddress]) throws -> String { try addresses.map(mailbox).joined(separator: ", ") }
        var lines = try ["To: " + list(draft.mail.to), "Cc: " + list(draft.mail.cc), "Bcc: " + list(draft.mail.bcc),
                         "Subject: " + InertText.line(draft.mail.subject)]
        lines += draft.mail.attachments.enumerated().map { index, attachment in
            "Attached: \(index + 1) (\(InertText.line(attachment.filename)), \(attachment.data.count) bytes)"
        }
        var text = lines.joined(separator: "\n") + "\n\n" + draft.mail.text
        if !text.hasSuffix("\n") { text += "\n" }
        return text + "\n" + scissors + "\n" + """
            # Do not change or remove the line above: it and everything below it are left out.
            # \(InertText.line(mode)), from \(draft.mail.from.address) ('from' of the configuration).
            # To, Cc, Bcc: addresses separated by commas. Subject: one line.
            # Attached: a file already attached, by its number; remove the line to remove it.
            # Attach: a file to add, by its path; one per line.
            # Write the text after the empty line below the header lines.
            # Text between \(redactor.open) and \(redactor.close) is private: letter recipients read
            # it, postcard recipients get it censored. Markers must pair up and not nest.
            # Save and quit: mailsec shows who gets a letter and who a postcard, and asks.

            """
    }

    /// Reads an edited template. `Attached: N` keeps the Nth of `current`;
    /// an `Attach` value is a file's path, read now.
    static func read(_ edited: String, current: [ComposeDraft.Attachment]) throws -> Reading {
        var lines = edited.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n")
        if let cut = lines.firstIndex(of: scissors) { lines.removeSubrange(cut...) }
        var fields: [(name: String, value: String, line: Int)] = []
        var index = 0
        while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).isEmpty {
            let line = lines[index]
            if line.first == " " || line.first == "\t", !fields.isEmpty {
                fields[fields.count - 1].value += " " + line.trimmingCharacters(in: .whitespaces)
            } else {
                guard let colon = line.firstIndex(of: ":"),
                      let name = Self.fields.first(where: { $0.lowercased() == line[..<colon].trimmingCharacters(in: .whitespaces).lowercased() })
                else {
                    throw Problem(description: "line \(index + 1) is not a header line (\(Self.fields.joined(separator: ", "))); "
                                  + "leave an empty line between the header lines and the text")
                }
                fields.append((name, line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces), index + 1))
            }
            index += 1
        }
        var body = lines[min(index + 1, lines.count)...].joined(separator: "\n")
        while body.hasSuffix("\n") || body.hasSuffix(" ") { body.removeLast() }
        if !body.isEmpty { body += "\n" }

        var reading = Reading(recipients: [], subject: "", text: body, attachments: [])
        var subjects = 0
        var kept = Set<Int>()
        for field in fields {
            switch field.name {
            case "To", "Cc", "Bcc":
                let role: RecipientRole = field.name == "To" ? .to : field.name == "Cc" ? .cc : .bcc
                reading.recipients += try addresses(field.value, line: field.line).map {
                    ComposeDraft.Person(name: $0.name, address: $0.address, role: role)
                }
            case "Subject":
                subjects += 1
                guard subjects == 1 else { throw Problem(description: "line \(field.line): a second Subject") }
                reading.subject = InertText.line(field.value)
            case "Attached":
                // Only the number counts: what follows it is a reminder, never a file name.
                let digits = field.value.prefix { $0.isASCII && $0.isNumber }
                guard digits.count <= 9, let number = Int(digits), number >= 1, number <= current.count else {
                    throw Problem(description: "line \(field.line): Attached takes the number of a file already attached "
                                  + "(1 to \(current.count)); Attach: PATH adds a file")
                }
                if kept.insert(number).inserted { reading.attachments.append(current[number - 1]) }
            default:
                guard !field.value.isEmpty else { continue }
                do { reading.attachments.append(try attachment(path: field.value)) } catch let failure as CommandFailure {
                    throw Problem(description: "line \(field.line): " + failure.description)
                }
            }
        }
        return reading
    }

    /// The mailboxes of an address list: each comma-separated piece (commas
    /// inside quotes, angle brackets or comments do not separate) one plain
    /// address `local@domain`, with or without a name.
    static func addresses(_ value: String, line: Int) throws -> [MailAddress] {
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else { return [] }
        let problem = Problem(description: "line \(line): not a list of mail addresses (local@domain, separated by commas)")
        return try pieces(of: value).map { piece in
            let parsed = MailAddress.parseList(piece)
            guard parsed.count == 1, InertText.isPlainAddress(parsed[0].address) else { throw problem }
            return MailAddress(name: InertText.line(parsed[0].name).trimmingCharacters(in: .whitespaces), address: parsed[0].address)
        }
    }

    /// `value` cut at the commas that separate addresses (RFC 5322: not
    /// inside a quoted string, a comment or angle brackets); empty pieces
    /// left out. An unclosed quote, comment or bracket ends the piece.
    static func pieces(of value: String) -> [String] {
        var pieces: [String] = [], piece = ""
        var quoted = false, escaped = false, comment = 0, angle = false
        for character in value {
            if escaped { escaped = false; piece.append(character); continue }
            switch character {
            case "\\" where quoted || comment > 0: escaped = true
            case "\"" where comment == 0: quoted.toggle()
            case "(" where !quoted: comment += 1
            case ")" where !quoted && comment > 0: comment -= 1
            case "<" where !quoted && comment == 0: angle = true
            case ">" where !quoted && comment == 0: angle = false
            case "," where !quoted && comment == 0 && !angle:
                pieces.append(piece)
                piece = ""
                continue
            default: break
            }
            piece.append(character)
        }
        pieces.append(piece)
        return pieces.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }

    /// The file at `path` as an attachment (named by its last component).
    static func attachment(path: String) throws -> ComposeDraft.Attachment {
        guard path != "-" else { throw CommandFailure("an attachment is a file; standard input cannot be attached", status: .usage) }
        let expanded = path == "~" || path.hasPrefix("~/")
            ? (ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()) + path.dropFirst() : path
        let data = try readInput(expanded, limit: ParseOptions.standard.maxSize, what: "the attachment")
        let name = URL(fileURLWithPath: expanded).lastPathComponent
        return ComposeDraft.Attachment(filename: name, contentType: contentType(of: name), data: data)
    }

    /// A content type from a file name's extension: the common ones, else
    /// `application/octet-stream`.
    static func contentType(of name: String) -> String {
        let types = ["txt": "text/plain", "pdf": "application/pdf", "png": "image/png", "jpg": "image/jpeg",
                     "jpeg": "image/jpeg", "gif": "image/gif", "html": "text/html", "csv": "text/csv", "zip": "application/zip",
                     "eml": "message/rfc822", "ics": "text/calendar", "asc": "application/pgp-keys", "json": "application/json"]
        return types[URL(fileURLWithPath: name).pathExtension.lowercased()] ?? "application/octet-stream"
    }
}
