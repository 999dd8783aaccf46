import Compose
import Foundation
import MIME
import OpenPGP
import Policy

/// The text `mailsec compose` opens in the editor, and its reading: header
/// lines (To, Cc, Bcc, Subject, Attach), an empty line, the text, and below
/// git's scissors line a comment block explaining the markers. Everything
/// from the scissors line on is left out, so the text may hold lines that
/// start with `#`.
struct ComposeTemplate {
    static let scissors = "# ------------------------ >8 ------------------------"

    /// The fields a person may write, as they are spelled in the template.
    static let fields = ["To", "Cc", "Bcc", "Subject", "Attach"]

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

    /// The template for `draft`: its fields, its text, and the comment block.
    static func text(for draft: ComposeDraft, redactor: Redactor, mode: String) -> String {
        func list(_ addresses: [MailAddress]) -> String { addresses.map(\.description).joined(separator: ", ") }
        var lines = ["To: " + list(draft.mail.to), "Cc: " + list(draft.mail.cc), "Bcc: " + list(draft.mail.bcc),
                     "Subject: " + draft.mail.subject]
        lines += draft.mail.attachments.map { "Attach: " + $0.filename }
        var text = lines.joined(separator: "\n") + "\n\n" + draft.mail.text
        if !text.hasSuffix("\n") { text += "\n" }
        return text + "\n" + scissors + "\n" + """
            # Do not change or remove the line above: it and everything below it are left out.
            # \(mode), from \(draft.mail.from.address) ('from' of the configuration).
            # To, Cc, Bcc: addresses separated by commas. Subject: one line.
            # Attach: one per line, a file's path (a name already attached keeps its file);
            #   remove the line to remove the attachment.
            # Write the text after the empty line below the header lines.
            # Text between \(redactor.open) and \(redactor.close) is private: letter recipients read
            # it, postcard recipients get it censored. Markers must pair up and not nest.
            # Save and quit: mailsec shows who gets a letter and who a postcard, and asks.

            """
    }

    /// Reads an edited template. Attachments already in `current` are kept by
    /// name; another `Attach` value is a file's path, read now.
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
                reading.subject = field.value
            default:
                guard !field.value.isEmpty else { continue }
                if let kept = current.first(where: { $0.filename == field.value }) {
                    reading.attachments.append(kept)
                } else {
                    do { reading.attachments.append(try attachment(path: field.value)) } catch let failure as CommandFailure {
                        throw Problem(description: "line \(field.line): " + failure.description)
                    }
                }
            }
        }
        return reading
    }

    /// The mailboxes of an address list; every one must be `local@domain`.
    static func addresses(_ value: String, line: Int) throws -> [MailAddress] {
        guard !value.isEmpty else { return [] }
        let parsed = MailAddress.parseList(value)
        let pieces = value.split(separator: ",").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard !parsed.isEmpty, parsed.count >= pieces.count,
              parsed.allSatisfy({ GnuPG.isLookupAddress($0.address) }) else {
            throw Problem(description: "line \(line): not a list of mail addresses (local@domain, separated by commas)")
        }
        return parsed
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
