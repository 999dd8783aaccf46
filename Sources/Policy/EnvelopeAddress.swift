/// An envelope address that is not an RFC 5321 path. Bad input (65): it
/// never reaches SMTP, an argv or a key look-up.
public struct EnvelopeAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `sender` or `recipient 2` (1-based).
    public let which: String
    /// What is wrong, without the address itself (it may hold line breaks).
    public let problem: String

    /// One line naming which envelope address and the problem, never the address.
    public var description: String { "the envelope \(which) is not a usable mail address (\(problem))" }
}

/// Envelope addresses (`MAIL FROM`, `RCPT TO`, sendmail's `-f` and arguments)
/// checked as RFC 5321 paths before anything uses them.
public enum EnvelopeAddress {
    /// The address without one pair of enclosing angle brackets
    /// (`<bob@example.org>` is `bob@example.org`), checked: no control
    /// characters (CR, LF, NUL and the rest), no spaces (not even in a quoted
    /// local part), no angle brackets, commas, semicolons or parentheses, and
    /// exactly one `@` with both sides non-empty. The sender may be empty (the
    /// null sender, `<>`). At most 254 octets (RFC 5321 4.5.3.1.3 less the brackets).
    public static func normalised(_ address: String, which: String, mayBeEmpty: Bool = false) throws(EnvelopeAddressError) -> String {
        var text = address
        if text.hasPrefix("<") && text.hasSuffix(">") && text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        func bad(_ problem: String) -> EnvelopeAddressError { EnvelopeAddressError(which: which, problem: problem) }
        if text.isEmpty {
            if mayBeEmpty { return "" }
            throw bad("empty")
        }
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0: throw bad("contains a NUL byte")
            case 10, 13: throw bad("contains a line break")
            case 0x20: throw bad("contains a space")
            case 0..<0x20, 0x7F, 0x80..<0xA0, 0x2028, 0x2029: throw bad("contains a control character")
            default: break
            }
            if scalar == "<" || scalar == ">" { throw bad("contains an angle bracket") }
            if scalar == "," || scalar == ";" || scalar == "(" || scalar == ")" {
                throw bad("contains a character not allowed in a plain address")
            }
        }
        guard text.utf8.count <= 254 else { throw bad("longer than 254 bytes") }
        if text.hasPrefix("-") { throw bad("starts with a dash") }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { throw bad("not local@domain") }
        return text
    }
}
