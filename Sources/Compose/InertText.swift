import Foundation

/// Values that come from a received mail (a Subject, a display name, a file
/// name, a Date) made inert before they are shown or written into the
/// editor's template: on one line, without controls, so that none can break
/// a line, begin a header field of the template, or steer the terminal.
package enum InertText {
    /// `text` on one line: every line break (CR, LF, VT, FF, NEL U+0085,
    /// U+2028, U+2029) and every other control character (C0, DEL, C1)
    /// becomes a space, bidirectional overrides and isolates are left out.
    package static func line(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator:
                scalars.append(" ")
            default:
                // U+202A-U+202E and U+2066-U+2069 reorder what a terminal shows.
                if (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value) { continue }
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    /// A display name as RFC 5322 writes it: words of letters and digits
    /// as they are, anything else as a quoted-string, made one line
    /// (``line(_:)``), `\` and `"` escaped. Commas, angle brackets, `@` and
    /// `=?` inside it are then name, never another address or an encoded-word.
    package static func quoted(_ name: String) -> String {
        let name = line(name)
        let words = name.split(separator: " ", omittingEmptySubsequences: false)
        if !name.isEmpty, words.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0.properties.numericType != nil } }) {
            return name
        }
        var quoted = "\""
        for character in name {
            if character == "\\" || character == "\"" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "\""
    }

    /// True for a plain mailbox address `local@domain`: the local part a
    /// dot-atom (RFC 5322 atext, non-ASCII letters and digits allowed), the
    /// domain dot-separated labels of letters, digits and hyphens. Nothing
    /// else is written into a template as an address: no quoted local part,
    /// no domain literal, no `=` or `_` left over from a malformed encoded-word
    /// in a domain.
    package static func isPlainAddress(_ address: String) -> Bool {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, address.utf8.count <= 254 else { return false }
        let atext = Set("!#$%&'*+-/=?^_`{|}~".unicodeScalars)
        func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
            if scalar.isASCII { return CharacterSet.alphanumerics.contains(scalar) }
            return scalar.properties.isAlphabetic || scalar.properties.numericType != nil
        }
        func dotted(_ text: Substring, _ allowed: (Unicode.Scalar) -> Bool) -> [Substring]? {
            let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
            guard !text.isEmpty, pieces.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy(allowed) }) else { return nil }
            return pieces
        }
        guard dotted(parts[0], { isWordScalar($0) || atext.contains($0) }) != nil,
              let labels = dotted(parts[1], { isWordScalar($0) || $0 == "-" }),
              labels.allSatisfy({ $0.first != "-" && $0.last != "-" && $0.utf8.count <= 63 })
        else { return false }
        return true
    }
}
