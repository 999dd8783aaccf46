/// One command line of SMTP or LMTP, understood; or the reply that says why not.
enum Command: Equatable {
    enum Hello: Equatable { case helo, ehlo, lhlo }

    case hello(Hello, String)
    case mail(sender: String, parameters: [Parameter])
    case rcpt(recipient: String, parameters: [Parameter])
    case data
    case rset
    case noop
    case quit
    case vrfy
    case expn
    case help
    /// A verb this server does not know (AUTH, STARTTLS, XFORWARD and BDAT too: never announced).
    case unknown
    /// A known verb with arguments that do not parse: the reply to send.
    case invalid(String)

    /// A MAIL or RCPT parameter, "SIZE=1000" or "SMTPUTF8"; the keyword upper-cased.
    struct Parameter: Equatable {
        let keyword: String
        let value: String?
    }

    /// Understands one command line (without its line end). Octets that are
    /// not UTF-8, or control characters other than TAB, make it a syntax error.
    static func parse(_ line: [UInt8]) -> Command {
        guard let text = String(validating: line, as: UTF8.self) else {
            return .invalid("501 5.5.2 Syntax error: not UTF-8")
        }
        if line.contains(where: { ($0 < 0x20 && $0 != 9) || $0 == 0x7F }) {
            return .invalid("501 5.5.2 Syntax error: control character in command")
        }
        let verbEnd = text.firstIndex(where: { $0 == " " || $0 == "\t" }) ?? text.endIndex
        let verb = text[..<verbEnd].uppercased()
        let rest = String(text[verbEnd...]).trimmingWhitespace()
        switch verb {
        case "HELO", "EHLO", "LHLO":
            // The name is the first word; some clients add more (RFC 5321 tolerates nothing
            // else, Postfix ignores it).
            guard let name = rest.split(whereSeparator: { $0 == " " || $0 == "\t" }).first else {
                return .invalid("501 5.5.4 Syntax: \(verb) hostname")
            }
            return .hello(verb == "HELO" ? .helo : verb == "EHLO" ? .ehlo : .lhlo, String(name))
        case "MAIL":
            guard let (address, parameters) = pathAndParameters(rest, keyword: "FROM:") else {
                return .invalid("501 5.5.4 Syntax: MAIL FROM:<address>")
            }
            guard let parameters else { return .invalid("501 5.5.4 Syntax error in parameters") }
            return .mail(sender: address, parameters: parameters)
        case "RCPT":
            guard let (address, parameters) = pathAndParameters(rest, keyword: "TO:") else {
                return .invalid("501 5.5.4 Syntax: RCPT TO:<address>")
            }
            guard let parameters else { return .invalid("501 5.5.4 Syntax error in parameters") }
            guard !address.isEmpty else { return .invalid("501 5.1.3 Bad recipient address syntax") }
            return .rcpt(recipient: address, parameters: parameters)
        case "DATA", "RSET", "QUIT":
            guard rest.isEmpty else { return .invalid("501 5.5.4 Syntax: \(verb)") }
            return verb == "DATA" ? .data : verb == "RSET" ? .rset : .quit
        case "NOOP": return .noop
        case "VRFY": return rest.isEmpty ? .invalid("501 5.5.4 Syntax: VRFY address") : .vrfy
        case "EXPN": return .expn
        case "HELP": return .help
        default: return .unknown
        }
    }

    /// "FROM:<a@b> SIZE=10" → ("a@b", [SIZE=10]); nil when the keyword or the
    /// path is wrong; parameters nil when they do not parse.
    private static func pathAndParameters(_ rest: String, keyword: String) -> (String, [Parameter]?)? {
        guard rest.uppercased().hasPrefix(keyword) else { return nil }
        let afterKeyword = Array(rest.utf8.dropFirst(keyword.utf8.count).drop(while: { $0 == 32 || $0 == 9 }))
        guard afterKeyword.first == UInt8(ascii: "<") else { return nil }
        // The path ends at the first ">" outside a quoted string.
        var quoted = false
        var escaped = false
        var end: Int?
        for i in 1..<afterKeyword.count {
            let byte = afterKeyword[i]
            if escaped { escaped = false; continue }
            if quoted {
                if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { quoted = false }
                continue
            }
            if byte == UInt8(ascii: "\"") { quoted = true; continue }
            if byte == UInt8(ascii: "<") || byte == 32 || byte == 9 { return nil }
            if byte == UInt8(ascii: ">") { end = i; break }
        }
        guard let end else { return nil }
        var path = String(decoding: afterKeyword[1..<end], as: UTF8.self)
        // A source route ("@a,@b:user@c", RFC 5321 4.1.2) is ignored, as RFC 5321 C asks.
        if path.hasPrefix("@") {
            guard let colon = path.firstIndex(of: ":") else { return nil }
            path = String(path[path.index(after: colon)...])
        }
        let tail = afterKeyword[(end + 1)...]
        guard tail.isEmpty || tail.first == 32 || tail.first == 9 else { return (path, nil) }
        var parameters: [Parameter] = []
        for word in tail.split(whereSeparator: { $0 == 32 || $0 == 9 }) {
            let text = String(decoding: word, as: UTF8.self)
            if let equals = text.firstIndex(of: "=") {
                let keyword = text[..<equals]
                guard !keyword.isEmpty else { return (path, nil) }
                parameters.append(Parameter(keyword: keyword.uppercased(), value: String(text[text.index(after: equals)...])))
            } else {
                parameters.append(Parameter(keyword: text.uppercased(), value: nil))
            }
        }
        return (path, parameters)
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
