/// Redaction of marked spans in HTML.
///
/// The document is split into tags, comments and text. Markers are looked
/// for in the *decoded* text of the whole document, so a marker broken up by
/// a tag (`[[pri<b>vate]]`) or written with entities still counts. Inside a
/// span no text and no attribute value survives: tags stay, bare (`<b>`,
/// `</p>`), so the document keeps its shape and stays well formed. Text outside
/// spans is kept byte for byte.
extension Redactor {
    /// True when `html` has a marker, written plainly, with entities, or
    /// broken up by tags.
    public func hasMarkersHTML(_ html: String) -> Bool {
        hasMarkersHTML(html, depth: 0)
    }

    /// How deep documents inside documents (``HTMLToken/documents(in:)``) are read.
    private static let documentDepth = 3

    private func hasMarkersHTML(_ html: String, depth: Int) -> Bool {
        if hasMarkers(html) { return true }
        var stream: [Unicode.Scalar] = []   // an array: appending to a String view copies it each time
        // The text a line shows: ruby annotations (`<rt>`, `<rp>`) are drawn above their base or
        // not at all (issue 21, a red team's html-ruby-rt-annotation: `[[pr<ruby>i<rt>zz</rt></ruby>vate]]`
        // shows the marker with a small `zz` above the `i`).
        var line: [Unicode.Scalar] = []
        var inTag = false, annotated = false, inAnnotation = false, shadowRoot = false
        // Documents of their own: `srcdoc` values and `data:` URL payloads (issue 21: tags inside an
        // iframe's srcdoc or a data: page or SVG image split markers the frame or image shows whole).
        var documents: [String] = []
        for token in HTMLToken.split(html) {
            switch token {
            case .text(_, let decoded):
                stream.append(contentsOf: decoded)
                if !inAnnotation { line.append(contentsOf: decoded) }
            case .tag(let raw):
                inTag = inTag || token.hasMarkers(self)
                let name = HTMLToken.tagName(raw), closing = raw.hasPrefix("</")
                if name == "rt" || name == "rp" {
                    annotated = true
                    inAnnotation = !closing
                } else if name == "rb" || name == "ruby" || name == "rtc" {
                    inAnnotation = false
                }
                // A declarative shadow root shows its host's text at its slots, in another order.
                if name == "template" && !closing && HTMLToken.mentions(raw, "shadowroot") { shadowRoot = true }
                if depth < Self.documentDepth && (HTMLToken.mentions(raw, "srcdoc") || HTMLToken.mentions(raw, "data:")) {
                    for (name, value) in HTMLToken.attributes(raw) {
                        if name == "srcdoc" { documents.append(value) }
                        documents += HTMLToken.documents(in: value)
                    }
                }
            default: break
            }
        }
        // The text as a browser joins it (a line end inside a tag or comment is no line end),
        // read through the overrides and escapes too: `<p>` RLO `[[eta<b\n></b>virp]]` shows a
        // reversed span that the source's lines, each ordered on its own, did not.
        // ``hasMarkers(_:)`` of its text, searched in the scalars themselves: no text made of them.
        let markers = [folded(Array(open.unicodeScalars)), folded(Array(close.unicodeScalars))]
        if inTag || containsAny(markers, in: stream) || hasMarkersInDecodings(scalars: stream, markup: true) { return true }
        if annotated && (containsAny(markers, in: line) || hasNearMarker(scalars: line)) { return true }
        // Slots may put the text in any order: the pieces of a marker anywhere count as one (the
        // rebuild refuses a part with a shadow root).
        if shadowRoot && Self.holdsPieces(of: markers, stream) { return true }
        if depth < Self.documentDepth && HTMLToken.mentions(String(scalars: stream), "data:") {
            // A style sheet's `url(data:…)`.
            documents += Self.dataURLPayloads(stream)
        }
        // Each once: a payload read as UTF-8, as Latin-1 and as the whole value is mostly one text,
        // and read three times at each depth it would cost 27 times its size three deep.
        return Set(documents).contains { hasMarkersHTML($0, depth: depth + 1) }
    }

    /// True when `scalars` hold every scalar of some marker (folded) as often as it does.
    package static func holdsPieces(of markers: [[Unicode.Scalar]], _ scalars: [Unicode.Scalar]) -> Bool {
        let wanted = Set(markers.joined())
        var counts: [Unicode.Scalar: Int] = [:]
        for scalar in scalars {
            let folded = fold(scalar)
            if wanted.contains(folded) { counts[folded, default: 0] += 1 }
        }
        return markers.contains { marker in
            Dictionary(marker.map { ($0, 1) }, uniquingKeysWith: +).allSatisfy { counts[$0.key, default: 0] >= $0.value }
        }
    }

    /// Applies `mode` to the marked spans of an HTML document. Throws when
    /// markers do not pair up.
    public func redactHTML(_ html: String, mode: Mode, part: String = "html") throws(PolicyError) -> String {
        let tokens = HTMLToken.split(html)
        // The decoded text stream, and for each text token where its scalars start.
        var stream: [Unicode.Scalar] = []
        var starts: [Int] = []
        for token in tokens {
            starts.append(stream.count)
            if case .text(_, let decoded) = token { stream += decoded }
        }
        let found = try spans(stream, part: part)
        // Markers inside tags and comments must pair up within them.
        for token in tokens {
            switch token {
            case .tag(let raw), .comment(let raw): try validate(raw, part: part)
            default: break
            }
        }
        guard !found.isEmpty || tokens.contains(where: { $0.hasMarkers(self) }) else { return html }

        var placeholderAt: [Int: String] = [:]   // censor: emit this placeholder before this position
        var keep = [Bool](repeating: true, count: stream.count)
        for span in found {
            for index in span.openStart..<span.openEnd { keep[index] = false }
            for index in span.closeStart..<span.closeEnd { keep[index] = false }
            if mode.removesSpan {
                for index in span.openEnd..<span.closeStart { keep[index] = false }
                let content = String(scalars: stream[span.openEnd..<span.closeStart])
                placeholderAt[span.openStart] = mode.replacement(for: content, placeholder: placeholder)
            }
        }
        /// A tag at stream position `p` lies in a span when span scalars stand
        /// on both sides. The spans are in order and apart: the last one that
        /// opens before `p` is the only one that may (a binary search, not a
        /// look at every span for every tag, which was quadratic).
        func tagInSpan(_ p: Int) -> Bool {
            var low = 0, high = found.count
            while low < high {
                let middle = (low + high) / 2
                if found[middle].openStart < p { low = middle + 1 } else { high = middle }
            }
            return low > 0 && p < found[low - 1].closeEnd
        }

        var out = ""
        for (index, token) in tokens.enumerated() {
            let start = starts[index]
            switch token {
            case .text(let raw, let decoded):
                let range = start..<(start + decoded.count)
                if range.allSatisfy({ keep[$0] && placeholderAt[$0] == nil }) {
                    out += raw
                    continue
                }
                for position in range {
                    if let text = placeholderAt[position] { out += escape(text.unicodeScalars) }
                    if keep[position] { out += escape(CollectionOfOne(stream[position])) }
                }
            case .tag(let raw):
                // Attribute values count as a browser reads them, references decoded.
                if mode.removesSpan && (tagInSpan(start) || token.hasMarkers(self)) {
                    out += HTMLToken.bare(raw)
                } else {
                    out += try redact(raw, mode: .reveal, part: part)
                }
            case .comment(let raw):
                if mode.removesSpan && (tagInSpan(start) || hasMarkers(raw)) { continue }
                out += try redact(raw, mode: .reveal, part: part)
            case .other(let raw):
                if !mode.removesSpan || !tagInSpan(start) { out += raw }
            }
        }
        return out
    }

    private func escape<S: Sequence<Unicode.Scalar>>(_ scalars: S) -> String {
        var out = ""
        for scalar in scalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// A piece of an HTML document.
enum HTMLToken {
    /// Character data: as written, and decoded (entities resolved).
    case text(raw: String, decoded: [Unicode.Scalar])
    /// A start or end tag, as written.
    case tag(String)
    /// `<!-- … -->`
    case comment(String)
    /// `<!DOCTYPE …>`, `<?…>`, CDATA.
    case other(String)

    /// True when the token shows a marker as written, or (a tag) in its
    /// attribute values as a browser reads them, once or (a document in an
    /// attribute) twice.
    func hasMarkers(_ redactor: Redactor) -> Bool {
        switch self {
        case .tag(let raw):
            // Decoded twice: an attribute may hold a document (iframe srcdoc) with references of its own.
            redactor.hasMarkers(raw) || raw.contains("&") && [1, 2].contains { times in
                var decoded = raw
                for _ in 0..<times { decoded = String(scalars: decodeEntities(decoded)) }
                return redactor.hasMarkers(decoded)
            }
        case .text(let raw, _), .comment(let raw), .other(let raw): redactor.hasMarkers(raw)
        }
    }

    /// Splits `html` into tokens. Script and style content is text.
    static func split(_ html: String) -> [HTMLToken] {
        let s = scalarArray(html)
        var tokens: [HTMLToken] = []
        var index = 0
        var textStart = 0
        var rawTextEnd: String?   // inside <script> or <style>: the end tag we wait for
        func flushText(_ end: Int) {
            guard end > textStart else { return }
            // Decoded from the scalars at hand, not from the text made of them.
            let run = Array(s[textStart..<end])
            tokens.append(.text(raw: String(scalars: run), decoded: rawTextEnd == nil ? decodeEntities(run) : run))
        }
        func starts(_ prefix: String, at i: Int) -> Bool {
            var at = i
            for scalar in prefix.unicodeScalars {
                guard at < s.count, lowercasedScalar(s[at]) == scalar else { return false }
                at += 1
            }
            return true
        }
        // A tag's search for its `>` that found none is not made again from
        // further on: text with many `a<b` and an unbalanced quote would be
        // searched to its end from each `<` (quadratic). `dead` marks the
        // positions, with the quote then open (bit 1: none, 2: `"`, 4: `'`),
        // from which a search went on to the end. Every search starts past
        // the one before, so a mark left by a search that did find its `>` is
        // never reached again.
        var dead: [UInt8] = []
        while index < s.count {
            guard s[index] == "<" else { index += 1; continue }
            if let end = rawTextEnd, !starts(end, at: index) { index += 1; continue }
            var tokenEnd: Int?
            var make: ((String) -> HTMLToken)?
            if starts("<!--", at: index) {
                // As a browser ends a comment: `<!-->` and `<!--->` are whole (empty) comments,
                // and `--!>` ends one as `-->` does; the text after them shows.
                var j = index + 4
                if starts(">", at: j) {
                    tokenEnd = j + 1
                } else if starts("->", at: j) {
                    tokenEnd = j + 2
                } else {
                    while j < s.count && !starts("-->", at: j) && !starts("--!>", at: j) { j += 1 }
                    tokenEnd = min(j + (starts("--!>", at: j) ? 4 : 3), s.count)
                }
                make = { .comment($0) }
            } else if index + 1 < s.count, s[index + 1] == "!" || s[index + 1] == "?" {
                var j = index + 2
                while j < s.count && s[j] != ">" { j += 1 }
                tokenEnd = min(j + 1, s.count)
                make = { .other($0) }
            } else if index + 1 < s.count, s[index + 1].properties.isAlphabetic || s[index + 1] == "/" {
                if dead.isEmpty { dead = [UInt8](repeating: 0, count: s.count) }
                var j = index + 1
                var quote: Unicode.Scalar?
                while j < s.count {
                    let state: UInt8 = quote == nil ? 1 : quote == "\"" ? 2 : 4
                    if dead[j] & state != 0 { j = s.count; break }
                    dead[j] |= state
                    let c = s[j]
                    if let q = quote { if c == q { quote = nil } } else if c == "\"" || c == "'" { quote = c } else if c == ">" { break }
                    j += 1
                }
                if j < s.count {
                    tokenEnd = j + 1
                    make = { .tag($0) }
                }
            }
            guard let end = tokenEnd, let make else { index += 1; continue }
            flushText(index)
            let raw = String(scalars: s[index..<end])
            tokens.append(make(raw))
            if case .tag = tokens.last! {
                let name = tagName(raw)
                if rawTextEnd != nil { rawTextEnd = nil }
                else if !raw.hasPrefix("</") && Self.rawTextElements.contains(name) && !raw.hasSuffix("/>") { rawTextEnd = "</" + name }
            }
            index = end
            textStart = end
        }
        flushText(s.count)
        return tokens
    }

    /// Elements whose content a browser reads as text up to their end tag, not as tags and
    /// comments (`<title><!--</title>` leaves no comment open): raw text and escapable raw text.
    static let rawTextElements: Set<String> = ["script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "plaintext"]

    /// True when `raw` holds `word` (ASCII, lower case) in any case.
    static func mentions(_ raw: String, _ word: String) -> Bool {
        let needle = Array(word.utf8), bytes = Array(raw.utf8)
        guard bytes.count >= needle.count else { return false }
        return (0...(bytes.count - needle.count)).contains { start in
            bytes[start] | 0x20 == needle[0] && needle.indices.allSatisfy { bytes[start + $0] | (needle[$0] >= 0x61 ? 0x20 : 0) == needle[$0] }
        }
    }

    /// The attributes of the tag `raw` as a browser's tokenizer reads them: names lower-cased,
    /// values quoted or not, references decoded once.
    static func attributes(_ raw: String) -> [(name: String, value: String)] {
        let s = Array(raw.unicodeScalars)
        func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" || scalar == "\u{C}" }
        var index = 1
        while index < s.count && !isSpace(s[index]) && s[index] != ">" && s[index] != "/" { index += 1 }
        var out: [(name: String, value: String)] = []
        while index < s.count {
            while index < s.count && (isSpace(s[index]) || s[index] == "/") { index += 1 }
            guard index < s.count, s[index] != ">" else { break }
            let nameStart = index
            index += 1   // a name may start with `=`
            while index < s.count && !isSpace(s[index]) && s[index] != "/" && s[index] != ">" && s[index] != "=" { index += 1 }
            let name = String(scalars: s[nameStart..<index].map(lowercasedScalar))
            while index < s.count && isSpace(s[index]) { index += 1 }
            var value: ArraySlice<Unicode.Scalar> = []
            if index < s.count && s[index] == "=" {
                index += 1
                while index < s.count && isSpace(s[index]) { index += 1 }
                if index < s.count && (s[index] == "\"" || s[index] == "'") {
                    let quote = s[index]
                    let start = index + 1
                    index = start
                    while index < s.count && s[index] != quote { index += 1 }
                    value = s[start..<min(index, s.count)]
                    index += 1
                } else {
                    let start = index
                    while index < s.count && !isSpace(s[index]) && s[index] != ">" { index += 1 }
                    value = s[start..<index]
                }
            }
            out.append((name, String(scalars: decodeEntities(Array(value)))))
        }
        return out
    }

    /// The documents a `data:` URL in the attribute value `value` holds (a page, an SVG image, any
    /// payload: read as HTML, which reads more than a plain text shows, never less): the whole value
    /// as one URL (a raw `<` may stand in an attribute), and each one inside it (`url(data:…)`, a
    /// refresh's `0;url=data:…`) as ``Redactor/dataURLPayloads(_:)-(String)`` finds them.
    static func documents(in value: String) -> [String] {
        guard mentions(value, "data:") else { return [] }
        var out = Redactor.dataURLPayloads(value)
        let trimmed = value.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        if trimmed.lowercased().hasPrefix("data:"), let comma = trimmed.firstIndex(of: ",") {
            var bytes = Redactor.percentDecodedBytes(Array(trimmed[trimmed.index(after: comma)...].utf8))
            if trimmed[..<comma].lowercased().contains("base64") { bytes = Redactor.base64Decoded(bytes) }
            out.append(String(decoding: bytes, as: UTF8.self))
        }
        return out
    }

    /// The lower-cased element name of a tag.
    static func tagName(_ raw: String) -> String {
        var name = ""
        for scalar in raw.unicodeScalars.dropFirst(raw.hasPrefix("</") ? 2 : 1) {
            if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == ":" {
                name.unicodeScalars.append(scalar)
            } else { break }
        }
        return name.lowercased()
    }

    /// The tag without attributes: `<a href="x">` becomes `<a>`.
    static func bare(_ raw: String) -> String {
        let name = tagName(raw)
        if raw.hasPrefix("</") { return "</\(name)>" }
        return raw.hasSuffix("/>") ? "<\(name)/>" : "<\(name)>"
    }
}

extension Redactor {
    /// The readable text of an HTML document cut at its marked spans, for a
    /// reading page: character data with entities resolved, a line break for
    /// `<br>` and each block end, script, style and head content left out; each
    /// span becomes its number in `catalog`. The spans are found exactly as
    /// `redactHTML` finds them (the same decoded stream), so a span's number and
    /// extent are the same here as in the postcard, and no text the postcard
    /// hides can stand here as literal text.
    public func segments(html: String, catalog: SpanCatalog, part: String = "html") throws(PolicyError) -> [TextSegment] {
        let blocks: Set<String> = ["p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "ul", "ol"]
        var stream: [Unicode.Scalar] = []
        var hidden: [Bool] = []          // per stream scalar: inside script, style or head
        var breaks: [Int: Int] = [:]     // line breaks to put before a stream position
        var skipping: String?
        for token in HTMLToken.split(html) {
            switch token {
            case .text(_, let decoded):
                stream += decoded
                hidden += Array(repeating: skipping != nil, count: decoded.count)
            case .tag(let raw):
                let name = HTMLToken.tagName(raw)
                if let skipped = skipping {
                    if raw.hasPrefix("</") && name == skipped { skipping = nil }
                } else if !raw.hasPrefix("</") && ["script", "style", "head"].contains(name) && !raw.hasSuffix("/>") {
                    skipping = name
                } else if name == "br" || (raw.hasPrefix("</") && blocks.contains(name)) {
                    breaks[stream.count, default: 0] += 1
                }
            case .comment, .other:
                continue
            }
        }
        return Self.segments(stream, spans: try spans(stream, part: part), breaks: breaks, hidden: hidden, catalog: catalog)
    }

    /// `stream` cut at `spans` (found in it): the literal pieces, with `breaks[p]`
    /// line feeds put before position p and the scalars `hidden` marks left out,
    /// and for each span its number in `catalog`. The one way a reading page's
    /// text is cut, whoever read the HTML.
    package static func segments(_ stream: [Unicode.Scalar], spans found: [Span], breaks: [Int: Int], hidden: [Bool]? = nil,
                                 catalog: SpanCatalog) -> [TextSegment] {
        var out: [TextSegment] = []
        var literal: [Unicode.Scalar] = []
        func flush() {
            if !literal.isEmpty { out.append(.text(String(scalars: literal))) }
            literal = []
        }
        var position = 0
        var next = 0
        while position <= stream.count {
            if next < found.count && found[next].openStart == position {
                flush()
                let span = found[next]
                out.append(.span(catalog.number(for: String(scalars: stream[span.openEnd..<span.closeStart]))))
                position = span.closeEnd
                next += 1
                continue
            }
            for _ in 0..<(breaks[position] ?? 0) { literal.append("\n") }
            if position < stream.count && hidden?[position] != true { literal.append(stream[position]) }
            position += 1
        }
        flush()
        return out
    }
}
