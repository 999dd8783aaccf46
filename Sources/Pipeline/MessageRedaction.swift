import MIME
import Policy

/// Marked spans across a whole message: the header fields, every text part
/// (plain, HTML or other `text/*`, in any charset and transfer encoding),
/// file names, and the same inside embedded messages.
extension Redactor {
    /// Header fields that are never redacted: they describe structure, and
    /// the MIME layer writes them anew.
    static let structuralHeaders: Set<String> = ["content-type", "content-transfer-encoding", "mime-version"]

    /// True when the message has marked spans anywhere. Throws when markers do
    /// not pair up, naming the part (`Subject`, `part 1.2 (text/html)`).
    public func hasMarkedSpans(_ message: MIMEMessage) throws -> Bool {
        var found = false
        try visit(message, prefix: "") { text, name, isHTML in
            if isHTML ? hasMarkersHTML(text) : hasMarkers(text) {
                if isHTML { _ = try redactHTML(text, mode: .censor, part: name) } else { try validate(text, part: name) }
                found = true
            }
            return nil
        }
        return found
    }

    /// Applies `mode` to every marked span of `message`, in place.
    public func apply(_ mode: Mode, to message: MIMEMessage) throws {
        try visit(message, prefix: "") { text, name, isHTML in
            guard isHTML ? hasMarkersHTML(text) : hasMarkers(text) else { return nil }
            return isHTML ? try redactHTML(text, mode: mode, part: name) : try redact(text, mode: mode, part: name)
        }
    }

    /// Calls `body` with each piece of text that may carry spans; a non-nil
    /// result replaces the text.
    /// The walk covers the parts of embedded messages too; only their header
    /// fields need a visit of their own.
    private func visit(_ message: MIMEMessage, prefix: String,
                       _ body: (String, String, Bool) throws -> String?) throws {
        try visitHeaders(message, prefix: prefix, body)
        guard let root = message.body else { return }
        for (path, entity) in root.walk() {
            let name = "part " + (path.isEmpty ? "1" : path.map { String($0 + 1) }.joined(separator: "."))
                + " (\(entity.contentType))"
            if let embedded = entity.embeddedMessage {
                try visitHeaders(embedded, prefix: name + " ", body)
            }
            if let filename = entity.filename, let replaced = try body(filename, name + " file name", false) {
                entity.setFilename(replaced)
            }
            if entity.contentType.type == "text", let text = entity.text,
               let replaced = try body(text, name, entity.contentType.subtype == "html") {
                try entity.replaceText(replaced)
            }
        }
    }

    private func visitHeaders(_ message: MIMEMessage, prefix: String,
                              _ body: (String, String, Bool) throws -> String?) throws {
        for header in message.headers where !Self.structuralHeaders.contains(header.name.lowercased()) {
            if let replaced = try body(header.value, prefix + header.name, false) {
                if header.name.lowercased() == "subject" { message.setSubject(replaced) } else { message.setHeader(header.name, replaced) }
            }
        }
    }
}
