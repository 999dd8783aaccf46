/// Readings of a text that some reader shows and the text as written does not,
/// whatever the part's declared type: escapes that a viewer of the content
/// (a JSON or RTF viewer, a Markdown renderer, a browser opening a file
/// named `.html`, a reader decoding a charset such as Python's
/// `unicode_escape`) resolves, and the visual order of text under a
/// right-to-left override. Whether a mail has marked spans is decided by a
/// search that includes them (issue 21: a mail whose only markers show
/// through such a reading went out unchanged), and the same search decides
/// whether a part passed unread may go.
extension Redactor {
    /// The readings of `text` beyond the text itself: C-like escapes
    /// (`\x5b`, `\u005b`, `\u{5b}`, `\U0000005b`, `\N{LEFT SQUARE BRACKET}`,
    /// octal `\133`, `\[`; JSON, JavaScript, Python's `unicode_escape`,
    /// Markdown), RTF (`\'5b`, `\u91?`, control words and groups taken out),
    /// CSS (`\5b `), HTML character references (unless `markup`: its
    /// renderings decode them already), `%HH` and `=HH`, Markdown emphasis
    /// taken out, and for each of these and the text the visual order under
    /// bidirectional overrides (``visualReadings(_:)``). Only the readings
    /// whose escape character stands in the text are made, so ordinary text
    /// costs one pass over it.
    package func decodings(_ text: String, markup: Bool = false) -> [String] {
        decodedScalars(scalarArray(text), markup: markup).map { String(scalars: $0) }
    }

    /// ``decodings(_:markup:)`` as scalars, read from scalars: the marker search
    /// decodes many regions and reads them as scalars, so no text is made.
    package func decodedScalars(_ scalars: [Unicode.Scalar], markup: Bool = false) -> [[Unicode.Scalar]] {
        decodedScalarReadings(scalars, markup: markup).readings
    }

    /// ``decodedScalars(_:markup:)``, and which of them are visual orders.
    package struct ScalarReadings {
        /// Every reading but the text itself: the decodings first, then the visual orders.
        package var readings: [[Unicode.Scalar]]
        /// Where the visual orders start in ``readings`` (its count when there are none).
        package var visualFrom: Int
    }

    /// ``decodedScalars(_:markup:)``, told apart: which readings are visual orders under
    /// bidirectional controls.
    package func decodedScalarReadings(_ scalars: [Unicode.Scalar], markup: Bool = false) -> ScalarReadings {
        var decoded: [[Unicode.Scalar]] = [], visual: [[Unicode.Scalar]] = []
        _ = forEachDecodedScalarReading(scalars, markup: markup) { reading, isVisual in
            if isVisual { visual.append(reading) } else { decoded.append(reading) }
            return false
        }
        return ScalarReadings(readings: decoded + visual, visualFrom: decoded.count)
    }

    /// Each reading of ``decodedScalarReadings(_:markup:)`` handed to `body` as it is made,
    /// with whether it is a visual order, until `body` returns true (then true). A reading is
    /// let go once `body` has seen it: a 5 MB part of random bytes read as HTML held some
    /// 28 readings of it at once (570 MB) when they were all made first and searched after.
    ///
    /// With `visualContext`, for a search of needles of at most that many visible scalars
    /// (invisibles passed over, as ``find(_:in:from:)`` passes them): the text itself is
    /// handed to `body` too when it holds a control, and each visual order is made only of
    /// the lines that hold a control and `visualContext` visible scalars either side
    /// (``bidiWindows(_:context:)``). Elsewhere a visual order is its reading, which `body`
    /// has seen, so a needle found in the whole order is found in one or the other: a
    /// random-byte part of 2 MB, whose UTF-8 holds a control or two, reordered every one of
    /// its some 30 readings whole (13 s against 3.9 s for 1 MB, which held none).
    package func forEachDecodedScalarReading(_ scalars: [Unicode.Scalar], markup: Bool = false, visualContext: Int? = nil,
                                             _ body: ([Unicode.Scalar], _ isVisual: Bool) -> Bool) -> Bool {
        // Which of them the text holds, as bits: a look-up for ASCII and one comparison for the
        // rest, in place (a switch at every scalar cost a twentieth of reading random-byte HTML).
        let backslash: UInt8 = 1, ampersand: UInt8 = 2, percent: UInt8 = 4, equals: UInt8 = 8, plus: UInt8 = 16
        let emphasis: UInt8 = 32, bidi: UInt8 = 64, markdown: UInt8 = 128
        var table = [UInt8](repeating: 0, count: 128)
        table[0x5C] = backslash
        table[0x26] = ampersand
        table[0x25] = percent
        table[0x3D] = equals
        table[0x2B] = plus
        for value in [0x2A, 0x5F, 0x7E, 0x60] { table[value] = emphasis }
        table[0x3C] = markdown
        table[0x5D] = markdown
        let held = scalars.withUnsafeBufferPointer { scalars in
            table.withUnsafeBufferPointer { table in
                var held: UInt8 = 0
                for scalar in scalars {
                    let value = scalar.value
                    if value < 0x80 {
                        held |= table[Int(value)]
                    } else if Self.isBidiControl(value) {
                        held |= bidi
                    }
                }
                return held
            }
        }
        let hasBackslash = held & backslash != 0, hasAmpersand = held & ampersand != 0, hasPercent = held & percent != 0
        let hasEquals = held & equals != 0, hasEmphasis = held & emphasis != 0, hasBidi = held & bidi != 0, hasPlus = held & plus != 0
        let hasMarkdown = held & markdown != 0
        // A decoding makes a control only from an escape, so only after a backslash, `&`, `%`,
        // `=` or `+`; a reading without one has no visual order (``visualReadings(_:)``), so
        // each decoding's visual orders follow it, and the text's come first if it has a control.
        func visual(_ reading: [Unicode.Scalar]) -> Bool {
            if visualOrders(reading) { return true }
            // In HTML a line end in the source is a space to a browser, not the end of a bidi
            // paragraph (only a block or U+2029 is): `<p>RLO` LF `]]etavirp/[[ …` is shown
            // reversed (a hostile review). So markup is read a second time with its line ends
            // as spaces; the first reading, which ends the override there, stays for `pre`.
            guard markup, let spaced = Self.lineEndsAsSpaces(reading) else { return false }
            return visualOrders(spaced)
        }
        func visualOrders(_ reading: [Unicode.Scalar]) -> Bool {
            guard let visualContext else { return Self.forEachVisualReading(reading) { body($0, true) } }
            for window in Self.bidiWindows(reading, context: visualContext) {
                if Self.forEachVisualReading(Array(reading[window]), { body($0, true) }) { return true }
            }
            return false
        }
        func decoding(_ reading: [Unicode.Scalar]) -> Bool {
            body(reading, false) || visual(reading)
        }
        if hasBidi && (visualContext != nil && body(scalars, false) || visual(scalars)) { return true }
        var cDecoded: [Unicode.Scalar]?
        if hasBackslash {
            cDecoded = cEscapesDecoded(scalars)
            if decoding(cDecoded!) || decoding(Self.rtfDecoded(scalars)) || decoding(Self.cssUnescaped(scalars)) { return true }
            // RTF as its readers show it by default: ignorable destinations and hidden text out.
            if let shown = Self.rtfShown(scalars), decoding(shown) { return true }
        }
        if hasAmpersand && !markup && decoding(decodeEntities(scalars)) { return true }
        // Markdown as rendered (links as their text, images and inline HTML out), whatever the type
        // says: a `.md` file sent as text/plain or octet-stream opens in a Markdown viewer. HTML's
        // own renderings read it as a browser does.
        if hasMarkdown && !markup && decoding(Self.markdownShown(scalars)) { return true }
        if (hasPercent || hasEquals) && decoding(Self.hexEscapesDecoded(scalars)) { return true }
        if hasPlus && decoding(Self.utf7Decoded(scalars)) { return true }
        if hasEmphasis || hasBackslash {
            // Markdown: `\[` is `[`, and emphasis inside a word shows no mark.
            var markdown = cDecoded ?? cEscapesDecoded(scalars)
            cDecoded = nil
            markdown.removeAll { scalar in
                switch scalar { case "*", "_", "~", "`": true
                default: false }
            }
            if decoding(markdown) { return true }
        }
        return false
    }

    /// How the escapes of ``decodings(_:markup:)`` may start to write
    /// `scalar` (ASCII), lower-case: every written form's first bytes, enough
    /// to tell it from other bytes (`&#91`, `&#x5b`, `&#0`, `&lsqb`, `\x5b`,
    /// `\u005b`, `\u{`, `\n{`, `\133`, `\'5b`, `\u91`, `\5b`, `\[`,
    /// `%5b`, `=5b`, UTF-7's `+afs`), and the scalar itself followed by any
    /// escape's first character, a tag's `<` or a Markdown image's `!`. A marker that shows only through these
    /// readings starts at one of them (or after a bidirectional control), so
    /// a byte search looks for them first and decodes only from there.
    package static func escapeStarts(of scalar: Unicode.Scalar) -> [[UInt8]] {
        guard scalar.isASCII else { return [] }
        let value = scalar.value
        let hex2 = String(value, radix: 16).count == 1 ? "0" + String(value, radix: 16) : String(value, radix: 16)
        var forms = ["&#\(value)", "&#0", "&#x" + String(value, radix: 16), "&#x0", "\\x" + hex2, "\\x{", "\\u00" + hex2, "\\u{",
                     "\\u" + String(value), "\\u0", "\\U000000" + hex2, "\\N{", "\\" + String(value, radix: 8), "\\0", "\\'" + hex2,
                     "\\" + String(value, radix: 16), "\\" + String(Character(scalar)), "%" + hex2, "=" + hex2]
        // UTF-7: `+` and the base64 of the scalar as the first UTF-16 unit of a run (its first two letters, which hold its first 12 bits).
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        forms.append("+" + String([alphabet[Int(value >> 10 & 63)], alphabet[Int(value >> 4 & 63)]]))
        // The named references that stand for it.
        for name in Self.entityNamesByScalar[value] ?? [] { forms.append("&" + name.prefix(4)) }
        // The scalar itself, then an escape or something a viewer shows as nothing.
        for lead in ["&", "\\", "%", "=", "+", "{", "}", "*", "_", "~", "`", "\n", "\r", "<", "!"] { forms.append(String(Character(scalar)) + lead) }
        var seen = Set<[UInt8]>()
        return forms.map { Array($0.lowercased().utf8) }.filter { seen.insert($0).inserted }
    }

    /// The named references that stand for one ASCII scalar (all ``escapeStarts(of:)``
    /// asks for), by the scalar: read from the table once, not at each search.
    private static let entityNamesByScalar: [UInt32: [String]] = {
        var names: [UInt32: [String]] = [:]
        forEachEntity(in: htmlEntityTable) { name, scalars in
            if scalars.count == 1, scalars[0].isASCII { names[scalars[0].value, default: []].append(String(decoding: name, as: UTF8.self)) }
        }
        return names
    }()

    /// True when some reading of `text` (``decodings(_:markup:)``) shows a marker.
    package func hasMarkersInDecodings(_ text: String, markup: Bool = false) -> Bool {
        hasMarkersInDecodings(scalars: scalarArray(text), markup: markup)
    }

    /// ``hasMarkersInDecodings(_:markup:)`` of the text of `scalars`, for a caller that holds
    /// them already (made as scalars, a text made of them was turned back into scalars here).
    package func hasMarkersInDecodings(scalars: [Unicode.Scalar], markup: Bool = false) -> Bool {
        // The readings searched as scalars, as ``hasMarkers(_:)`` searches a text: no text made of each.
        let markers = [folded(Array(open.unicodeScalars)), folded(Array(close.unicodeScalars))]
        let longest = markers.map(\.count).max() ?? 0
        return forEachDecodedScalarReading(scalars, markup: markup, visualContext: longest) { reading, _ in
            containsAny(markers, in: reading)
        }
    }

    /// C, JSON, JavaScript and Python escapes resolved (Python's
    /// `unicode_escape` and `raw_unicode_escape` codecs read text this way);
    /// any other escaped character stands for itself (Markdown, CSS). A line
    /// continuation (`\` at a line's end) is taken out first, as C splices
    /// lines before it reads escapes (Python and the shell drop it inside a
    /// string too), so it may stand inside an escape or between a marker's
    /// scalars. `\N{…}` is Python's name of a character (in any case, and as
    /// Perl's loose names: spaces, hyphens and underscores aside) or Perl's
    /// `\N{U+5B}`: a name of a marker's scalar reads as the scalar; any other
    /// name reads as nothing, because without Unicode's name table it cannot
    /// be told from an invisible character's (`\N{ZERO WIDTH SPACE}`,
    /// `\N{ZWSP}`), and taking it for one reads more, never less.
    func cEscapesDecoded(_ input: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var s = input
        var first = 0
        while first + 1 < input.count, !(input[first] == "\\" && (input[first + 1] == "\n" || input[first + 1] == "\r")) { first += 1 }
        if first + 1 < input.count {
            s = Array(input[..<first])
            s.reserveCapacity(input.count)
            var index = first
            while index < input.count {
                if input[index] == "\\", index + 1 < input.count, input[index + 1] == "\n" || input[index + 1] == "\r" {
                    index += input[index + 1] == "\r" && index + 2 < input.count && input[index + 2] == "\n" ? 3 : 2
                } else {
                    s.append(input[index])
                    index += 1
                }
            }
        }
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var index = 0
        func hex(_ from: Int, max: Int, exact: Bool) -> (UInt32, Int)? {
            var at = from, value: UInt32 = 0
            while at < s.count, at - from < max, let digit = hexValue(s[at]) { value = value << 4 | digit; at += 1 }
            guard at > from, !exact || at - from == max else { return nil }
            return (value, at)
        }
        var names: [String: Unicode.Scalar]?
        while index < s.count {
            guard s[index] == "\\", index + 1 < s.count else { out.append(s[index]); index += 1; continue }
            let next = s[index + 1]
            // nil: not an escape; a nil scalar: an escape that reads as nothing.
            var decoded: (scalar: Unicode.Scalar?, end: Int)?
            func scalar(_ parsed: (UInt32, Int)?) -> (scalar: Unicode.Scalar?, end: Int)? {
                parsed.map { (Unicode.Scalar($0.0) ?? "\u{FFFD}", $0.1) }
            }
            switch next {
            case "x", "u":
                // `\x{5b}` (Perl), `\u{5b}` (JavaScript, Rust), else `\x5b` (up to two digits) or `\u005b` (four).
                if index + 2 < s.count, s[index + 2] == "{" {
                    if let (value, end) = hex(index + 3, max: 8, exact: false), end < s.count, s[end] == "}" {
                        decoded = scalar((value, end + 1))
                    }
                } else {
                    decoded = next == "x" ? scalar(hex(index + 2, max: 2, exact: false)) : scalar(hex(index + 2, max: 4, exact: true))
                }
            case "U": decoded = scalar(hex(index + 2, max: 8, exact: true))
            case "N":
                if index + 2 < s.count, s[index + 2] == "{", let close = s[(index + 3)...].prefix(80).firstIndex(of: "}") {
                    let name = s[(index + 3)..<close]
                    if name.count > 2, name[name.startIndex] == "U" || name[name.startIndex] == "u", name[name.startIndex + 1] == "+",
                       let (value, end) = hex(name.startIndex + 2, max: 8, exact: false), end == close {
                        decoded = scalar((value, close + 1))
                    } else {
                        if names == nil { names = markerScalarNames }
                        decoded = (names![Self.looseName(name)], close + 1)
                    }
                }
            case "0"..."7":
                var at = index + 1, value: UInt32 = 0
                while at < s.count, at - index <= 3, ("0"..."7").contains(s[at]) { value = value << 3 | (s[at].value - 48); at += 1 }
                decoded = scalar((value, at))
            case "n", "r": decoded = ("\n", index + 2)
            case "t": decoded = ("\t", index + 2)
            default: decoded = (next, index + 2)
            }
            if let (value, end) = decoded {
                if let value { out.append(value) }
                index = end
            } else {
                out.append(s[index])
                index += 1
            }
        }
        return out
    }

    /// A character's name as loose matching compares it: upper case, without
    /// spaces, hyphens and underscores.
    private static func looseName<C: Collection>(_ name: C) -> String where C.Element == Unicode.Scalar {
        String(scalars: name.filter { $0 != " " && $0 != "-" && $0 != "_" }).uppercased()
    }

    /// The names (loose, ``looseName(_:)``) and name aliases of the scalars
    /// of both markers, in either case.
    private var markerScalarNames: [String: Unicode.Scalar] {
        var names: [String: Unicode.Scalar] = [:]
        for scalar in (open + close + open.uppercased() + open.lowercased() + close.uppercased() + close.lowercased()).unicodeScalars {
            for name in [scalar.properties.name, scalar.properties.nameAlias].compactMap({ $0 }) {
                names[Self.looseName(name.unicodeScalars)] = scalar
            }
        }
        return names
    }

    /// RTF as a reader shows it: `\'HH` (a byte, read as Windows-1252, which
    /// agrees with ASCII), `\uN` (a signed decimal, then its one fallback
    /// character skipped), `\{`, `\}`, `\\`; other control words and the
    /// group braces show nothing, and nor do bare CR and LF.
    static func rtfDecoded(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var index = 0
        func isLetter(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) }
        while index < s.count {
            let scalar = s[index]
            // Group braces show nothing; nor do bare line ends, which RTF readers ignore in the text.
            if scalar == "{" || scalar == "}" || scalar == "\n" || scalar == "\r" { index += 1; continue }
            guard scalar == "\\", index + 1 < s.count else { out.append(scalar); index += 1; continue }
            let next = s[index + 1]
            if next == "'", index + 3 < s.count, let high = hexValue(s[index + 2]), let low = hexValue(s[index + 3]) {
                out.append(Unicode.Scalar(UInt8(high << 4 | low)))
                index += 4
            } else if isLetter(next) {
                // A control word: letters, an optional signed number, an optional space.
                var at = index + 1
                while at < s.count, isLetter(s[at]), at - index < 33 { at += 1 }
                let word = String(scalars: s[(index + 1)..<at])
                let negative = at < s.count && s[at] == "-"
                if negative { at += 1 }
                var number = 0, digits = 0
                while at < s.count, ("0"..."9").contains(s[at]), digits < 7 { number = number * 10 + Int(s[at].value - 48); at += 1; digits += 1 }
                if at < s.count && s[at] == " " { at += 1 }
                if word == "u" && digits > 0 {
                    let value = negative ? 65536 - number : number
                    out.append(Unicode.Scalar(UInt32(max(0, value))) ?? "\u{FFFD}")
                    // The fallback for readers without Unicode: one character (or one \'HH).
                    if at < s.count {
                        at += s[at] == "\\" && at + 3 < s.count && s[at + 1] == "'" ? 4 : (s[at] == "\\" ? 0 : 1)
                    }
                } else if word == "par" || word == "line" {
                    out.append("\n")
                }
                index = at
            } else {
                if next != "\n" && next != "\r" { out.append(next) }
                index += 2
            }
        }
        return out
    }

    /// RTF as a reader shows it by default (``rtfDecoded(_:)``, and what it does not
    /// show taken out): an ignorable destination `{\*\word …}` and the destinations
    /// no reader shows in the text (`fonttbl`, `colortbl`, `stylesheet`, `info`, `pict`)
    /// whole, and hidden text, from `\v` to `\v0`, `\plain` or the end of the group
    /// that set it. Nil when `s` holds neither `\*` nor a `\v` or such a destination
    /// (its reading is then ``rtfDecoded(_:)``'s). Issue 21: `[[pri{\*\zz junk}vate]]`
    /// and `[[pri\v junk\v0 vate]]` are `[[private]]` to Word and LibreOffice.
    static func rtfShown(_ s: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        func isLetter(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) }
        let unseen: Set<String> = ["fonttbl", "colortbl", "stylesheet", "info", "pict"]
        // Whether anything is hidden: a `\*`, or a control word `\v` or one of `unseen`.
        var hides = false
        var index = 0
        while index + 1 < s.count && !hides {
            if s[index] == "\\" {
                if s[index + 1] == "*" { hides = true }
                var at = index + 1
                while at < s.count, isLetter(s[at]), at - index < 12 { at += 1 }
                let word = String(scalars: s[(index + 1)..<at])
                if word == "v" || unseen.contains(word) { hides = true }
                index = max(at, index + 2)
            } else {
                index += 1
            }
        }
        guard hides else { return nil }
        // The text to decode, with what is not shown left out; then read as ``rtfDecoded(_:)`` reads it.
        var kept: [Unicode.Scalar] = []
        kept.reserveCapacity(s.count)
        // Per open group: whether text was hidden where it opened.
        var groups: [Bool] = []
        var hidden = false
        index = 0
        while index < s.count {
            let scalar = s[index]
            if scalar == "{" {
                // A destination not shown: the group whole, to its matching brace (or the end).
                var at = index + 1
                while at < s.count && (s[at] == "\r" || s[at] == "\n") { at += 1 }
                var skip = false
                if at + 1 < s.count && s[at] == "\\" {
                    if s[at + 1] == "*" {
                        skip = true
                    } else {
                        var end = at + 1
                        while end < s.count, isLetter(s[end]), end - at < 12 { end += 1 }
                        skip = unseen.contains(String(scalars: s[(at + 1)..<end]))
                    }
                }
                if skip {
                    var depth = 0
                    at = index
                    while at < s.count {
                        if s[at] == "\\" { at += 2; continue }
                        if s[at] == "{" { depth += 1 } else if s[at] == "}" { depth -= 1; if depth == 0 { break } }
                        at += 1
                    }
                    index = at + 1
                    continue
                }
                groups.append(hidden)
                index += 1
                continue
            }
            if scalar == "}" {
                hidden = groups.popLast() ?? false
                index += 1
                continue
            }
            if scalar == "\\" && index + 1 < s.count && isLetter(s[index + 1]) {
                var at = index + 1
                while at < s.count, isLetter(s[at]), at - index < 33 { at += 1 }
                let word = String(scalars: s[(index + 1)..<at])
                var numberEnd = at
                if numberEnd < s.count && s[numberEnd] == "-" { numberEnd += 1 }
                while numberEnd < s.count, ("0"..."9").contains(s[numberEnd]) { numberEnd += 1 }
                if word == "v" {
                    // `\v` and `\v1` hide, `\v0` shows; the word and its delimiting space are not text.
                    hidden = !(numberEnd == at + 1 && s[at] == "0")
                    index = numberEnd < s.count && s[numberEnd] == " " ? numberEnd + 1 : numberEnd
                    continue
                }
                if word == "plain" { hidden = false }
            }
            if hidden {
                // A control symbol or `\'HH` goes whole, so that what follows is not read as text.
                index += scalar == "\\" && index + 1 < s.count ? 2 : 1
                continue
            }
            if scalar == "\\" && index + 1 < s.count {
                kept.append(scalar)
                kept.append(s[index + 1])
                index += 2
                continue
            }
            kept.append(scalar)
            index += 1
        }
        return rtfDecoded(kept)
    }

    /// `%HH` and `=HH` decoded as bytes, the result read as UTF-8 (URLs,
    /// quoted-printable inside a part that does not say so).
    ///
    /// Only the bytes of escapes are decoded; every other scalar is copied as it is. The whole
    /// text as bytes read as UTF-8 gives the same: a scalar's own UTF-8 is whole and valid and
    /// starts with a byte that continues no sequence (ASCII or a lead byte), so it ends a sequence
    /// of escaped bytes left open (one U+FFFD for it, as at the end of the bytes) and reads as
    /// itself. Encoding the text and decoding it again cost this reading two thirds of its time.
    static func hexEscapesDecoded(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var escaped: [UInt8] = []
        func flush() {
            guard !escaped.isEmpty else { return }
            out.append(contentsOf: String(decoding: escaped, as: UTF8.self).unicodeScalars)
            escaped.removeAll(keepingCapacity: true)
        }
        var index = 0
        while index < s.count {
            if s[index] == "%" || s[index] == "=", index + 2 < s.count, let high = hexValue(s[index + 1]), let low = hexValue(s[index + 2]) {
                escaped.append(UInt8(high << 4 | low))
                index += 3
            } else {
                flush()
                out.append(s[index])
                index += 1
            }
        }
        flush()
        return out
    }

    /// UTF-7 (RFC 2152) decoded: `+` and base64 of UTF-16 up to the first
    /// other character (a `-` there is taken out), `+-` is `+`. Some readers
    /// guess UTF-7 whatever the part declares.
    static func utf7Decoded(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var index = 0
        func sextet(_ scalar: Unicode.Scalar) -> UInt32? {
            switch scalar {
            case "A"..."Z": scalar.value - 65
            case "a"..."z": scalar.value - 71
            case "0"..."9": scalar.value + 4
            case "+": 62
            case "/": 63
            default: nil
            }
        }
        while index < s.count {
            guard s[index] == "+", index + 1 < s.count else { out.append(s[index]); index += 1; continue }
            var at = index + 1
            if s[at] == "-" { out.append("+"); index = at + 1; continue }
            var bits: UInt32 = 0, count = 0
            var units: [UInt16] = []
            while at < s.count, let value = sextet(s[at]) {
                bits = bits << 6 | value
                count += 6
                if count >= 16 {
                    count -= 16
                    units.append(UInt16(truncatingIfNeeded: bits >> UInt32(count)))
                }
                at += 1
            }
            guard !units.isEmpty else { out.append(s[index]); index += 1; continue }
            out += String(decoding: units, as: UTF16.self).unicodeScalars
            if at < s.count && s[at] == "-" { at += 1 }
            index = at
        }
        return out
    }

    /// The visual orders of RTF's reading of `scalars` alone, in which bare line ends show
    /// nothing, so that a line under a control runs on past them a long way.
    package static func lineJoinedVisualReadings(_ scalars: [Unicode.Scalar]) -> [[Unicode.Scalar]] {
        visualReadings(rtfDecoded(scalars))
    }

    /// The visual order of `s` as a browser or terminal shows it under the
    /// explicit bidirectional controls: after RLO, RLE, RLI or FSI the text
    /// (up to the matching PDF or PDI, or the line's end) is taken as
    /// right-to-left, after LRO, LRE or LRI as left-to-right, nested; each
    /// run at an odd level is shown reversed (Unicode's rule L2). Letters
    /// inside an embedding that does not override keep their own direction
    /// in a real reader; reversing them anyway reads more, never less. Two
    /// readings: brackets mirrored (rule L4, browsers) and not (terminals).
    /// Empty when `s` holds no such control.
    static func visualReadings(_ s: [Unicode.Scalar]) -> [[Unicode.Scalar]] {
        var readings: [[Unicode.Scalar]] = []
        _ = forEachVisualReading(s) { readings.append($0); return false }
        return readings
    }

    /// The parts of `s` whose visual order (``visualReadings(_:)``) may differ from `s`, with what a
    /// needle of `context` visible scalars reaching into them may hold, in order, apart: each from
    /// the first bidirectional control of a line to the line's end, widened by `context` scalars
    /// that are not invisible (and the invisibles among them) either side; parts that would touch
    /// are one. Empty when `s` holds no control.
    ///
    /// Lines end at a line end or U+2029, where ``forEachVisualReading(_:_:)`` goes back to level 0
    /// with nothing open, and before a line's first control the level is 0 with nothing open too:
    /// what stands there is not moved, and each part starts in such a place and ends at a line's end
    /// or past it, so its visual order is that part of the whole one, and the whole one is `s`
    /// elsewhere. A needle found in the whole order either lies where `s` is not moved (and is found
    /// in `s`) or reaches into a part, no further than `context` visible scalars beyond it. Made of
    /// one window from the first control's line to the last's, a random-byte part of 7 MB, whose
    /// few controls stand lines apart, reordered nearly all of every one of its readings.
    static func bidiWindows(_ s: [Unicode.Scalar], context: Int) -> [Range<Int>] {
        s.withUnsafeBufferPointer { bidiWindows($0, context: context) }
    }

    /// ``bidiWindows(_:context:)`` in place: the scans for controls read every scalar of every
    /// reading of every rendering, eight at a time. Each scalar is walked over a bounded number of
    /// times: the widening of a part walks only the gap to the next or the one before.
    private static func bidiWindows(_ s: UnsafeBufferPointer<Unicode.Scalar>, context: Int) -> [Range<Int>] {
        @inline(__always) func isLineEnd(_ scalar: Unicode.Scalar) -> Bool { scalar == "\n" || scalar == "\r" || scalar == "\u{2029}" }
        let count = s.count
        // Each line's first control to its end (the line end itself, or the text's end).
        var cores: [Range<Int>] = []
        var from = 0
        while from < count {
            let control = s.withMemoryRebound(to: UInt32.self) { firstControl(in: $0, from: from) }
            guard control < count else { break }
            var end = control + 1
            while end < count && !isLineEnd(s[end]) { end += 1 }
            cores.append(control..<end)
            from = end
        }
        guard !cores.isEmpty else { return [] }
        // How far `context` visible scalars (and the invisibles among and after them) reach
        // forward from `at` and back from `before`, neither past `limit`.
        func forward(_ at: Int, limit: Int) -> Int {
            var end = at, visible = 0
            while end < limit && visible < context {
                if !isInvisible(s[end]) { visible += 1 }
                end += 1
            }
            while end < limit && isInvisible(s[end]) { end += 1 }
            return end
        }
        func back(_ before: Int, limit: Int) -> Int {
            var start = before, visible = 0
            while start > limit && visible < context {
                start -= 1
                if !isInvisible(s[start]) { visible += 1 }
            }
            while start > limit && isInvisible(s[start - 1]) { start -= 1 }
            return start
        }
        var windows: [Range<Int>] = []
        var start = back(cores[0].lowerBound, limit: 0)
        for (index, core) in cores.enumerated() {
            guard index + 1 < cores.count else {
                windows.append(start..<forward(core.upperBound, limit: count))
                break
            }
            // The gap to the next part: widened from both sides, within it; one part when they meet.
            let next = cores[index + 1].lowerBound
            let end = forward(core.upperBound, limit: next)
            let nextStart = back(next, limit: end)
            if nextStart <= end { continue }
            windows.append(start..<end)
            start = nextStart
        }
        return windows
    }

    /// True for the explicit bidirectional controls, U+202A...U+202E and U+2066...U+2069.
    @inline(__always)
    package static func isBidiControl(_ value: UInt32) -> Bool {
        // One subtraction rules out all but U+202A...U+2069 (wrapping below them).
        value &- 0x202A < 0x40 && (value <= 0x202E || value >= 0x2066)
    }

    /// Where the first bidirectional control stands in `values` (scalars' values) at or after
    /// `from`, or their count: eight at a time, each eight passed over unless one of them is
    /// within U+202A...U+2069.
    private static func firstControl(in values: UnsafeBufferPointer<UInt32>, from: Int = 0) -> Int {
        guard let base = values.baseAddress else { return 0 }
        let count = values.count
        let low = SIMD8<UInt32>(repeating: 0x202A), width = SIMD8<UInt32>(repeating: 0x40)
        var index = from
        while index + 8 <= count {
            let chunk = UnsafeRawPointer(base + index).loadUnaligned(as: SIMD8<UInt32>.self)
            if any(chunk &- low .< width) {
                for at in index..<(index + 8) where isBidiControl(values[at]) { return at }
            }
            index += 8
        }
        while index < count {
            if isBidiControl(values[index]) { return index }
            index += 1
        }
        return count
    }

    /// `s` with each LF and CR a space, when it holds both a bidirectional control and a line
    /// end (nil otherwise: its visual orders would be the same).
    static func lineEndsAsSpaces(_ s: [Unicode.Scalar]) -> [Unicode.Scalar]? {
        let hasControl = s.withUnsafeBufferPointer { scalars in
            scalars.withMemoryRebound(to: UInt32.self) { firstControl(in: $0) < $0.count }
        }
        guard hasControl, s.contains(where: { $0 == "\n" || $0 == "\r" }) else { return nil }
        return s.map { $0 == "\n" || $0 == "\r" ? " " : $0 }
    }

    /// Each of ``visualReadings(_:)`` handed to `body` as it is made, until `body` returns
    /// true (then true): one reordered copy of `s` held at a time.
    static func forEachVisualReading(_ s: [Unicode.Scalar], _ body: ([Unicode.Scalar]) -> Bool) -> Bool {
        let hasControl = s.withUnsafeBufferPointer { scalars in
            scalars.withMemoryRebound(to: UInt32.self) { firstControl(in: $0) < $0.count }
        }
        guard hasControl else { return false }
        // Written in place, not appended: this runs over whole readings (RTF's, whose lines
        // run on past bare line ends, is one line), and each append checked its array.
        var levels = [UInt8](repeating: 0, count: s.count)
        var stack: [UInt8] = []
        var level: UInt8 = 0
        // Deeper levels read as the deepest: the cost stays linear.
        let deepest: UInt8 = 15
        let kept = [Unicode.Scalar](unsafeUninitializedCapacity: s.count) { keptOut, written in
            var at = 0
            levels.withUnsafeMutableBufferPointer { levelsOut in
                s.withUnsafeBufferPointer { input in
                    for scalar in input {
                        switch scalar.value {
                        case 0x202B, 0x202E, 0x2067, 0x2068:   // RLE, RLO, RLI, FSI (taken as right-to-left)
                            stack.append(level)
                            level = min(deepest, level | 1 == level ? level + 2 : level | 1)
                        case 0x202A, 0x202D, 0x2066:   // LRE, LRO, LRI
                            stack.append(level)
                            level = min(deepest - 1, level & 1 == 0 ? level + 2 : level + 1)
                        case 0x202C, 0x2069:   // PDF, PDI
                            level = stack.popLast() ?? 0
                        case 0x0A, 0x0D, 0x2029:
                            stack.removeAll()
                            level = 0
                            keptOut.initializeElement(at: at, to: scalar)
                            levelsOut[at] = 0
                            at += 1
                        default:
                            keptOut.initializeElement(at: at, to: scalar)
                            levelsOut[at] = level
                            at += 1
                        }
                    }
                }
            }
            written = at
        }
        levels.removeLast(levels.count - kept.count)
        var highest: UInt8 = 0
        for level in levels where level > highest { highest = level }
        guard highest > 0 else { return false }
        var mirrored = kept
        for index in mirrored.indices where levels[index] & 1 == 1 {
            if let pair = mirror(of: mirrored[index]) { mirrored[index] = pair }
        }
        func reordered(_ text: [Unicode.Scalar]) -> [Unicode.Scalar] {
            var text = text, levels = levels
            text.withUnsafeMutableBufferPointer { text in
                levels.withUnsafeMutableBufferPointer { levels in
                    for threshold in stride(from: highest, through: 1, by: -1) {
                        var index = 0
                        while index < text.count {
                            guard levels[index] >= threshold else { index += 1; continue }
                            var end = index
                            while end < text.count && levels[end] >= threshold { end += 1 }
                            // By hand: the generic reverse costs many times as much in a debug build.
                            var low = index, high = end - 1
                            while low < high {
                                (text[low], text[high]) = (text[high], text[low])
                                (levels[low], levels[high]) = (levels[high], levels[low])
                                low += 1
                                high -= 1
                            }
                            index = end
                        }
                    }
                }
            }
            return text
        }
        if body(reordered(mirrored)) { return true }
        mirrored = []
        return body(reordered(kept))
    }

    /// The bidi-mirrored pair of `scalar`, among those a marker may be made of; nil for
    /// any other. A switch, not a dictionary: it is asked at every scalar of a reversed
    /// run, and hashing a scalar cost a twelfth of reading a random-byte HTML part.
    @inline(__always)
    package static func mirror(of scalar: Unicode.Scalar) -> Unicode.Scalar? {
        switch scalar.value {
        case 0x5B: "]"
        case 0x5D: "["
        case 0x28: ")"
        case 0x29: "("
        case 0x7B: "}"
        case 0x7D: "{"
        case 0x3C: ">"
        case 0x3E: "<"
        case 0xAB: "\u{BB}"
        case 0xBB: "\u{AB}"
        case 0x2039: "\u{203A}"
        case 0x203A: "\u{2039}"
        default: nil
        }
    }
}
