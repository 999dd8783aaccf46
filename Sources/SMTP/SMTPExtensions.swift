/// What a server offered in its EHLO reply (RFC 5321 §4.1.1.1). After
/// STARTTLS the list is read anew and the old one forgotten (RFC 3207 §4.2).
package struct SMTPExtensions: Sendable, Equatable {
    /// Keyword (upper case) → its parameters.
    package let offered: [String: [String]]

    /// The extensions a 250 reply to EHLO lists (its first line is the greeting).
    package init(ehloReply: SMTPReply) {
        var offered: [String: [String]] = [:]
        for line in ehloReply.lines.dropFirst() {
            let words = line.split(separator: " ").map(String.init)
            guard var keyword = words.first?.uppercased() else { continue }
            var parameters = Array(words.dropFirst())
            // Old servers write "AUTH=LOGIN PLAIN".
            if keyword.hasPrefix("AUTH="), keyword.count > 5 {
                parameters.insert(String(keyword.dropFirst(5)), at: 0)
                keyword = "AUTH"
            }
            offered[keyword, default: []] += parameters
        }
        self.offered = offered
    }

    /// Nothing offered (after HELO).
    package static let none = SMTPExtensions(offered: [:])
    private init(offered: [String: [String]]) { self.offered = offered }

    /// True when the server offers `keyword` (any case).
    package func has(_ keyword: String) -> Bool { offered[keyword.uppercased()] != nil }

    /// SIZE's limit in octets; nil when not offered or unlimited (0).
    package var maxSize: Int? {
        guard let value = offered["SIZE"]?.first.flatMap({ Int($0) }), value > 0 else { return nil }
        return value
    }

    /// The AUTH mechanisms, upper case.
    package var authMechanisms: [String] { (offered["AUTH"] ?? []).map { $0.uppercased() } }
}
