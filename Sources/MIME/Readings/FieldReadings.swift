import Foundation

/// A header field's value read every way a lenient reader may read it:
/// as written (unfolded), with RFC 2047 encoded-words decoded even where
/// they are malformed, and each MIME parameter (RFC 2231: any name,
/// continuations, charsets) put together and decoded.
package enum FieldReadings {
    /// One reading: `suffix` names a parameter (` name*`), empty for the whole value.
    package struct Reading {
        package let suffix: String
        package let text: String
    }

    /// The readings of `raw`, and what could not be read with certainty
    /// (a charset iconv does not know), each naming where (` name*`, or empty).
    package static func readings(_ raw: String) -> (readings: [Reading], uncertain: [String]) {
        var readings: [Reading] = []
        var uncertain: [String] = []
        let value = unfolded(raw)
        readings.append(Reading(suffix: "", text: value))
        let (decoded, unknown) = encodedWordReadings(value)
        readings += decoded.map { Reading(suffix: "", text: $0) }
        if let unknown { uncertain.append(" (charset \(unknown))") }
        if value.contains("=") {
            for parameter in parameters(value) {
                readings += parameter.texts.map { Reading(suffix: " " + parameter.name, text: $0) }
                if let unknown = parameter.unknownCharset { uncertain.append(" \(parameter.name) (charset \(unknown))") }
            }
        }
        return (readings, uncertain)
    }

    /// Line breaks taken out (the white space after them stays).
    static func unfolded(_ raw: String) -> String {
        // By bytes: Foundation's substring search cost 8,000 instructions a call.
        guard raw.utf8.contains(where: { $0 == 10 || $0 == 13 }) else { return raw }
        return String(String.UnicodeScalarView(raw.unicodeScalars.filter { $0 != "\n" && $0 != "\r" }))
    }

    /// A structured field's value without its comments (RFC 5322 §3.2.2):
    /// `(…)` outside quoted strings, nested, with `\\` escapes, each taken
    /// out with the white space around it kept as one space.
    package static func withoutComments(_ value: String) -> String {
        // By bytes: the standard library's substring search cost more than the rest of a field's reading.
        guard value.utf8.contains(UInt8(ascii: "(")) else { return value }
        var out = String.UnicodeScalarView()
        var depth = 0, quoted = false, escaped = false
        for scalar in value.unicodeScalars {
            if escaped { escaped = false; if depth == 0 { out.append(scalar) }; continue }
            switch scalar {
            case "\\" where quoted || depth > 0:
                escaped = true
                if depth == 0 { out.append(scalar) }
            case "\"" where depth == 0:
                quoted.toggle()
                out.append(scalar)
            case "(" where !quoted:
                if depth == 0 { out.append(" ") }
                depth += 1
            case ")" where depth > 0:
                depth -= 1
            default:
                if depth == 0 { out.append(scalar) }
            }
        }
        return String(out)
    }

    // MARK: RFC 2047

    private struct EncodedWord {
        let range: Range<Int>      // in the scalars of the value
        let charset: String
        let encoding: String
        let text: [UInt8]
    }

    /// Finds `=?charset?encoding?text?=` anywhere, even inside a word, with an
    /// empty charset or an encoding other than B and Q.
    private static func encodedWords(_ scalars: [Unicode.Scalar]) -> [EncodedWord] {
        var words: [EncodedWord] = []
        var index = 0
        // The first `?=` at or after `closeFrom` (nil: none there or later),
        // kept from one word to the next: words without their `?=` would
        // each search to the end of the value again (quadratic).
        var closeFrom = Int.max
        var closeAt: Int?
        func firstClose(from start: Int) -> Int? {
            if start >= closeFrom && (closeAt == nil || closeAt! >= start) { return closeAt }
            var at = start
            closeAt = nil
            while at + 1 < scalars.count {
                if scalars[at] == "?" && scalars[at + 1] == "=" { closeAt = at; break }
                at += 1
            }
            closeFrom = start
            return closeAt
        }
        while index + 1 < scalars.count {
            guard scalars[index] == "=", scalars[index + 1] == "?" else { index += 1; continue }
            var at = index + 2
            func field() -> String? {
                let start = at
                while at < scalars.count && scalars[at] != "?" && scalars[at] != " " && scalars[at] != "\t" { at += 1 }
                guard at < scalars.count, scalars[at] == "?" else { return nil }
                defer { at += 1 }
                return String(String.UnicodeScalarView(scalars[start..<at]))
            }
            guard let charset = field(), let encoding = field() else { index += 2; continue }
            let start = at
            let end = firstClose(from: start)
            // Without its closing `?=`, lenient readers take the word to the
            // next white space (or the end of the value).
            let close = end.map { $0 + 2 } ?? (scalars[start...].firstIndex { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" } ?? scalars.count)
            let textEnd = end ?? close
            let text = scalars[start..<textEnd].map { $0.value < 0x100 ? UInt8($0.value) : UInt8(ascii: "?") }
            words.append(EncodedWord(range: index..<close, charset: charset, encoding: encoding, text: text))
            index = max(close, index + 2)
        }
        return words
    }

    /// Readings with every encoded-word decoded: each a different choice
    /// where readers differ: the encoding as declared, or every word as Q, or
    /// as B (a malformed word is read both ways); a charset's candidates
    /// (both byte orders of UTF-16/32; for an empty charset UTF-8 and Latin-1;
    /// for one iconv does not know, every Unicode encoding). White space
    /// between adjacent encoded-words goes, as RFC 2047 says. Also the name of
    /// a charset iconv does not know, if any.
    static func encodedWordReadings(_ value: String) -> (readings: [String], unknownCharset: String?) {
        let scalars = Array(value.unicodeScalars)
        let words = encodedWords(scalars)
        guard !words.isEmpty else { return ([], nil) }
        var unknown: String?
        var known: [String: [String]] = [:]   // a field may name one charset thousands of times
        let charsets: [[String]] = words.map { word in
            if word.charset.isEmpty { return ["UTF-8", "ISO-8859-1"] }
            let candidates = known[word.charset] ?? Charsets.candidates(word.charset)
            known[word.charset] = candidates
            if candidates.isEmpty { unknown = unknown ?? String(word.charset.prefix(40)) }
            return candidates.isEmpty ? Charsets.fallbacks : candidates
        }
        let widest = charsets.map(\.count).max() ?? 1
        var readings: [String] = []
        let decoders = Charsets.Decoders()
        // Python's decode_header joins the bytes of adjacent words in one
        // charset before decoding them (a UTF-32 unit may be cut between
        // words): read both ways.
        for joinBytes in [false, true] {
            for letterChoice in joinBytes ? [""] : ["", "Q", "B"] {
                for charsetChoice in 0..<widest {
                    var out: [Unicode.Scalar] = []
                    var position = 0
                    var pending: (bytes: [UInt8], charset: String)?
                    func flush() {
                        guard let run = pending else { return }
                        out += (Charsets.decode(run.bytes, charset: run.charset, decoders: decoders) ?? String(decoding: run.bytes, as: UTF8.self)).unicodeScalars
                        pending = nil
                    }
                    for (number, word) in words.enumerated() {
                        let between = scalars[position..<word.range.lowerBound]
                        let adjacent = number > 0 && between.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
                        let declared = word.encoding.uppercased()
                        let letter = letterChoice.isEmpty ? (declared == "Q" ? "Q" : "B") : letterChoice
                        let bytes = letter == "B" ? TransferDecoding.base64(word.text)[0] : qDecoded(word.text)
                        let candidates = charsets[number]
                        let charset = candidates[min(charsetChoice, candidates.count - 1)]
                        if joinBytes && adjacent, pending?.charset == charset {
                            // In place: a copy of the run for each word was quadratic.
                            pending!.bytes += bytes
                        } else {
                            flush()
                            if !adjacent { out += between }
                            pending = (bytes, charset)
                        }
                        if !joinBytes { flush() }
                        position = word.range.upperBound
                    }
                    flush()
                    out += scalars[position...]
                    let reading = String(String.UnicodeScalarView(out))
                    if !readings.contains(reading) { readings.append(reading) }
                }
            }
        }
        return (readings, unknown)
    }

    /// The Q encoding: `_` is a space, `=HH` a byte; anything else as it is.
    static func qDecoded(_ text: [UInt8]) -> [UInt8] {
        TransferDecoding.quotedPrintable(text.map { $0 == UInt8(ascii: "_") ? 32 : $0 })[0]
    }

    // MARK: RFC 2231

    struct Parameter {
        let name: String
        let texts: [String]
        let unknownCharset: String?
    }

    /// The parameters of a structured value (`type/subtype; a=1; b*=utf-8''x`),
    /// continuations put together, percent-escapes and charsets decoded, and
    /// encoded-words in values decoded too (some readers do).
    static func parameters(_ value: String) -> [Parameter] {
        // name → sections: (number, extended, text)
        var sections: [String: [(Int, Bool, String)]] = [:]
        var order: [String] = []
        for (name, text) in rawParameters(value) {
            var base = name.lowercased()
            var extended = false
            if base.hasSuffix("*") { extended = true; base.removeLast() }
            var number = 0
            if let star = base.lastIndex(of: "*"), let parsed = Int(base[base.index(after: star)...]) {
                number = parsed
                base = String(base[..<star])
            }
            // `filename` and `filename*…` are two parameters, each read on its own.
            if name.contains("*") { base += "*" }
            if sections[base] == nil { order.append(base) }
            sections[base, default: []].append((number, extended, text))
        }
        return order.map { name in
            let parts = sections[name]!.sorted { $0.0 < $1.0 }
            var bytes: [UInt8] = []
            var charset: String?
            for (index, part) in parts.enumerated() {
                var text = part.2
                if part.1 && index == 0 {
                    // charset'language'value
                    let pieces = text.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                    if pieces.count == 3 {
                        charset = String(pieces[0])
                        text = String(pieces[2])
                    }
                }
                bytes += part.1 ? PercentEncoding.decoded(Array(text.utf8)) : Array(text.utf8)
            }
            var texts: [String] = []
            var unknown: String?
            if let charset, !charset.isEmpty {
                let candidates = Charsets.candidates(charset)
                if candidates.isEmpty { unknown = String(charset.prefix(40)) }
                texts += (candidates.isEmpty ? Charsets.fallbacks : candidates).compactMap { Charsets.decode(bytes, charset: $0) }
            }
            texts.append(String(decoding: bytes, as: UTF8.self))
            texts.append(Charsets.latin1(bytes))
            for text in texts where text.contains("=?") {
                let (decoded, wordCharset) = encodedWordReadings(text)
                texts += decoded
                unknown = unknown ?? wordCharset
            }
            return Parameter(name: name, texts: texts, unknownCharset: unknown)
        }
    }

    /// `name=value` pairs after the first `;`, values unquoted; lenient about
    /// white space and missing quotes.
    static func rawParameters(_ value: String) -> [(String, String)] {
        let scalars = Array(value.unicodeScalars)
        var result: [(String, String)] = []
        var index = 0
        // Skip the value before the parameters (a quoted `;` does not count).
        var quoted = false
        while index < scalars.count {
            if scalars[index] == "\"" { quoted.toggle() }
            if scalars[index] == ";" && !quoted { break }
            index += 1
        }
        while index < scalars.count {
            while index < scalars.count && (scalars[index] == ";" || scalars[index] == " " || scalars[index] == "\t") { index += 1 }
            let nameStart = index
            while index < scalars.count && scalars[index] != "=" && scalars[index] != ";" { index += 1 }
            let name = String(scalars: scalars[nameStart..<index]).trimmingBlanks
            guard index < scalars.count, scalars[index] == "=" else { continue }
            index += 1
            while index < scalars.count && (scalars[index] == " " || scalars[index] == "\t") { index += 1 }
            var text: [Unicode.Scalar] = []
            if index < scalars.count && scalars[index] == "\"" {
                index += 1
                while index < scalars.count && scalars[index] != "\"" {
                    if scalars[index] == "\\" && index + 1 < scalars.count { index += 1 }
                    text.append(scalars[index])
                    index += 1
                }
                index += 1
            } else {
                while index < scalars.count && scalars[index] != ";" { text.append(scalars[index]); index += 1 }
                while text.last == " " || text.last == "\t" { text.removeLast() }
            }
            if !name.isEmpty { result.append((name, String(scalars: text))) }
        }
        return result
    }
}

/// Small byte transforms shared by the readings.
package enum PercentEncoding {
    /// `bytes` with each `%` and two hexadecimal digits decoded (RFC 3986, RFC 2231); anything else as it is.
    package static func decoded(_ bytes: [UInt8]) -> [UInt8] {
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 48...57: byte - 48
            case 65...70: byte - 55
            case 97...102: byte - 87
            default: nil
            }
        }
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }
}
