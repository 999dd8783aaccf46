import Foundation

/// Content-Transfer-Encodings decoded as lenient readers decode them. Where
/// readers differ (a stray `=` inside base64, white space after a soft line
/// break in quoted-printable), every way is given: the caller searches each.
package enum TransferDecoding {
    /// The ways `encoding` (a Content-Transfer-Encoding value) may be decoded;
    /// nil for an encoding no reader can be relied on to read (`x-gzip`,
    /// misspellings): the caller reads the bytes as they are and counts the
    /// part as not readable with certainty.
    package static func readings(_ bytes: [UInt8], encoding: String) -> [[UInt8]]? {
        switch token(encoding) {
        case "", "7bit", "8bit", "binary": return [bytes]
        case "base64": return base64(bytes)
        case "quoted-printable": return quotedPrintable(bytes)
        case "uuencode", "x-uuencode", "x-uue", "uue", "x-uu", "uu": return [uudecode(bytes), bytes]
        default: return nil
        }
    }

    /// The encoding's name as a lenient reader takes it: comments dropped,
    /// what stands before a `;`, without quotes and white space, lower-cased.
    package static func token(_ value: String) -> String {
        var value = FieldReadings.withoutComments(value)
        if let cut = value.firstIndex(of: ";") { value = String(value[..<cut]) }
        // Trimmed by scalars, not with Foundation's CharacterSet: every part of a hostile mail,
        // and every reading of it, asks for its encoding's name.
        func trimmed(_ scalar: Unicode.Scalar) -> Bool { [" ", "\t", "\r", "\n", "\"", "'"].contains(scalar) }
        let scalars = value.unicodeScalars
        guard let first = scalars.firstIndex(where: { !trimmed($0) }),
              let last = scalars.lastIndex(where: { !trimmed($0) }) else { return "" }
        return String(scalars[first...last]).lowercased()
    }

    /// True for the encodings that leave the bytes as they are (`7bit`,
    /// `8bit`, `binary`, none): every reader reads them alike, however spelled.
    package static func isIdentity(_ value: String) -> Bool {
        ["", "7bit", "8bit", "binary"].contains(token(value))
    }

    /// True when a reader may take `value` otherwise than GMime does: not a
    /// bare name (`base64; x=1`, `base64 (comment)`, quoted). An identity
    /// encoding, however spelled, leaves the bytes alike for every reader
    /// (one that knows it and one that does not).
    package static func isOddlySpelled(_ value: String) -> Bool {
        let bare = value.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return !bare.isEmpty && bare != token(value) && !isIdentity(value)
    }

    private static let alphabet: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(byte)] = Int8(index)
        }
        return table
    }()

    /// The same with the URL-safe letters `-` and `_`, which some decoders accept.
    private static let urlSafeAlphabet: [Int8] = {
        var table = alphabet
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()

    /// Up to four readings: every letter of the alphabet in one run, whatever
    /// stands between (garbage and `=` skipped), or a fresh start after each
    /// `=` (a decoder that takes padding as the end of a group); and, where
    /// `-` or `_` stand, with those as letters (URL-safe base64) or as garbage.
    static func base64(_ bytes: [UInt8]) -> [[UInt8]] {
        let urlSafe = bytes.contains(UInt8(ascii: "-")) || bytes.contains(UInt8(ascii: "_"))
        var out: [[UInt8]] = []
        for table in urlSafe ? [alphabet, urlSafeAlphabet] : [alphabet] {
            for reading in base64(bytes, table) where !out.contains(reading) { out.append(reading) }
        }
        return out
    }

    /// True when a `=` stands before more letters of base64: decoders
    /// differ there (GMime stops, others skip it or start afresh).
    package static func hasStrayPadding(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.firstIndex(of: UInt8(ascii: "=")) else { return false }
        return bytes[first...].contains { urlSafeAlphabet[Int($0)] >= 0 }
    }

    private static func base64(_ bytes: [UInt8], _ alphabet: [Int8]) -> [[UInt8]] {
        var whole = Decoder64(), segmented = Decoder64()
        var split = false
        for byte in bytes {
            let value = alphabet[Int(byte)]
            if value >= 0 {
                whole.add(UInt8(value))
                segmented.add(UInt8(value))
            } else if byte == UInt8(ascii: "=") {
                split = true
                segmented.restart()
            }
        }
        whole.finish()
        segmented.finish()
        return split ? [whole.out, segmented.out] : [whole.out]
    }

    private struct Decoder64 {
        var out: [UInt8] = []
        var group: UInt32 = 0
        var count = 0
        mutating func add(_ value: UInt8) {
            group = group << 6 | UInt32(value)
            count += 1
            if count == 4 {
                out += [UInt8(group >> 16 & 0xFF), UInt8(group >> 8 & 0xFF), UInt8(group & 0xFF)]
                group = 0
                count = 0
            }
        }
        /// What a partial group holds (two letters: one byte, three: two).
        mutating func restart() {
            if count == 2 { out.append(UInt8(group >> 4 & 0xFF)) }
            if count == 3 { out += [UInt8(group >> 10 & 0xFF), UInt8(group >> 2 & 0xFF)] }
            group = 0
            count = 0
        }
        mutating func finish() { restart() }
    }

    /// Two readings when they differ: `=` followed by white space (or stray
    /// CRs) and a line end, or by a bare CR, is a soft line break (RFC 2045
    /// says the white space is ignored; Python ends a line at a bare CR), or
    /// it is not (only `=` right before the line end is). `=` not followed
    /// by two hex digits stays as it is, as lenient decoders keep it.
    static func quotedPrintable(_ bytes: [UInt8]) -> [[UInt8]] {
        var spaced = false
        let lenient = qp(bytes, spaceBeforeBreak: true, spaced: &spaced)
        guard spaced else { return [lenient] }   // no `=` with white space before a line end: one reading
        var ignored = false
        return [lenient, qp(bytes, spaceBeforeBreak: false, spaced: &ignored)]
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func qp(_ bytes: [UInt8], spaceBeforeBreak: Bool, spaced: inout Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "=") else { out.append(byte); index += 1; continue }
            var probe = index + 1
            if spaceBeforeBreak {
                // White space, and stray CRs, between `=` and the line end.
                while probe < bytes.count && (bytes[probe] == 32 || bytes[probe] == 9 || bytes[probe] == 13) {
                    if bytes[probe] != 13 || probe + 1 < bytes.count && bytes[probe + 1] != 10 { spaced = true }
                    probe += 1
                }
            }
            if probe < bytes.count && bytes[probe] == 13 { probe += 1 }
            if probe < bytes.count && bytes[probe] == 10 { index = probe + 1; continue }   // soft line break
            // A bare CR is a line end to readers that split lines at it (Python's email).
            if spaceBeforeBreak && probe > index + 1 && bytes[probe - 1] == 13 { index = probe; continue }
            if probe == bytes.count { index = probe; continue }                            // `=` at the very end
            if index + 2 < bytes.count,
               let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
                continue
            }
            out.append(byte)
            index += 1
        }
        return out
    }

    /// uuencoded lines (between `begin` and `end`, or all lines when there is
    /// no `begin`), each decoded by its length letter.
    package static func uudecode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        let lines = bytes.split(separator: 10, omittingEmptySubsequences: true)
        let hasBegin = lines.contains { $0.starts(with: Array("begin".utf8)) }
        var inside = !hasBegin
        for rawLine in lines {
            var line = Array(rawLine)
            if line.last == 13 { line.removeLast() }
            if line.starts(with: Array("begin".utf8)) { inside = true; continue }
            if line == Array("end".utf8) { inside = !hasBegin; continue }
            guard inside, let first = line.first else { continue }
            let length = Int((first &- 32) & 0x3F)
            var produced: [UInt8] = []
            var index = 1
            while index < line.count && produced.count < length {
                func value(_ at: Int) -> UInt32 { at < line.count ? UInt32((line[at] &- 32) & 0x3F) : 0 }
                let group = value(index) << 18 | value(index + 1) << 12 | value(index + 2) << 6 | value(index + 3)
                produced += [UInt8(group >> 16 & 0xFF), UInt8(group >> 8 & 0xFF), UInt8(group & 0xFF)]
                index += 4
            }
            out += produced.prefix(length)
        }
        return out
    }
}
