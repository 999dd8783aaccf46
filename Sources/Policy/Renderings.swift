/// What a reader may render from a piece of text, beyond the text itself:
/// HTML with its character references, CSS escapes and `data:` URLs decoded;
/// format=flowed lines joined; iCalendar lines unfolded; text/enriched
/// without its commands. A marker in any rendering is a marker.
extension Redactor {
    /// True when `text`, of media type `type/subtype` with `parameters`
    /// (lower-cased names), shows a marker in any way a reader may render it.
    /// Header fields are plain text (`text/plain`).
    public func hasMarkersInAnyRendering(_ text: String, type: String, subtype: String,
                                         parameters: [String: String] = [:]) -> Bool {
        let markup = Self.isMarkup(type: type, subtype: subtype)
        // Each rendering also through the escapes and overrides a viewer may
        // resolve whatever the type says (``decodings(_:markup:)``), searched as
        // it is made and let go before the next is made.
        let markers = [folded(Array(open.unicodeScalars)), folded(Array(close.unicodeScalars))]
        return forEachRendering(text, type: type, subtype: subtype, parameters: parameters) { (rendering: Rendering) in
            switch rendering {
            case .text(let rendering):
                return hasMarkers(rendering) || hasNearMarker(rendering) || hasMarkersInDecodings(rendering, markup: markup)
            case .scalars(let scalars):
                // ``hasMarkers(_:)`` of their text: the same search, in the scalars themselves.
                // A near-marker (``NearMarkerScan``) counts too: the mail is then read as marked,
                // and its span search refuses it.
                return containsAny(markers, in: scalars) || hasNearMarker(scalars: scalars)
                    || hasMarkersInDecodings(scalars: scalars, markup: markup)
            }
        } || (markup && hasMarkersHTML(text))
    }

    /// True for media types read as HTML or XML, character references and all.
    public static func isMarkup(type: String, subtype: String) -> Bool {
        // Byte windows rather than StringProtocol.contains(_:), whose searcher
        // cost ~8,000 instructions a call, twice for every header field and
        // part (issue 24). A match by characters is one by bytes, so this
        // never reads less as markup.
        let bytes = Array(subtype.utf8)
        func has(_ word: [UInt8]) -> Bool {
            guard bytes.count >= word.count else { return false }
            return (0...(bytes.count - word.count)).contains { start in
                word.indices.allSatisfy { bytes[start + $0] == word[$0] }
            }
        }
        return has([104, 116, 109, 108]) || has([120, 109, 108])  // "html", "xml"
    }

    /// The renderings of `text` (the text itself first).
    public func renderings(_ text: String, type: String, subtype: String, parameters: [String: String]) -> [String] {
        var out: [String] = []
        _ = forEachRendering(text, type: type, subtype: subtype, parameters: parameters) { (rendering: String) in out.append(rendering); return false }
        return out
    }

    /// Each of ``renderings(_:type:subtype:parameters:)`` handed to `body` as it is made,
    /// until `body` returns true (then true): the search of a large part holds one
    /// rendering (and the entity-decoded text it is made from) at a time.
    package func forEachRendering(_ text: String, type: String, subtype: String, parameters: [String: String],
                                  _ body: (String) -> Bool) -> Bool {
        forEachRendering(text, type: type, subtype: subtype, parameters: parameters) { (rendering: Rendering) in body(rendering.text) }
    }

    /// One of ``renderings(_:type:subtype:parameters:)``: a text, or the scalars of one where it
    /// was made as scalars (the decoded HTML, and what is made from it).
    package enum Rendering {
        /// The rendering as a text.
        case text(String)
        /// The rendering as its scalars: its text is `String(scalars:)` of them.
        case scalars([Unicode.Scalar])

        /// The rendering as a text, made from its scalars where it is held as those.
        package var text: String {
            switch self {
            case .text(let text): text
            case .scalars(let scalars): String(scalars: scalars)
            }
        }
    }

    /// ``forEachRendering(_:type:subtype:parameters:_:)``, each rendering as it was made: the same
    /// renderings, in the same order. The search reads each as scalars, and a text made of scalars
    /// was turned back into them (making the texts and reading them again cost a random-byte HTML
    /// part a fifth of its time).
    package func forEachRendering(_ text: String, type: String, subtype: String, parameters: [String: String],
                                  _ body: (Rendering) -> Bool) -> Bool {
        if body(.text(text)) { return true }
        if parameters["format"]?.lowercased() == "flowed" {
            // Which DelSp a reader honours is not certain: both. Quoted lines as RFC 3676 reads
            // them (``unflowed(_:deleteSpace:)``), and, where a line is quoted, as a reader that
            // joins lines without looking at their quotes does.
            if body(.text(Self.unflowed(text, deleteSpace: true))) || body(.text(Self.unflowed(text, deleteSpace: false))) { return true }
            // Quote marks with blanks between (`> > `), which RFC 3676 reads as depth 1 with `> ` in
            // the text, and which readers that count them as depth 2 join as one paragraph.
            if Self.hasQuotedLine(text),
               body(.text(Self.joinedFlowed(text, deleteSpace: true))) || body(.text(Self.joinedFlowed(text, deleteSpace: false)))
                || body(.text(Self.unflowed(text, deleteSpace: true, spacedQuotes: true)))
                || body(.text(Self.unflowed(text, deleteSpace: false, spacedQuotes: true))) { return true }
        }
        if ["calendar", "vcard", "directory", "x-vcard", "x-vcalendar", "ics"].contains(subtype) {
            let unfolded = Self.unfolded(text)
            if body(.text(unfolded)) || Self.binaryValuesDecoded(unfolded).contains(where: { body(.text($0)) }) { return true }
            // vCard 2.1 and vCalendar 1.0 values in quoted-printable: a `=` at a line's end is a soft
            // break, joined by an address book (its `=HH` are among the decodings of this rendering).
            if let joined = Self.softBreaksJoined(text), body(.text(joined)) { return true }
            // An HTML value (`X-ALT-DESC;FMTTYPE=text/html:`, which Outlook shows as the event's body):
            // the values with iCalendar's escapes undone, read as a browser shows HTML.
            if unfolded.contains("<") || unfolded.contains("&"),
               body(.scalars(Self.htmlShown(Self.calendarUnescaped(scalarArray(unfolded))))) { return true }
        }
        if subtype == "enriched" || subtype == "richtext" {
            // As RFC 1896 shows it (`<param>` never shown), and with the parameters' text kept, as a
            // reader that only drops commands shows it.
            if body(.text(Self.withoutEnrichedCommands(text, hidingParameters: true))) { return true }
            if body(.text(Self.withoutEnrichedCommands(text))) { return true }
        }
        if Self.isMarkup(type: type, subtype: subtype) {
            // The decoded text's scalars are what each rendering below is made from: made once.
            var entityDecoded = decodeEntities(text)
            if body(.scalars(entityDecoded)) { return true }
            // The decoded text itself, for the checks by characters as before and for the bytes of `%HH`.
            let decoded = String(scalars: entityDecoded)
            // A document inside an attribute (iframe srcdoc) is decoded twice.
            if decoded.contains("&") && body(.scalars(decodeEntities(entityDecoded))) { return true }
            // ``cssUnescaped(_:)-(String)``: the text itself when it holds no backslash.
            if body(.scalars(decoded.contains("\\") ? Self.cssUnescaped(entityDecoded) : entityDecoded)) { return true }
            if body(.text(Self.percentDecoded(decoded))) { return true }
            if let directed = Self.withDirectionsAsControls(entityDecoded), body(.scalars(directed)) { return true }
            let payloads = Self.dataURLPayloads(entityDecoded)
            entityDecoded = []
            for payload in payloads {
                if body(.text(payload)) { return true }
                let inner = String(scalars: decodeEntities(payload))
                if body(.text(inner)) || body(.text(Self.cssUnescaped(inner))) || body(.text(Self.percentDecoded(inner))) { return true }
            }
        }
        return false
    }

    /// HTML whose tags set a direction (`<bdo dir=rtl>`, `dir="rtl"`,
    /// `direction: rtl` in a style) with each such start tag written as a
    /// RIGHT-TO-LEFT OVERRIDE, `</bdo>` as POP DIRECTIONAL FORMATTING and
    /// other tags taken out, so that ``decodings(_:markup:)`` reads it in its
    /// visual order. Taken as an override even without one, and up to the line's
    /// end: it reads more than a browser shows, never less. Nil without `rtl`.
    /// From the HTML's scalars to scalars: the search reads them so.
    static func withDirectionsAsControls(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        guard mentionsRTL(scalars) else { return nil }
        // An array, not a String's scalar view: appending to the view checked its storage at every scalar.
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(scalars.count)
        var index = 0
        while index < scalars.count {
            guard scalars[index] == "<", let end = scalars[index...].prefix(4096).firstIndex(of: ">") else {
                out.append(scalars[index])
                index += 1
                continue
            }
            let tag = String(scalars: scalars[index...end]).lowercased()
            if tag.hasPrefix("</bdo") {
                out.append("\u{202C}")
            } else if !tag.hasPrefix("</") && tag.contains("rtl") {
                out.append("\u{202E}")
            }
            index = end + 1
        }
        return out
    }

    /// `String(String.UnicodeScalarView(scalars)).lowercased().contains("rtl")`, without lower-casing
    /// the whole text: that and the search by characters cost as much as a reading of a random-byte
    /// part. Only ASCII letters lower-case to `r`, `t` and `l` (İ gives `i` and a combining dot, the
    /// Kelvin sign `k`), so each `rtl` of the lower-cased text is one of the text in either case; it
    /// is three characters there unless the scalar before it (lower-cased) joins the `r`, as a
    /// prepended mark does, or the one after joins the `l`, as a combining mark does. Those two
    /// are asked of the same search on just the `rtl` and its two neighbours, lower-cased.
    static func mentionsRTL(_ scalars: [Unicode.Scalar]) -> Bool {
        @inline(__always) func isLetter(_ scalar: Unicode.Scalar, _ lower: UInt32) -> Bool {
            scalar.value < 0x80 && scalar.value | 0x20 == lower
        }
        var index = 0
        while index + 2 < scalars.count {
            if isLetter(scalars[index], 0x72), isLetter(scalars[index + 1], 0x74), isLetter(scalars[index + 2], 0x6C) {
                var around = String.UnicodeScalarView()
                if index > 0, let last = String(scalars[index - 1]).lowercased().unicodeScalars.last { around.append(last) }
                around.append(contentsOf: "rtl".unicodeScalars)
                if index + 3 < scalars.count, let first = String(scalars[index + 3]).lowercased().unicodeScalars.first {
                    around.append(first)
                }
                if String(around).contains("rtl") { return true }
            }
            index += 1
        }
        return false
    }

    /// format=flowed text as RFC 3676 §4 reads it: each line's quote depth is the
    /// count of its leading `>`, taken off with one space after them (space-stuffing,
    /// §4.4 and §4.5); a line ending in a space (but the signature separator `-- `)
    /// continues on the next line of the same quote depth, without that space when
    /// `deleteSpace` (DelSp=yes); at another depth it ends its paragraph (§4.5). Each
    /// paragraph is written on one line, its quote marks and a space before it, with
    /// the line end of the line that ended it. Issue 21: `> [[pri ` and `> vate]]`,
    /// DelSp=yes, are `> [[private]]` to Thunderbird; ``joinedFlowed(_:deleteSpace:)``,
    /// blind to quotes, read `> [[pri> vate]]`. With `spacedQuotes`, a blank between two
    /// quote marks (`> > `) is taken as part of the quote marks, as some readers take it.
    public static func unflowed(_ text: String, deleteSpace: Bool, spacedQuotes: Bool = false) -> String {
        let scalars = scalarArray(text)
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(scalars.count)
        // The quote depth of the paragraph in progress (nil: none is).
        var open: Int?
        var index = 0
        while index < scalars.count {
            // One line: [index, end), its line end [end, next).
            var end = index
            while end < scalars.count && scalars[end] != "\n" { end += 1 }
            let next = end < scalars.count ? end + 1 : end
            var contentEnd = end
            if contentEnd > index && scalars[contentEnd - 1] == "\r" { contentEnd -= 1 }
            var start = index, depth = 0
            while start < contentEnd && scalars[start] == ">" {
                start += 1
                depth += 1
                if spacedQuotes && start + 1 < contentEnd && scalars[start] == " " && scalars[start + 1] == ">" { start += 1 }
            }
            if start < contentEnd && scalars[start] == " " { start += 1 }
            let isSignature = contentEnd - start == 3 && scalars[start] == "-" && scalars[start + 1] == "-" && scalars[start + 2] == " "
            let soft = !isSignature && contentEnd > start && scalars[contentEnd - 1] == " "
            if let depthOpen = open, depthOpen != depth {
                // A flowed line followed by one of another depth: its paragraph ends there (§4.5).
                out.append("\n")
                open = nil
            }
            if open == nil && depth > 0 {
                out.append(contentsOf: repeatElement(">", count: depth))
                out.append(" ")
            }
            out.append(contentsOf: scalars[start..<(soft && deleteSpace ? contentEnd - 1 : contentEnd)])
            if soft && next > end {
                open = depth
            } else {
                out.append(contentsOf: scalars[contentEnd..<next])
                open = nil
            }
            index = next
        }
        return String(scalars: out)
    }

    /// True when a line of `text` starts with `>`: a quoted line of flowed text, which
    /// ``unflowed(_:deleteSpace:)`` and ``joinedFlowed(_:deleteSpace:)`` read otherwise.
    public static func hasQuotedLine(_ text: String) -> Bool {
        var atStart = true
        for byte in text.utf8 {
            if atStart && byte == UInt8(ascii: ">") { return true }
            atStart = byte == 10
        }
        return false
    }

    /// Flowed lines (RFC 3676) joined as a reader blind to quote marks joins them:
    /// a line ending in a space continues on the next; with DelSp=yes that space goes.
    public static func joinedFlowed(_ text: String, deleteSpace: Bool) -> String {
        var out: [Unicode.Scalar] = []
        let scalars = scalarArray(text)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == " " {
                var next = index + 1
                if next < scalars.count && scalars[next] == "\r" { next += 1 }
                if next < scalars.count && scalars[next] == "\n" {
                    if !deleteSpace { out.append(" ") }
                    index = next + 1
                    // Space-stuffing: one leading space of the next line is not text.
                    if index < scalars.count && scalars[index] == " " { index += 1 }
                    continue
                }
            }
            out.append(scalar)
            index += 1
        }
        return String(scalars: out)
    }

    /// Folded lines (iCalendar, vCard, RFC 5322) unfolded: a line break
    /// followed by a space or tab is taken out with that one character.
    public static func unfolded(_ text: String) -> String {
        var out: [Unicode.Scalar] = []
        let scalars = scalarArray(text)
        var index = 0
        while index < scalars.count {
            var next = index
            if scalars[next] == "\r" && next + 1 < scalars.count && scalars[next + 1] == "\n" { next += 1 }
            if scalars[next] == "\n" && next + 1 < scalars.count && (scalars[next + 1] == " " || scalars[next + 1] == "\t") {
                index = next + 2
                continue
            }
            out.append(scalars[index])
            index += 1
        }
        return String(scalars: out)
    }

    /// text/enriched (RFC 1896) as shown: commands `<…>` dropped, `<<` is `<`,
    /// a single line break is a space. With `hidingParameters`, the text of a
    /// `<param>…</param>` is dropped too: RFC 1896 says it is never shown
    /// (issue 21: `[[pri<param>x</param>vate]]` is `[[private]]` to neomutt).
    static func withoutEnrichedCommands(_ text: String, hidingParameters: Bool = false) -> String {
        var out: [Unicode.Scalar] = []
        let scalars = scalarArray(text)
        var index = 0
        // How many `<param>` are open: their text is not shown (nested, as a reader counts them).
        var parameters = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "<" {
                if index + 1 < scalars.count && scalars[index + 1] == "<" {
                    if parameters == 0 { out.append("<") }
                    index += 2
                    continue
                }
                var end = index + 1
                while end < scalars.count && scalars[end] != ">" { end += 1 }
                if hidingParameters {
                    // The command's name, in any case; only `param` and `/param` count.
                    if end - index <= 7 {
                        let name = String(scalars: scalars[(index + 1)..<end]).lowercased()
                        if name == "param" { parameters += 1 } else if name == "/param" { parameters = max(0, parameters - 1) }
                    }
                }
                index = end + 1
                continue
            }
            if parameters > 0 { index += 1; continue }
            if scalar == "\n" {
                if index + 1 < scalars.count && scalars[index + 1] == "\n" { out.append("\n"); index += 2; continue }
                out.append(" ")
                index += 1
                continue
            }
            out.append(scalar)
            index += 1
        }
        return String(scalars: out)
    }

    /// CSS escapes resolved: `\5b`, `\00005B ` (up to six hex digits and one
    /// white space after), and `\[` (any other character as itself).
    static func cssUnescaped(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        return String(scalars: cssUnescaped(scalarArray(text)))
    }

    /// ``cssUnescaped(_:)-(String)`` from scalars to scalars.
    static func cssUnescaped(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(scalars.count)
        var index = 0
        while index < scalars.count {
            guard scalars[index] == "\\", index + 1 < scalars.count else { out.append(scalars[index]); index += 1; continue }
            var end = index + 1
            var value: UInt32 = 0
            while end < scalars.count && end - index <= 6, let digit = hexValue(scalars[end]) {
                value = value << 4 | digit
                end += 1
            }
            if end > index + 1 {
                out.append(Unicode.Scalar(value).flatMap { value == 0 ? nil : $0 } ?? "\u{FFFD}")
                if end < scalars.count && [" ", "\t", "\n"].contains(scalars[end]) { end += 1 }
                index = end
            } else if scalars[index + 1] == "\n" {
                index += 2   // an escaped line break continues the string
            } else {
                out.append(scalars[index + 1])
                index += 2
            }
        }
        return out
    }

    /// `%HH` sequences decoded (as UTF-8), as in URLs.
    static func percentDecoded(_ text: String) -> String {
        guard text.contains("%") else { return text }
        return String(decoding: percentDecodedBytes(Array(text.utf8)), as: UTF8.self)
    }

    static func percentDecodedBytes(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(Unicode.Scalar(bytes[index + 1])), let low = hexValue(Unicode.Scalar(bytes[index + 2])) {
                out.append(UInt8(high << 4 | low))
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    /// The contents of every `data:` URL in `text`, decoded (base64 or
    /// percent-encoded), read as UTF-8 and as Latin-1.
    static func dataURLPayloads(_ text: String) -> [String] {
        dataURLPayloads(scalarArray(text))
    }

    /// ``dataURLPayloads(_:)-(String)`` of the text of `scalars`.
    static func dataURLPayloads(_ scalars: [Unicode.Scalar]) -> [String] {
        var out: [String] = []
        var index = 0
        let prefix: [Unicode.Scalar] = ["d", "a", "t", "a", ":"]
        // The first `,` or quote at or after `stopFrom`, kept from one URL to
        // the next: `data:` again and again without a comma would each search
        // to the end (quadratic).
        var stopFrom = Int.max, stopAt = 0
        while index + prefix.count <= scalars.count {
            // Its first scalar alone first: zipping slices at every scalar cost more than the rest.
            guard lowercasedScalar(scalars[index]) == "d",
                  zip(scalars[index..<(index + prefix.count)], prefix).allSatisfy({ lowercasedScalar($0) == $1 }) else { index += 1; continue }
            var comma = index + prefix.count
            if comma >= stopFrom && comma <= stopAt {
                comma = stopAt
            } else {
                stopFrom = comma
                while comma < scalars.count && scalars[comma] != "," && scalars[comma] != "\"" && scalars[comma] != "'" { comma += 1 }
                stopAt = comma
            }
            guard comma < scalars.count, scalars[comma] == "," else { index += prefix.count; continue }
            let header = String(scalars: scalars[(index + prefix.count)..<comma]).lowercased()
            var end = comma + 1
            let stops: Set<Unicode.Scalar> = ["\"", "'", ")", "<", ">"]
            while end < scalars.count && !stops.contains(scalars[end]) { end += 1 }
            let body = Array(String(scalars: scalars[(comma + 1)..<end]).utf8)
            var bytes = percentDecodedBytes(body)
            if header.contains("base64") { bytes = base64Decoded(bytes) }
            out.append(String(decoding: bytes, as: UTF8.self))
            out.append(String(scalars: bytes.map { Unicode.Scalar($0) }))
            index = end
        }
        return out
    }

    /// The values of a calendar's or a card's content lines written in base64
    /// (`ENCODING=BASE64`, `ENCODING=b`, `VALUE=BINARY`: an attached file, a
    /// photo, a key) decoded, one per line: what a calendar or an address book
    /// opens. A value follows the line's last `:` (base64 has none); read as
    /// UTF-8 and as Latin-1. Empty when no line is so written.
    static func binaryValuesDecoded(_ unfolded: String) -> [String] {
        var decoded: [UInt8] = []
        for line in unfolded.split(whereSeparator: \.isNewline) {
            guard let colon = line.lastIndex(of: ":") else { continue }
            let name = line[..<colon].uppercased()
            guard name.contains("ENCODING=B") || name.contains("VALUE=BINARY") else { continue }
            decoded += base64Decoded(Array(line[line.index(after: colon)...].utf8))
            decoded.append(10)
        }
        guard !decoded.isEmpty else { return [] }
        return [String(decoding: decoded, as: UTF8.self), String(scalars: decoded.map { Unicode.Scalar($0) })]
    }

    /// Base64 decoded leniently: letters of either alphabet, the rest skipped.
    static func base64Decoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var group: UInt32 = 0, count = 0
        for byte in bytes {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            default: continue
            }
            group = group << 6 | value
            count += 1
            if count == 4 {
                out += [UInt8(group >> 16 & 0xFF), UInt8(group >> 8 & 0xFF), UInt8(group & 0xFF)]
                group = 0; count = 0
            }
        }
        if count == 2 { out.append(UInt8(group >> 4 & 0xFF)) }
        if count == 3 { out += [UInt8(group >> 10 & 0xFF), UInt8(group >> 2 & 0xFF)] }
        return out
    }
}

@inline(__always)
func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
    switch scalar {
    case "0"..."9": scalar.value - 48
    case "a"..."f": scalar.value - 87
    case "A"..."F": scalar.value - 55
    default: nil
    }
}

/// The named character references as a trie over the ASCII of their names
/// (as written after `&`): the longest name at an `&` is found in one walk
/// along the text, not by a look-up for every length (33 of them at each
/// `&`: `&a` again and again cost that much).
struct EntityTrie: Sendable {
    /// Per node: its children by the next byte of a name.
    private var children: [[UInt8: Int32]] = [[:]]
    /// Per node: the scalars when a name ends there.
    private var values: [[Unicode.Scalar]?] = [nil]

    init(_ table: String) {
        forEachEntity(in: table) { name, scalars in
            var node = 0
            for byte in name {
                if let next = children[node][byte] { node = Int(next); continue }
                children.append([:])
                values.append(nil)
                children[node][byte] = Int32(children.count - 1)
                node = children.count - 1
            }
            values[node] = scalars
        }
    }

    /// The longest name that `scalars` start with at `start`: where it ends, and what it stands for.
    func longestMatch(_ scalars: [Unicode.Scalar], at start: Int) -> (end: Int, value: [Unicode.Scalar])? {
        var node = 0, at = start
        var best: (end: Int, value: [Unicode.Scalar])?
        while at < scalars.count, scalars[at].value < 0x80, let next = children[node][UInt8(scalars[at].value)] {
            node = Int(next)
            at += 1
            if let value = values[node] { best = (at, value) }
        }
        return best
    }
}

let htmlEntities = EntityTrie(htmlEntityTable)

/// Calls `body` with each line of an entity table (``htmlEntityTable``): the name's
/// bytes and the scalars it stands for. Read as bytes: every process that searches
/// for markers reads the table at its start (2,231 lines), and splitting it as
/// Substrings cost 28 million instructions, a third of a small mail's redaction.
func forEachEntity(in table: String, _ body: (ArraySlice<UInt8>, [Unicode.Scalar]) -> Void) {
    let bytes = Array(table.utf8)
    var index = 0
    while index < bytes.count {
        var end = index
        while end < bytes.count && bytes[end] != 10 { end += 1 }
        var field = index
        while field < end && bytes[field] != 32 { field += 1 }
        let name = bytes[index..<field]
        var scalars: [Unicode.Scalar] = []
        var value: UInt32 = 0, digits = 0
        var at = field + 1
        while at <= end {
            if at == end || bytes[at] == 32 {
                if digits > 0, let scalar = Unicode.Scalar(value) { scalars.append(scalar) }
                (value, digits) = (0, 0)
            } else if let digit = hexValue(Unicode.Scalar(bytes[at])), digits < 8 {
                value = value << 4 | digit
                digits += 1
            }
            at += 1
        }
        if !name.isEmpty { body(name, scalars) }
        index = end + 1
    }
}

/// How numeric references to C1 controls are read (WHATWG): as Windows-1252.
private let windows1252: [UInt32: UInt32] = [
    0x80: 0x20AC, 0x82: 0x201A, 0x83: 0x0192, 0x84: 0x201E, 0x85: 0x2026, 0x86: 0x2020, 0x87: 0x2021, 0x88: 0x02C6,
    0x89: 0x2030, 0x8A: 0x0160, 0x8B: 0x2039, 0x8C: 0x0152, 0x8E: 0x017D, 0x91: 0x2018, 0x92: 0x2019, 0x93: 0x201C,
    0x94: 0x201D, 0x95: 0x2022, 0x96: 0x2013, 0x97: 0x2014, 0x98: 0x02DC, 0x99: 0x2122, 0x9A: 0x0161, 0x9B: 0x203A,
    0x9C: 0x0153, 0x9E: 0x017E, 0x9F: 0x0178,
]

/// Resolves character references as a browser does (WHATWG): every named
/// reference (the longest name that matches, with its `;`, or without it for
/// the legacy names), decimal and hex ones with any number of leading zeros
/// and with or without the final `;`. Anything else stays as written.
func decodeEntities(_ raw: String) -> [Unicode.Scalar] {
    decodeEntities(scalarArray(raw))
}

/// ``decodeEntities(_:)-(String)`` from scalars.
func decodeEntities(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
    var out: [Unicode.Scalar] = []
    out.reserveCapacity(s.count)
    var index = 0
    while index < s.count {
        guard s[index] == "&", index + 1 < s.count else { out.append(s[index]); index += 1; continue }
        if s[index + 1] == "#" {
            var at = index + 2
            let isHex = at < s.count && (s[at] == "x" || s[at] == "X")
            if isHex { at += 1 }
            let digitsStart = at
            var value: UInt64 = 0
            while at < s.count, let digit = isHex ? hexValue(s[at]) : (("0"..."9").contains(s[at]) ? s[at].value - 48 : nil) {
                value = min(value * (isHex ? 16 : 10) + UInt64(digit), 0x110000)
                at += 1
            }
            if at > digitsStart {
                if at < s.count && s[at] == ";" { at += 1 }
                let code = UInt32(value)
                let mapped = windows1252[code] ?? code
                out.append(code == 0 ? "\u{FFFD}" : Unicode.Scalar(mapped) ?? "\u{FFFD}")
                index = at
                continue
            }
        } else {
            // The longest name in the table that the text starts with.
            if let match = htmlEntities.longestMatch(s, at: index + 1) {
                out += match.value
                index = match.end
                continue
            }
        }
        out.append(s[index])
        index += 1
    }
    return out
}
