import Foundation

/// Text in any charset the C library's iconv can decode, read as a lenient
/// reader reads it: a byte sequence that is not valid in the charset becomes
/// U+FFFD and reading goes on.
package enum Charsets {
    /// Names a reader may give to charsets glibc knows under another name.
    private static let aliases: [String: String] = [
        "unicode-1-1-utf-7": "UTF-7", "csunicode11utf7": "UTF-7", "x-utf-7": "UTF-7", "utf7": "UTF-7",
        "x-unicode-2-0-utf-7": "UTF-7", "unicode-2-0-utf-7": "UTF-7",
        "x-user-defined": "ISO-8859-1", "ansi_x3.4-1968": "ASCII", "us-ascii": "ASCII",
    ]

    /// The charsets a reader may take `name` to mean. A Unicode encoding
    /// without a stated byte order is read in both (a byte order mark, when
    /// there is one, decides). Empty when iconv knows no such charset.
    package static func candidates(_ name: String) -> [String] {
        let trimmed = name.trimmingCharacters(in: CharacterSet(charactersIn: " \t\"'")).lowercased()
        // RFC 2231 allows a language after `*` in an encoded-word's charset.
        let bare = String(trimmed.split(separator: "*", omittingEmptySubsequences: false).first ?? "")
        var name = aliases[bare] ?? bare
        guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return [] }
        if ["hz-gb-2312", "hz", "hz-gb2312", "x-hz"].contains(name) { return ["HZ-GB-2312"] }  // not in glibc: decoded here
        if !isKnown(name) {
            // Spellings other libraries accept: utf_32_be, utf-32-be, utf32.
            var other = name.uppercased().replacingOccurrences(of: "_", with: "-")
            for order in ["BE", "LE"] where other.hasSuffix("-" + order) { other = String(other.dropLast(3)) + order }
            if other.hasPrefix("UTF") && !other.hasPrefix("UTF-") { other = "UTF-" + other.dropFirst(3) }
            guard isKnown(other) else { return [] }
            name = other
        }
        switch name.uppercased().replacingOccurrences(of: "_", with: "-") {
        case "UTF-16", "UTF16", "UCS-2", "UCS2", "UNICODE", "ISO-10646-UCS-2", "CSUNICODE": return ["UTF-16LE", "UTF-16BE"]
        case "UTF-32", "UTF32", "UCS-4", "UCS4", "ISO-10646-UCS-4", "CSUCS4": return ["UTF-32LE", "UTF-32BE"]
        default: return [name]
        }
    }

    /// True for charsets in which ASCII bytes are ASCII text (UTF-8, ISO 8859,
    /// Windows code pages); not UTF-7, UTF-16/32, EBCDIC or ISO 2022.
    package static func isASCIICompatible(_ name: String) -> Bool {
        let upper = name.uppercased()
        return ["UTF-8", "UTF8", "ASCII", "US-ASCII"].contains(upper) || upper.hasPrefix("ISO-8859") || upper.hasPrefix("ISO8859")
            || upper.hasPrefix("WINDOWS-125") || upper.hasPrefix("CP125") || upper.hasPrefix("LATIN")
    }

    /// What text in a charset no one can decode is read as, to find markers
    /// in it all the same (the place is not readable with certainty anyway).
    package static let fallbacks = ["UTF-8", "ISO-8859-1", "UTF-16LE", "UTF-16BE", "UTF-32LE", "UTF-32BE", "UTF-7",
                                    "ISO-2022-JP-2", "ISO-2022-KR", "ISO-2022-CN-EXT", "HZ-GB-2312",
                                    // EBCDIC: brackets stand at different codes in each.
                                    "IBM037", "IBM273", "IBM277", "IBM278", "IBM280", "IBM284", "IBM285", "IBM297",
                                    "IBM500", "IBM871", "IBM1047"]

    /// Charsets a reader may guess for text that names none, from what the
    /// bytes hold: escape sequences (ISO 2022), `~{` or `~` at a line end
    /// (HZ), `+` before three letters of base64 (UTF-7).
    package static func guessed(_ bytes: [UInt8]) -> [String] {
        var out: [String] = []
        var escape = false, hz = false, utf7 = false
        for index in bytes.indices {
            switch bytes[index] {
            case 0x1B: escape = true
            case UInt8(ascii: "~"):
                if index + 1 < bytes.count, [UInt8(ascii: "{"), 10, 13].contains(bytes[index + 1]) { hz = true }
            case UInt8(ascii: "+"):
                // A run of at least three letters of base64 after the `+`.
                func isBase64(_ byte: UInt8) -> Bool {
                    (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2B || byte == 0x2F
                }
                if index + 3 < bytes.count, (1...3).allSatisfy({ isBase64(bytes[index + $0]) }) { utf7 = true }
            default: break
            }
            if escape && hz && utf7 { break }
        }
        if escape { out.append("ISO-2022-JP-2") }
        if hz { out.append("HZ-GB-2312") }
        if utf7 { out.append("UTF-7") }
        return out
    }

    /// HZ (RFC 1843), which glibc's iconv lacks: ASCII with `~~` for `~` and
    /// `~` + line end as a soft break, and GB 2312 between `~{` and `~}`.
    static func decodeHZ(_ bytes: [UInt8]) -> String {
        var out = ""
        var ascii: [UInt8] = []
        var index = 0
        var gb = false
        var pending: [UInt8] = []
        func flushGB() {
            if !pending.isEmpty { out += decode(pending.map { $0 | 0x80 }, charset: "GB2312") ?? "" }
            pending = []
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "~"), index + 1 < bytes.count {
                let next = bytes[index + 1]
                if !gb && next == UInt8(ascii: "~") { ascii.append(byte); index += 2; continue }
                if !gb && next == UInt8(ascii: "{") { out += String(decoding: ascii, as: UTF8.self); ascii = []; gb = true; index += 2; continue }
                if gb && next == UInt8(ascii: "}") { flushGB(); gb = false; index += 2; continue }
                if next == 10 { index += 2; continue }
                if next == 13 && index + 2 < bytes.count && bytes[index + 2] == 10 { index += 3; continue }
            }
            if gb { pending.append(byte) } else { ascii.append(byte) }
            index += 1
        }
        flushGB()
        return out + String(decoding: ascii, as: UTF8.self)
    }

    /// The charset a byte order mark at the start of `bytes` names, as
    /// readers sniff it when no charset is declared: none when there is none.
    package static func sniffed(_ bytes: [UInt8]) -> [String] {
        if bytes.starts(with: [0xFF, 0xFE, 0, 0]) || bytes.starts(with: [0, 0, 0xFE, 0xFF]) { return ["UTF-32"] }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) { return ["UTF-16"] }
        return []
    }

    private static let knownLock = NSLock()
    nonisolated(unsafe) private static var known: [String: Bool] = [:]  // guarded by knownLock

    /// True when iconv (and so GMime) can convert from `name`.
    package static func isIconvCharset(_ name: String) -> Bool { isKnown(name) }

    /// True when iconv can convert from `name`.
    static func isKnown(_ name: String) -> Bool {
        knownLock.lock()
        defer { knownLock.unlock() }
        if let cached = known[name] { return cached }
        let handle = iconv_open("UTF-8", name)
        let ok = handle != iconv_t(bitPattern: -1)
        if ok { iconv_close(handle) }
        known[name] = ok
        return ok
    }

    /// `bytes` decoded from `charset` (a name ``candidates(_:)`` gave); nil when
    /// iconv does not know it. A byte order mark at the start is honoured
    /// for UTF-16 and UTF-32 and dropped.
    package static func decode(_ bytes: [UInt8], charset: String) -> String? {
        var charset = charset
        var start = 0
        let upper = charset.uppercased()
        if upper.hasPrefix("UTF-32") && bytes.count >= 4 {
            if bytes[0] == 0xFF && bytes[1] == 0xFE && bytes[2] == 0 && bytes[3] == 0 { charset = "UTF-32LE"; start = 4 }
            else if bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0xFE && bytes[3] == 0xFF { charset = "UTF-32BE"; start = 4 }
        } else if upper.hasPrefix("UTF-16") && bytes.count >= 2 {
            if bytes[0] == 0xFF && bytes[1] == 0xFE { charset = "UTF-16LE"; start = 2 }
            else if bytes[0] == 0xFE && bytes[1] == 0xFF { charset = "UTF-16BE"; start = 2 }
        }
        switch charset.uppercased() {
        case "UTF-8", "UTF8", "ASCII": return String(decoding: bytes[start...], as: UTF8.self)
        case "HZ-GB-2312": return decodeHZ(bytes)
        case "ISO-8859-1", "LATIN1", "ISO8859-1": return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: break
        }
        let handle = iconv_open("UTF-8", charset)
        guard handle != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(handle) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var input = Array(bytes[start...])
        input.withUnsafeMutableBufferPointer { inBuffer in
            var inPointer = UnsafeMutableRawPointer(inBuffer.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }
            var inLeft = inBuffer.count
            while true {
                let (result, produced, failure): (Int, Int, Int32) = buffer.withUnsafeMutableBufferPointer { outBuffer in
                    var outPointer = UnsafeMutableRawPointer(outBuffer.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }
                    var outLeft = outBuffer.count
                    let result = inLeft == 0 ? iconv(handle, nil, nil, &outPointer, &outLeft)
                        : iconv(handle, &inPointer, &inLeft, &outPointer, &outLeft)
                    return (result, outBuffer.count - outLeft, result == -1 ? errno : 0)
                }
                out += buffer[..<produced]
                if result != -1 && inLeft == 0 { break }
                if result == -1 {
                    if failure == E2BIG { continue }
                    // An invalid or cut-off sequence: what a lenient reader shows
                    // is a replacement character, and it reads on.
                    out += [0xEF, 0xBF, 0xBD]
                    if inLeft == 0 { break }
                    inPointer = inPointer.map { $0 + 1 }
                    inLeft -= 1
                    if failure == EINVAL && inLeft == 0 { break }
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
