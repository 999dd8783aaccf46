import Foundation

/// Display names as a reader sees them: what they show, and how to name them
/// in a warning without handing the terminal whatever they hold.
enum DisplayName {
    /// Characters that read as `@`: compatibility forms are folded by NFKC
    /// already (full-width `＠`, small `﹫`); these are listed to be sure.
    static let atSigns: Set<UInt32> = [0x40, 0xFF20, 0xFE6B]
    /// Characters that read as `.`.
    static let dots: Set<UInt32> = [0x2E, 0xFF0E, 0xFF61, 0x3002, 0x2024, 0xFE52, 0x00B7, 0x0387, 0x30FB, 0xFF65, 0x2027,
                                    0x2219, 0x22C5, 0x2E31, 0xA4F8, 0x0701, 0x0702, 0x06D4, 0x1427, 0x16EB, 0x10101]
    /// Characters a reader does not see: soft hyphen, zero-width and joiner
    /// characters, direction marks and overrides, the byte order mark.
    static func isInvisible(_ value: UInt32) -> Bool {
        value == 0xAD || value == 0x34F || value == 0x180E || value == 0xFEFF || (0x200B...0x200F).contains(value)
            || (0x202A...0x202E).contains(value) || (0x2060...0x2064).contains(value) || (0x2066...0x2069).contains(value)
    }

    /// Where words of a display name end.
    static let separators: Set<Character> = [" ", "\t", "<", ">", "\"", "'", "(", ")", "[", "]", ",", ";", ":", "\u{A0}",
                                             "\u{3000}", "\u{2000}", "\u{2002}", "\u{2003}", "\u{2009}", "\u{202F}"]

    /// `name` as it reads: NFKC, look-alikes of `@` and `.` made those, invisible
    /// characters left out, and `(at)`/`[at]`/`(dot)`/`[dot]` spelled out.
    static func folded(_ name: String) -> String {
        var out = ""
        for scalar in name.precomposedStringWithCompatibilityMapping.unicodeScalars {
            if isInvisible(scalar.value) { continue }
            if atSigns.contains(scalar.value) { out += "@" }
            else if dots.contains(scalar.value) { out += "." }
            else { out.unicodeScalars.append(scalar) }
        }
        for (word, sign) in [("at", "@"), ("dot", ".")] {
            out = out.replacingOccurrences(of: "\\s*[(\\[{<]\\s*\(word)\\s*[)\\]}>]\\s*", with: sign,
                                           options: [.regularExpression, .caseInsensitive])
        }
        return out
    }

    /// The form two names are compared in: NFKC, case-folded, white space
    /// collapsed. Invisible characters stay: a direction override changes
    /// what the reader sees, so a name with one is another name.
    static func comparable(_ name: String) -> String {
        name.precomposedStringWithCompatibilityMapping.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
            .trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
    }

    /// `text` safe to print in a warning: control, format and direction
    /// characters escaped as `\u{…}`, and no more than 120 characters.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(120) {
            let value = scalar.value
            if value < 0x20 || (0x7F...0x9F).contains(value) || isInvisible(value) || scalar.properties.generalCategory == .format {
                out += "\\u{\(String(value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return text.unicodeScalars.count > 120 ? out + "…" : out
    }
}

/// Display names that other features keep (the contacts), judged as the
/// From check judges them.
package enum DisplayNames {
    /// `name` fit to keep and show beside `address`, or nil: empty, longer
    /// than 200 characters, holding control, format or invisible characters
    /// (a line break would forge a line of output), or showing an address
    /// other than `address` (with look-alike `@` and `.` read as those).
    package static func keepable(_ name: String, for address: String) -> String? {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.count <= 200 else { return nil }
        for scalar in trimmed.unicodeScalars {
            let value = scalar.value
            if value < 0x20 || (0x7F...0x9F).contains(value) || DisplayName.isInvisible(value)
                || scalar.properties.generalCategory == .format || value == 0x2028 || value == 0x2029 {
                return nil
            }
        }
        if let (shown, plain) = FromCheck.addressInName(trimmed), !(plain && shown == address.lowercased()) { return nil }
        return trimmed
    }

    /// `text` safe to print: control, format and direction characters escaped, at most 120 characters.
    package static func printable(_ text: String) -> String { DisplayName.printable(text) }

    /// The form two names are compared in (NFKC, case-folded, white space collapsed).
    package static func comparable(_ name: String) -> String { DisplayName.comparable(name) }
}
