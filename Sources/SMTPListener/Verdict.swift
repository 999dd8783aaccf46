/// What the handler decided for the whole mail; LMTP repeats it per recipient.
package enum Verdict: Sendable, Equatable {
    /// 250 2.0.0 and the text.
    case accepted(String)
    /// 451 4.3.0 and the text (one line: the pipe filter's). A text whose
    /// first word is an enhanced code 4.x.x uses that code instead.
    case temporary(String)
    /// 554 5.6.0 and the text. A text whose first word is an enhanced code
    /// 5.x.x ("5.7.1 refused: …") uses that code instead.
    case permanent(String)

    /// The reply line, without CRLF: the text made one printable ASCII line of
    /// at most 400 octets, so a handler's text can never inject a reply.
    var replyLine: String {
        switch self {
        case .accepted(let text): return Self.line(250, "2.0.0", "Ok", text, codeClass: nil)
        case .temporary(let text): return Self.line(451, "4.3.0", "Try again later", text, codeClass: "4")
        case .permanent(let text): return Self.line(554, "5.6.0", "Refused", text, codeClass: "5")
        }
    }

    private static func line(_ code: Int, _ enhanced: String, _ fallback: String, _ text: String, codeClass: Character?) -> String {
        // ASCII only (RFC 5321 4.2): controls become spaces, anything else "?".
        var clean = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0.isASCII ? Character($0) : "?" })
        clean = clean.trimmingWhitespace()
        var status = enhanced
        if let codeClass, let space = clean.firstIndex(of: " ") ?? (isEnhancedCode(clean, codeClass) ? clean.endIndex : nil) {
            let word = String(clean[..<space])
            if isEnhancedCode(word, codeClass) {
                status = word
                clean = String(clean[space...]).trimmingWhitespace()
            }
        }
        if clean.isEmpty { clean = fallback }
        if clean.utf8.count > 400 { clean = String(clean.prefix(400)) }
        return "\(code) \(status) \(clean)"
    }

    /// "5.7.1": class digit, then two numbers of at most three digits (RFC 3463).
    static func isEnhancedCode(_ word: String, _ codeClass: Character) -> Bool {
        let parts = word.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == String(codeClass) else { return false }
        return parts.dropFirst().allSatisfy { (1...3).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }
}

/// Receives each mail after its final "." and decides its answer.
package protocol MailHandler: Sendable {
    /// Called after the final "." ; the connection waits (reads nothing) until it returns.
    func handle(_ mail: ReceivedMail) async -> Verdict

    /// Called once for each mail whose verdict was `accepted`, after the
    /// reply was written: `reached` is true once the client's next command
    /// (or its QUIT) came in after the reply, which shows it read it; false
    /// when the session ended first (the client gone, a time-out, a drain),
    /// and then the client may well try the mail again.
    func replied(to mail: ReceivedMail, reached: Bool)
}

extension MailHandler {
    /// By default nothing waits for the reply to reach the client.
    package func replied(to mail: ReceivedMail, reached: Bool) {}
}
