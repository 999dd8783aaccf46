import Foundation

/// Text in any charset the C library's iconv can decode, read as a lenient
/// reader reads it: a byte sequence that is not valid in the charset becomes
/// U+FFFD and reading goes on.
package enum Charsets {
    /// What the names mail software writes mean, where glibc's iconv knows
    /// the charset under another name or not at all: the one table of
    /// charset aliases (WHATWG's encoding labels and what mail clients write).
    /// A name that stands for no charset in particular (`unknown-8bit`, PHP's
    /// `binary`) is read as lenient readers read undeclared bytes: as UTF-8
    /// and as Latin-1.
    private static let aliases: [String: [String]] = {
        var table: [String: [String]] = [
            "unicode-1-1-utf-7": ["UTF-7"], "csunicode11utf7": ["UTF-7"], "x-utf-7": ["UTF-7"], "utf7": ["UTF-7"],
            "x-unicode-2-0-utf-7": ["UTF-7"], "unicode-2-0-utf-7": ["UTF-7"],
            "x-user-defined": ["ISO-8859-1"], "ansi_x3.4-1968": ["ASCII"], "us-ascii": ["ASCII"],
            // Apple's names for its Mac OS charsets.
            "x-mac-roman": ["MACINTOSH"], "mac-roman": ["MACINTOSH"], "macroman": ["MACINTOSH"], "x-mac": ["MACINTOSH"],
            "x-mac-ce": ["MAC-CENTRALEUROPE"], "x-mac-centraleurroman": ["MAC-CENTRALEUROPE"],
            "x-mac-centraleurope": ["MAC-CENTRALEUROPE"], "x-mac-cyrillic": ["MAC-CYRILLIC"],
            "x-mac-ukrainian": ["MACUKRAINIAN"], "x-mac-icelandic": ["MACIS"], "x-mac-icelandi": ["MACIS"],
            // Shift_JIS as Windows writes it.
            "x-sjis": ["CP932"], "shift-jis": ["CP932"], "ms_kanji": ["CP932"], "csshiftjis": ["CP932"],
            // Chinese: GB2312 labels are read as GBK by every reader.
            "x-gbk": ["GBK"], "gb_2312-80": ["GBK"], "x-gb2312": ["GBK"], "chinese": ["GBK"], "csgb2312": ["GBK"],
            "iso-ir-58": ["GBK"], "x-euc-cn": ["GBK"], "x-big5": ["BIG5"], "x-x-big5": ["BIG5"],
            "x-euc-jp": ["EUC-JP"], "x-euc-tw": ["EUC-TW"], "x-euc": ["EUC-JP"],
            "windows-874": ["CP874"], "x-cp1250": ["CP1250"], "x-cp1251": ["CP1251"], "x-cp1252": ["CP1252"],
        ]
        // Korean: Outlook's ks_c_5601-1987 and its kin mean Windows code page
        // 949 (Unified Hangul Code), a superset of EUC-KR, as browsers read them.
        for label in ["ks_c_5601-1987", "ks_c_5601-1989", "ks_c_5601", "ksc_5601", "ksc5601", "korean", "csksc56011987",
                      "iso-ir-149", "windows-949", "x-windows-949", "ms949", "euc-kr", "x-euc-kr", "cseuckr"] {
            table[label] = ["CP949"]
        }
        // Hebrew and Arabic in logical (-i) or explicit (-e) order: the same bytes.
        for label in ["iso-8859-8-i", "iso_8859-8-i", "csiso88598i", "logical", "iso-8859-8-e", "iso_8859-8-e", "csiso88598e", "visual"] {
            table[label] = ["ISO-8859-8"]
        }
        for label in ["iso-8859-6-i", "iso_8859-6-i", "csiso88596i", "iso-8859-6-e", "iso_8859-6-e", "csiso88596e"] {
            table[label] = ["ISO-8859-6"]
        }
        for label in ["unknown-8bit", "x-unknown", "unknown", "x-unknown-8bit", "8bit", "binary", "x-binary", "default", "none"] {
            table[label] = ["UTF-8", "ISO-8859-1"]
        }
        return table
    }()

    /// The charset a reader reads `name` as when the name is one of the
    /// aliases above that iconv does not know as it stands (the first,
    /// where readers differ); nil for any other.
    package static func alias(_ name: String) -> String? {
        let bare = bare(name)
        guard let meant = aliases[bare]?.first, !isKnown(bare) else { return nil }
        return meant
    }

    /// The charsets an HTML document's own `<meta>` elements declare, as a browser
    /// opening the bytes as a file reads them (WHATWG's algorithm for extracting a
    /// character encoding from a meta element, applied to each whole `<meta …>` tag, so
    /// that `charset=` and `http-equiv`'s `content="…; charset=…"` are both found),
    /// mapped to what iconv decodes: a UTF-16 label means UTF-8 in a `<meta>` (the bytes
    /// were read as ASCII to find it). Every `<meta>` counts, not only the first in the
    /// first 1024 bytes: a parser that meets one later changes its encoding and starts
    /// again. A label iconv does not know is left out, as browsers ignore it.
    package static func metaDeclared(_ bytes: [UInt8]) -> [String] {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) }
        var labels: [String] = []
        var index = 0
        while let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")) {
            index = open + 1
            guard index + 4 < bytes.count, startsWord(bytes, index, bytes.count, "meta"), isSpace(bytes[index + 4]) || bytes[index + 4] == UInt8(ascii: "/") else { continue }
            let end = bytes[index...].firstIndex(of: UInt8(ascii: ">")) ?? bytes.count
            var cursor = index
            while cursor < end {
                guard startsWord(bytes, cursor, end, "charset") else { cursor += 1; continue }
                cursor += 7
                while cursor < end && isSpace(bytes[cursor]) { cursor += 1 }
                guard cursor < end, bytes[cursor] == UInt8(ascii: "=") else { continue }
                cursor += 1
                while cursor < end && isSpace(bytes[cursor]) { cursor += 1 }
                guard cursor < end else { break }
                var value: ArraySlice<UInt8>
                if bytes[cursor] == UInt8(ascii: "\"") || bytes[cursor] == UInt8(ascii: "'") {
                    let quote = bytes[cursor]
                    let close = bytes[(cursor + 1)..<end].firstIndex(of: quote) ?? end
                    value = bytes[(cursor + 1)..<close]
                    cursor = close
                } else {
                    var stop = cursor
                    while stop < end, !isSpace(bytes[stop]), ![UInt8(ascii: ";"), UInt8(ascii: "\""), UInt8(ascii: "'")].contains(bytes[stop]) { stop += 1 }
                    value = bytes[cursor..<stop]
                    cursor = stop
                }
                while let last = value.last, isSpace(last) { value = value.dropLast() }
                let label = String(decoding: value, as: UTF8.self)
                let meant = candidates(label)
                if let first = meant.first {
                    labels.append(first.uppercased().hasPrefix("UTF-16") ? "UTF-8" : first)
                }
            }
            index = end
        }
        var seen = Set<String>()
        return labels.filter { seen.insert($0.uppercased()).inserted }
    }

    /// True when `word` (lower-case ASCII) stands at `index`, before `end`, in any case.
    private static func startsWord(_ bytes: [UInt8], _ index: Int, _ end: Int, _ word: String) -> Bool {
        var at = index
        for expected in word.utf8 {
            guard at < end else { return false }
            let byte = bytes[at]
            guard (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == expected else { return false }
            at += 1
        }
        return true
    }

    /// True for a charset parameter that says the content is not text in
    /// any charset (PHP's finfo writes `application/pdf; charset=binary`).
    package static func saysBinary(_ name: String) -> Bool {
        ["binary", "x-binary"].contains(bare(name))
    }

    /// The name as written, lower-cased, without quotes, white space, a
    /// comment or an RFC 2231 language (after `*`).
    private static func bare(_ name: String) -> String {
        var name = name
        if let comment = name.firstIndex(of: "(") { name = String(name[..<comment]) }
        let trimmed = name.trimmingCharacters(in: CharacterSet(charactersIn: " \t\r\n\"'")).lowercased()
        return String(trimmed.split(separator: "*", omittingEmptySubsequences: false).first ?? "")
    }

    /// The charsets a reader may take `name` to mean. A Unicode encoding
    /// without a stated byte order is read in both (a byte order mark, when
    /// there is one, decides). Empty when iconv knows no such charset.
    package static func candidates(_ name: String) -> [String] {
        let bare = bare(name)
        if let meant = aliases[bare] { return meant }
        var name = bare
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

    /// Bytes read as ISO-8859-1 (each byte the scalar of its value), written straight
    /// into UTF-8: `String(String.UnicodeScalarView(bytes.map(Unicode.Scalar.init)))`
    /// appends scalar by scalar through a generic path, several times slower.
    package static func latin1(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            if byte < 0x80 {
                out.append(byte)
            } else {
                out.append(0xC0 | byte >> 6)
                out.append(0x80 | byte & 0x3F)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `bytes` decoded from `charset` (a name ``candidates(_:)`` gave); nil when
    /// iconv does not know it. A byte order mark at the start is honoured
    /// for UTF-16 and UTF-32 and dropped.
    /// `decoders`: converters kept open for many short pieces (opening one
    /// costs more than converting an encoded-word).
    package static func decode(_ bytes: [UInt8], charset: String, decoders: Decoders? = nil) -> String? {
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
        case "ISO-8859-1", "LATIN1", "ISO8859-1": return latin1(bytes)
        default: break
        }
        guard let converter = decoders?.converter(charset) ?? Converter(charset) else { return nil }
        let handle = converter.handle
        iconv(handle, nil, nil, nil, nil)   // back to the initial state (ISO 2022 shifts)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        // Room for the text of a short piece (an encoded-word) without
        // clearing 64 KB for each: up to four bytes of UTF-8 per byte, and more
        // rounds for longer text.
        var buffer = [UInt8](repeating: 0, count: min(64 << 10, 4 * bytes.count + 16))
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

extension Charsets {
    /// One iconv conversion to UTF-8 (`iconv_open`), closed when released.
    final class Converter {
        let handle: iconv_t

        init?(_ charset: String) {
            guard let handle = iconv_open("UTF-8", charset), handle != iconv_t(bitPattern: -1) else { return nil }
            self.handle = handle
        }

        deinit { iconv_close(handle) }
    }

    /// Converters opened once each and kept, for one caller's many short
    /// pieces. Not `Sendable`: one caller, one thread.
    package final class Decoders {
        private var open: [String: Converter?] = [:]

        /// No converters open yet.
        package init() {}

        func converter(_ charset: String) -> Converter? {
            if let known = open[charset] { return known }
            let made = Converter(charset)
            open[charset] = made
            return made
        }
    }
}
