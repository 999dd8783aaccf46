/// One reply of an SMTP server: the three-digit code and its text lines.
package struct SMTPReply: Sendable, Equatable, CustomStringConvertible {
    /// The three-digit reply code.
    package let code: Int
    /// The enhanced status code (RFC 3463) when the text starts with one, e.g. "5.1.1".
    package var enhancedCode: String? {
        let first = text.prefix { $0 != " " }
        let parts = first.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) else { return nil }
        return String(first)
    }
    /// The lines of text after the code, as the server sent them (without the code).
    package let lines: [String]

    /// A reply with `code` and its text lines.
    package init(code: Int, lines: [String]) {
        self.code = code
        self.lines = lines
    }

    /// 2xx (and 3xx where a continuation is due).
    package var isPositive: Bool { code >= 200 && code < 400 }
    /// 4xx: try again later.
    package var isTemporary: Bool { code >= 400 && code < 500 }
    /// 5xx: do not try again as it is.
    package var isPermanent: Bool { code >= 500 }

    /// The text for a person: printable ASCII only (anything else becomes
    /// "?"), lines joined by " ", at most ``maxTextLength`` characters. The
    /// server is not trusted: its text could carry terminal escapes or a
    /// copy of what we sent.
    package var text: String {
        var out = ""
        for (index, line) in lines.enumerated() {
            if index > 0 { out += " " }
            for scalar in line.unicodeScalars {
                out.unicodeScalars.append(scalar.value >= 0x20 && scalar.value < 0x7F ? scalar : "?")
            }
            if out.count > Self.maxTextLength { break }
        }
        return out.count > Self.maxTextLength ? String(out.prefix(Self.maxTextLength)) + "…" : out
    }

    /// The most characters of a reply's text that ``text`` keeps; the rest becomes `…`.
    package static let maxTextLength = 300

    /// "550 5.1.1 no such user" (sanitised).
    package var description: String { text.isEmpty ? "\(code)" : "\(code) \(text)" }
}

/// Splits what the server sends into replies (RFC 5321 §4.2): lines of
/// "ddd-text" continued until "ddd text". Bounded: a line may be at most
/// ``maxLine`` octets and a reply at most ``maxLines`` lines.
struct ReplyParser {
    static let maxLine = 4096
    static let maxLines = 200

    private var lines: [String] = []
    private var code: Int?

    enum Failure: Error { case notSMTP(String), tooLong }

    /// Takes one line (without CRLF); returns a reply once its last line came.
    mutating func take(_ line: [UInt8]) throws(Failure) -> SMTPReply? {
        guard line.count >= 3, line[0] >= 0x32, line[0] <= 0x35, line[1] >= 0x30, line[1] <= 0x39,
              line[2] >= 0x30, line[2] <= 0x39, line.count == 3 || line[3] == 0x20 || line[3] == 0x2D else {
            throw .notSMTP(SMTPReply(code: 0, lines: [String(decoding: line.prefix(80), as: UTF8.self)]).text)
        }
        let lineCode = Int(line[0] - 0x30) * 100 + Int(line[1] - 0x30) * 10 + Int(line[2] - 0x30)
        if let code, code != lineCode { throw .notSMTP("a reply changed its code from \(code) to \(lineCode)") }
        code = lineCode
        lines.append(line.count > 4 ? String(decoding: line[4...], as: UTF8.self) : "")
        guard lines.count <= Self.maxLines else { throw .tooLong }
        guard line.count == 3 || line[3] == 0x20 else { return nil }
        defer { lines = []; code = nil }
        return SMTPReply(code: lineCode, lines: lines)
    }

    /// True while a multi-line reply is half read.
    var isInReply: Bool { code != nil }
}
