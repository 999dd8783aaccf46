import HTML
import MIME
import Policy

/// HTML with marked spans, rebuilt for a postcard: parsed as a browser parses
/// it (Gumbo, ``HTMLDocument``), then written again from the parsed tree
/// through an allow-list of elements and attributes, with the spans censored
/// in the text a reader sees.
///
/// The spans are searched for in the kept text of the whole document, in
/// document order, with the ``Redactor``'s own search (markers folded,
/// invisible scalars passed over), so a marker broken up by tags
/// (`[[priv<b></b>ate]]`) or written with references still counts. Inside a
/// span no text and no attribute value survives: elements that start inside
/// it are written bare. Attribute values that stay are censored on their own.
///
/// The output has one reading: a fixed head, no comments, no raw-text
/// elements, every end tag written, and every character other than printable
/// ASCII, tab and line feed written as a numeric character reference; parsed
/// again, its text is exactly the text written.
package enum HTMLRebuild {
    /// `html` rebuilt: spans treated as `mode` says (`.censor`: the
    /// placeholder; `.number`: the span's place `[#n]`; `.reveal`: markers
    /// dropped, text kept), and what the allow-list dropped, as short fixed
    /// phrases (`element script`, `attribute style`, `url data:`, `hidden
    /// content`), sorted and without repeats; they never quote the mail.
    ///
    /// Throws ``PolicyError`` (``PolicyError/Code/unbalancedMarkers``, naming
    /// `part`) when markers do not pair up: in the text shown, in an
    /// attribute value, or within any content dropped (a marker there, say in
    /// CSS `content:`, could be shown by a reader although we never show it).
    /// Throws ``HTMLError`` if the parser returns nothing.
    package static func rebuild(_ html: String, redactor: Redactor, mode: Redactor.Mode,
                                part: String) throws -> (html: String, dropped: [String]) {
        let rebuilt = try rebuilt(html, redactor: redactor, mode: mode, part: part)
        return (rebuilt.html, rebuilt.dropped)
    }

    /// What ``rebuild(_:redactor:mode:part:)`` wrote, with the text and attributes it wrote, so that a
    /// test can hold them against a parser's reading of the HTML.
    package struct Rebuilt: Sendable {
        /// The document.
        package let html: String
        /// What the allow-list dropped (see ``HTMLRebuild/rebuild(_:redactor:mode:part:)``).
        package let dropped: [String]
        /// The text written, in document order, as a parser reads it back.
        package let text: String
        /// The attributes written, in document order.
        package let attributes: [HTMLDocument.Attribute]
        /// Every text of the original document, dropped or hidden ones too, a line break for
        /// `<br>`, `<hr>` and after each block: where an armored OpenPGP block is looked for.
        package var lines = ""
        /// The parts referred to (`cid:` URLs, ``HTMLRebuild/contentID(_:)``) by elements inside a
        /// span that was taken out: what the sender marked, shown by a reader as an attachment
        /// when it is sent on.
        package var referredInSpans: Set<String> = []
    }

    /// A `cid:` URL or a Content-ID field's value as one key: the address without `cid:` or angle
    /// brackets, percent-decoded (RFC 2392), in lower case; nil for a URL of another scheme.
    package static func contentID(_ value: String, url: Bool) -> String? {
        var text = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if url {
            guard text.lowercased().hasPrefix("cid:") else { return nil }
            text = String(decoding: PercentEncoding.decoded(Array(text.dropFirst(4).utf8)), as: UTF8.self)
        } else if text.hasPrefix("<") && text.hasSuffix(">") && text.count >= 2 {
            text = String(text.dropFirst().dropLast())
        }
        return text.isEmpty ? nil : text.lowercased()
    }

    /// ``rebuild(_:redactor:mode:part:)`` with what it wrote.
    package static func rebuilt(_ html: String, redactor: Redactor, mode: Redactor.Mode, part: String) throws -> Rebuilt {
        let model = try Model(HTMLDocument(parsing: html), redactor: redactor, mode: mode, part: part)
        let spans = try redactor.spans(model.stream, part: part)
        try model.refuseJoinable(spans: spans, redactor: redactor, part: part)
        try model.refuseOtherOrders(spans: spans, part: part)
        try model.refuseRightToLeft(spans: spans, redactor: redactor, part: part)
        try model.refuseAnnotated(redactor: redactor, part: part)
        try model.refuseShadowRoot(spans: spans, redactor: redactor, part: part)
        var rebuilt = model.write(spans: spans, redactor: redactor, mode: mode)
        rebuilt.lines = String(scalars: model.lines)
        return rebuilt
    }

    /// True when a browser opening `html` may show a marker, as the rebuild reads a part:
    /// its model (Gumbo's tree, hidden content out) holds one or markers that do not pair
    /// up, text shown in place of an element or a styled part's material (CSS `content:`
    /// strings, `attr()`) may join one (``refuseJoinable``), or the document cannot be read.
    /// For a file opened as a page, which is passed or withheld, never rebuilt. An XML
    /// page (`xml`: SVG, XSLT, XML) the model cannot read (nested too deep: its `<row/>`
    /// close themselves in XML, not in HTML) is left to the text readings, which ran first
    /// (a hostile review: SVG maps and XML exports of 1,100 elements counted as marked).
    package static func pageShowsMarker(_ html: String, redactor: Redactor, xml: Bool = false) -> Bool {
        guard let model = try? Model(HTMLDocument(parsing: html), redactor: redactor, mode: .censor, part: "page") else { return !xml }
        guard let spans = try? redactor.spans(model.stream, part: "page") else { return true }
        if !spans.isEmpty { return true }
        do {
            try model.refuseJoinable(spans: spans, redactor: redactor, part: "page")
            try model.refuseAnnotated(redactor: redactor, part: "page")
            try model.refuseShadowRoot(spans: spans, redactor: redactor, part: "page")
        } catch { return true }
        return false
    }

    /// The text of `html` as the rebuilt postcard shows it, cut at its spans,
    /// for the reading page of a partially encrypted postcard: the same kept
    /// text and the same spans as ``rebuild(_:redactor:mode:part:)`` with
    /// `.number(catalog)`, so a span has the same number and extent in both;
    /// a line break for `<br>` and after each block.
    package static func segments(_ html: String, redactor: Redactor, catalog: SpanCatalog,
                                 part: String) throws -> [TextSegment] {
        let model = try Model(HTMLDocument(parsing: html), redactor: redactor, mode: .number(catalog), part: part)
        let spans = try redactor.spans(model.stream, part: part)
        try model.refuseJoinable(spans: spans, redactor: redactor, part: part)
        try model.refuseOtherOrders(spans: spans, part: part)
        try model.refuseRightToLeft(spans: spans, redactor: redactor, part: part)
        try model.refuseAnnotated(redactor: redactor, part: part)
        try model.refuseShadowRoot(spans: spans, redactor: redactor, part: part)
        var breaks: [Int: Int] = [:]   // line breaks to put before a stream position
        for event in model.events {
            switch event {
            case .open("br", _, let position), .open("hr", _, let position): breaks[position, default: 0] += 1
            case .close(let name, let position) where blocks.contains(name): breaks[position, default: 0] += 1
            default: break
            }
        }
        return Redactor.segments(model.stream, spans: spans, breaks: breaks, catalog: catalog)
    }

    /// Elements after which the reading page breaks the line.
    static let blocks: Set<String> = ["p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "ul", "ol", "dt", "dd", "hr", "address", "caption"]

    // MARK: The allow-list

    /// Elements written again (their allowed attributes with them).
    static let keptElements: Set<String> = [
        "p", "br", "div", "span", "b", "i", "u", "s", "strike", "em", "strong", "small", "big", "sub", "sup",
        "a", "ul", "ol", "li", "dl", "dt", "dd", "table", "caption", "thead", "tbody", "tfoot", "tr", "td", "th",
        "blockquote", "pre", "code", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "img", "q", "cite", "abbr", "mark",
        "del", "ins", "kbd", "samp", "var", "tt", "address",
    ]

    /// Elements that have no end tag.
    static let voidElements: Set<String> = ["br", "hr", "img"]

    /// Elements dropped with all they hold: what they hold is not shown as
    /// text (head, scripts, styles, embedded documents, media fallbacks), is
    /// held by a form control, or is read another way than as HTML text.
    static let droppedElements: Set<String> = [
        "title", "meta", "link", "base", "style", "script", "noscript", "template", "iframe", "frame",
        "frameset", "noframes", "object", "embed", "applet", "param", "textarea", "select", "option", "optgroup",
        "datalist", "input", "keygen", "canvas", "video", "audio", "source", "track", "map", "area", "noembed", "rp",
        "dialog", "svg", "math",
    ]

    /// Elements whose text a browser shows as written (raw text): written as `pre`.
    static let literalElements: Set<String> = ["xmp", "plaintext", "listing"]

    /// Attributes kept on any kept element.
    static let globalAttributes: Set<String> = ["title", "dir", "lang"]

    /// Attributes kept on particular elements.
    static let elementAttributes: [String: Set<String>] = [
        "a": ["href"], "img": ["src", "alt"], "td": ["colspan", "rowspan"], "th": ["colspan", "rowspan"], "ol": ["start"],
    ]

    /// Attributes holding a URL: kept only with one of ``allowedSchemes``, or a fragment.
    static let urlAttributes: Set<String> = ["href", "src"]

    /// URL schemes kept.
    static let allowedSchemes: Set<String> = ["http", "https", "mailto", "cid"]

    /// Attribute names that are named in the dropped list; any other is `attribute (other)`, so a name the sender made up
    /// (which may be text of the mail) never reaches the plan.
    static let namedAttributes: Set<String> = [
        "style", "class", "id", "name", "srcdoc", "src", "href", "width", "height", "align", "valign", "bgcolor", "color",
        "face", "size", "border", "cellpadding", "cellspacing", "background", "target", "rel", "type", "value", "hidden",
        "alt", "title", "dir", "lang", "colspan", "rowspan", "start", "action", "formaction", "xmlns", "role", "tabindex",
        "nowrap", "span", "summary", "valign", "face", "lang", "content", "charset", "http-equiv", "usemap", "srcset",
        "poster", "data", "codebase", "archive", "form", "placeholder", "label", "open", "contenteditable",
    ]

    /// What the dropped list says for an attribute.
    static func describe(attribute name: String) -> String {
        if name.hasPrefix("on") { return "attribute on*" }
        if name.hasPrefix("data-") { return "attribute data-*" }
        if name.hasPrefix("aria-") { return "attribute aria-*" }
        return namedAttributes.contains(name) ? "attribute " + name : "attribute (other)"
    }

    /// What the dropped list says for a URL whose scheme is `scheme` (lower-cased).
    static func describe(scheme: String) -> String {
        ["data", "javascript", "vbscript", "file", "ftp", "about", "blob"].contains(scheme) ? "url \(scheme):" : "url (other)"
    }

    /// True when inline CSS hides the element and all it holds whatever its
    /// children say (`display: none`, `opacity: 0`). Only these: `visibility`
    /// can be undone by a child, `font-size: 0` often is, and hiding content
    /// we cannot be sure is hidden would lose text.
    static func hidesContent(style: String) -> Bool {
        var compact: [UInt8] = []
        for byte in style.utf8 where !(byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D) {
            compact.append(byte >= 0x41 && byte <= 0x5A ? byte + 32 : byte)
        }
        // Declarations as `property:value`, `!important` aside; the last one of a property wins in CSS,
        // but any that hides is enough here.
        for declaration in String(decoding: compact, as: UTF8.self).split(separator: ";") {
            let pair = declaration.split(separator: ":", maxSplits: 1)
            guard pair.count == 2 else { continue }
            var value = pair[1].split(separator: "!").first.map(String.init) ?? ""
            if value.hasSuffix("%") { value.removeLast() }
            switch pair[0] {
            case "display" where value == "none": return true
            case "opacity": if let number = Double(value), number <= 0 { return true }
            default: continue
            }
        }
        return false
    }

    /// The scheme of a URL as a browser's URL parser finds it (leading and
    /// trailing controls and spaces trimmed, tabs and line feeds removed), lower-cased;
    /// nil for a URL without one (relative).
    static func scheme(of url: String) -> String? {
        var scalars = Array(url.unicodeScalars.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" })
        while let first = scalars.first, first.value <= 0x20 { scalars.removeFirst() }
        guard let first = scalars.first, first.isASCII, first.properties.isAlphabetic else { return nil }
        var scheme = ""
        for scalar in scalars {
            if scalar == ":" { return scheme.lowercased() }
            guard scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "+-.".unicodeScalars.contains(scalar)
            else { return nil }
            scheme.unicodeScalars.append(scalar)
        }
        return nil
    }

    /// Characters no reader should be given: C0 controls but tab and line
    /// feed (NUL, CR, escape …), DEL and the C1 controls. Taken out before the
    /// spans are searched, as a reader shows them as nothing.
    @inline(__always)
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return (value < 0x20 && value != 0x09 && value != 0x0A) || (value >= 0x7F && value <= 0x9F)
    }

    static func withoutControls(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        return String(scalars: text.unicodeScalars.filter { !isControl($0) })
    }

    // MARK: The model

    /// The kept document: text (one stream of scalars) and the elements around it.
    struct Model {
        enum Event {
            /// A kept element starts where the stream is at `position`.
            case open(name: String, attributes: [(name: String, value: String)], position: Int)
            /// A kept element ends where the stream is at `position`.
            case close(name: String, position: Int)
            /// Kept text: `stream[range]`.
            case text(Range<Int>)
        }

        var stream: [Unicode.Scalar] = []
        var events: [Event] = []
        /// Every text of the document, dropped or hidden too (not style sheets), with a line
        /// break for `<br>`, `<hr>` and after each block: the lines a reader shows or a user copies
        /// out, where an armored OpenPGP block is looked for (``HTMLRebuild/Rebuilt/lines``).
        var lines: [Unicode.Scalar] = []
        var dropped: Set<String> = []
        /// True when the part brings CSS (``HTMLRebuild/styles(_:)``, a non-empty style sheet).
        var styled = false
        /// What a styled part may show, counted (``HTMLRebuild/MarkerMaterial``).
        var material: MarkerMaterial
        /// Text shown in place of an element (``HTMLRebuild/shownInPlace(_:)``) and where in ``stream`` the element stands.
        var inPlace: [(position: Int, text: [Unicode.Scalar])] = []
        /// True when the parser moved text out of the place it was written (``HTMLDocument/movedByParser``).
        var moved = false
        /// Where each run of kept text starts in ``stream``, and the elements around it that may
        /// hide or reorder it (``ShownContext``), as an interned number: equal numbers, equal contexts.
        /// With each run, `tags`: the context with every element counted by its name too (what a
        /// style sheet's type selectors reach), and `element`: the innermost element's own number.
        var contexts: [(start: Int, context: Int, tags: Int, element: Int)] = []
        /// True when the part brings a style sheet that may hide or move text (``ShownContext/mayHideOrMove(_:)``,
        /// or a `<link>`, unread): its type selectors reach elements without attributes
        /// (`b { display: none }`), so every element's name counts in a context (``contexts``' `tags`).
        var hasStyleSheet = false
        /// True when a style sheet may pick elements by their place (`:nth-of-type`, `:first-child`,
        /// `+`, `~`, `:not(` …) or is not in the part (`<link>`, `@import`): elements alike by name
        /// and attributes may then be shown differently, so a span's markers must stand in the
        /// very same element (``contexts``' `element`).
        var placeSelectors = false
        /// True when the part sets a direction: `dir=rtl` or `dir=auto`, `<bdo>`, `<bdi>`, or CSS
        /// `direction` or `unicode-bidi` (in a style attribute or sheet). See ``refuseRightToLeft``.
        var directed = false
        /// True when the part has a `<bdo>`, which shows its text in the order it sets, reversed for `rtl`.
        var overrides = false
        /// True when the part holds a declarative shadow root (`<template shadowrootmode>`).
        var shadowRoot = false
        /// The runs of ``stream`` inside ruby annotations (`<rt>`, `<rp>`), which a browser draws above
        /// their base or not at all: see ``refuseAnnotated(redactor:part:)``.
        var annotations: [Range<Int>] = []

        /// Refuses the part (``PolicyError/MarkerProblem/rightToLeft``) where a reader may show other
        /// text between its markers than the model reads there (issue 21, a hostile review's F3 and F1b):
        /// - it sets a direction (``directed``) and a closing marker is followed by an opening one with
        ///   right-to-left text between them (``RightToLeft/firstReordered(_:markers:allRightToLeft:)``):
        ///   `<p dir=rtl>א [[private]] ב [[/private]] ג secret ד [[private]] …` shows the secret between
        ///   two markers to one who reads from the left. Coarse on purpose: the whole part's text is
        ///   taken as one right-to-left paragraph (no bidirectional algorithm here);
        /// - or it has a `<bdo>` and spans, or its text reversed, brackets mirrored, shows a marker:
        ///   `<bdo dir=rtl>` LF `[[etavirp/]]TERCES[[etavirp]]` shows a marked secret, which the
        ///   postcard, written in the model's order, showed reversed.
        func refuseRightToLeft(spans: [Redactor.Span], redactor: Redactor, part: String) throws(PolicyError) {
            let refused = PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .rightToLeft))
            if overrides {
                if !spans.isEmpty { throw refused }
                var reversed: [Unicode.Scalar] = []
                reversed.reserveCapacity(stream.count)
                // Shown right to left, each mirrored scalar as its pair (the decodings' table: `«` too).
                for scalar in stream.reversed() { reversed.append(Redactor.mirror(of: scalar) ?? scalar) }
                if redactor.hasMarkers(String(scalars: reversed)) { throw refused }
            }
            if directed && RightToLeft.firstReordered(stream, markers: RightToLeft.markers(spans), allRightToLeft: true) != nil { throw refused }
        }

        /// Refuses the part (``PolicyError/MarkerProblem/otherOrder``) when a reader may show its
        /// spans over other text than the model's order holds:
        /// - the parser moved text out of the place it was written (foster parenting out of a
        ///   table: `<table>[[private]]<tr><td>secret</td></tr>[[/private]]</table>` shows both
        ///   markers before the table, the secret in its cell), so the order the sender wrote and
        ///   the order shown differ;
        /// - or a span's two markers stand in different contexts that may hide or reorder text
        ///   (``ShownContext``): a marker in a closed `<details>`, a `<meter>`'s fallback, a
        ///   `<tfoot>` written first, a `dir` or styled element, and the like, which a browser
        ///   shows elsewhere or not at all, so that its span and the model's differ.
        /// Refuses the part (``PolicyError/MarkerProblem/otherOrder``) when its line without ruby
        /// annotations (``annotations``: drawn above their base, or not at all) shows other markers than
        /// the model reads with them in line (issue 21, a red team's html-ruby-rt-annotation:
        /// `[[pr<ruby>i<rt>zz</rt></ruby>vate]]` shows the marker, a small `zz` above the `i`).
        func refuseAnnotated(redactor: Redactor, part: String) throws(PolicyError) {
            guard !annotations.isEmpty else { return }
            var line: [Unicode.Scalar] = [], from = 0
            line.reserveCapacity(stream.count)
            for run in annotations where run.lowerBound >= from {
                line += stream[from..<run.lowerBound]
                from = run.upperBound
            }
            line += stream[from...]
            if redactor.markerRanges(line).count != redactor.markerRanges(stream).count || redactor.hasNearMarker(scalars: line) {
                throw PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .otherOrder))
            }
        }

        /// Refuses the part (``PolicyError/MarkerProblem/otherOrder``) when it holds a declarative
        /// shadow root (``shadowRoot``) and spans or the pieces of a marker anywhere in its text (issue 21,
        /// a red team's html-shadow-slot-*): a browser shows the host's text at the root's slots, in the
        /// root's order, between what the root holds, so `[[private]]<slot>` … `[[/private]]` in the root
        /// marks the host's text, and the rebuild, which drops templates, kept it unmarked.
        func refuseShadowRoot(spans: [Redactor.Span], redactor: Redactor, part: String) throws(PolicyError) {
            guard shadowRoot else { return }
            let markers = [redactor.open, redactor.close].map { folded(Array($0.unicodeScalars)) }
            if !spans.isEmpty || Redactor.holdsPieces(of: markers, lines) {
                throw PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .otherOrder))
            }
        }

        func refuseOtherOrders(spans: [Redactor.Span], part: String) throws(PolicyError) {
            guard !spans.isEmpty else { return }
            let refused = PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .otherOrder))
            if moved { throw refused }
            // A bidirectional control anywhere in the part's text: in HTML a line end is a space, so the
            // paragraph it reorders runs on to the block's end, wherever the markers stand (a hostile review).
            if stream.contains(where: { Redactor.isBidiControl($0.value) }) {
                throw PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .bidiControls))
            }
            func context(at position: Int) -> Int {
                // The last run of text that starts at or before `position`.
                var low = 0, high = contexts.count
                while low < high {
                    let middle = (low + high) / 2
                    if contexts[middle].start <= position { low = middle + 1 } else { high = middle }
                }
                guard low > 0 else { return -1 }
                let run = contexts[low - 1]
                return placeSelectors ? run.element : hasStyleSheet ? run.tags : run.context
            }
            for span in spans where context(at: span.openStart) != context(at: span.closeStart) { throw refused }
        }

        /// Refuses the part when a reader may show a marker that the model, with `spans`, does not hold
        /// (``HTMLRebuild/refuseJoinable(stream:inPlace:styled:material:spans:redactor:part:)``).
        ///
        /// The text the model shows is counted here, each run of it without the scalars of the spans'
        /// own markers: what is left of the material may still compose a marker the model does not
        /// hold, whether or not the part has spans. A marker written across elements (`[[<b>private</b>]]`)
        /// leaves no pieces behind, nor do its brackets pass for a bracketed word (`[private]`).
        func refuseJoinable(spans: [Redactor.Span], redactor: Redactor, part: String) throws(PolicyError) {
            var material = material
            var markers: [Range<Int>] = []
            for span in spans { markers += [span.openStart..<span.openEnd, span.closeStart..<span.closeEnd] }
            var next = 0   // the first marker that ends after the current run's start
            var piece: [Unicode.Scalar] = []
            // Only a styled part's material is looked at.
            for event in events where styled {
                guard case .text(let run) = event else { continue }
                piece.removeAll(keepingCapacity: true)
                var at = run.lowerBound
                while at < run.upperBound {
                    while next < markers.count && markers[next].upperBound <= at { next += 1 }
                    if next < markers.count && markers[next].lowerBound <= at {
                        at = markers[next].upperBound
                        continue
                    }
                    let stop = next < markers.count ? min(run.upperBound, markers[next].lowerBound) : run.upperBound
                    piece += stream[at..<stop]
                    at = stop
                }
                material.count(piece: String(scalars: piece), redactor: redactor)
            }
            try HTMLRebuild.refuseJoinable(stream: stream, inPlace: inPlace, styled: styled, material: material, spans: spans,
                                           redactor: redactor, part: part)
        }

        init(_ document: HTMLDocument, redactor: Redactor, mode: Redactor.Mode, part: String) throws {
            material = MarkerMaterial(redactor)
            // What each open element became: its end tag to write, or nil.
            var open: [String?] = []
            // The depth of the dropped element being skipped, and its text.
            var skipDepth = 0
            var skippedText: [Unicode.Scalar] = []
            // Spans in attribute values are censored, never numbered: the reading page shows text only.
            let attributeMode: Redactor.Mode = mode.removesSpan ? .censor : .reveal
            /// What a reader may show although we never do (attribute values, through CSS `attr()`;
            /// a name the parser did not know; comments) pairs its markers on its own, or the mail is refused:
            /// a lone marker there would pair differently for that reader than for us.
            func validateUnshown(_ element: HTMLDocument.Element) throws(PolicyError) {
                if !element.known { try redactor.validate(withoutControls(element.name), part: part) }
                for attribute in element.attributes {
                    try redactor.validate(withoutControls(attribute.name), part: part)
                    try redactor.validate(withoutControls(attribute.value), part: part)
                    // A style attribute is a style sheet of its own: `quotes: '[[private]]' '[[/private]]'`
                    // around a <q> shows its text as a span, which the rebuild (CSS dropped) cannot censor.
                    if attribute.name == "style" && redactor.hasMarkers(withoutControls(attribute.value)) {
                        throw PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .inStyleSheet))
                    }
                }
            }

            let inStyleSheet = PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .inStyleSheet))
            /// A string of a style sheet is text a reader may show (`content:`, `quotes:`): a whole
            /// marker there refuses the part, pieces count in the material.
            func cssString(_ string: [Unicode.Scalar]) throws(PolicyError) {
                if redactor.hasMarkers(String(scalars: string)) { throw inStyleSheet }
                material.count(string)
            }
            // The names of the open elements, kept or not: a style sheet is the text right inside a `style`.
            var parents: [String] = []
            // How many ruby annotations (`<rt>`, `<rp>`) the walk is inside.
            var annotationDepth = 0
            // The context of each open element (see ``ShownContext``), interned.
            var shown = ShownContext.Interner(), tagged = ShownContext.Interner(everyElement: true)
            var shownStack: [Int] = [], taggedStack: [Int] = []
            // Each open element's own number (every element, in document order).
            var elementStack: [Int] = [], elements = 0
            moved = document.movedByParser
            for node in document.nodes {
                switch node {
                case .start(let element):
                    shownStack.append(shown.context(of: element, inside: shownStack.last ?? 0))
                    taggedStack.append(tagged.context(of: element, inside: taggedStack.last ?? 0))
                    elements += 1
                    elementStack.append(elements)
                    if element.name == "link" { hasStyleSheet = true; placeSelectors = true }
                case .end:
                    _ = shownStack.popLast()
                    _ = taggedStack.popLast()
                    _ = elementStack.popLast()
                default: break
                }
                // What a reader may show out of the model's order or beyond it, hidden or dropped
                // content too (CSS can show it): see ``refuseJoinable``.
                switch node {
                case .start(let element):
                    parents.append(element.name)
                    if element.name == "rt" || element.name == "rp" { annotationDepth += 1 }
                    // A declarative shadow root: see ``refuseShadowRoot(spans:redactor:part:)``.
                    if element.isTemplate && element.attributes.contains(where: { $0.name == "shadowrootmode" || $0.name == "shadowroot" }) {
                        shadowRoot = true
                    }
                    if element.name == "br" || element.name == "hr" { lines.append("\n") }
                    if HTMLRebuild.styles(element) { styled = true }
                    if element.name == "bdo" { overrides = true; directed = true }
                    if element.name == "bdi" { directed = true }
                    for attribute in element.attributes {
                        let value = attribute.value.lowercased()
                        if attribute.name == "dir", value.contains("rtl") || value.contains("auto") { directed = true }
                        if attribute.name == "style", value.contains("direction") || value.contains("unicode-bidi") { directed = true }
                    }
                    for attribute in element.attributes {
                        material.count(piece: withoutControls(attribute.value), redactor: redactor)
                        if attribute.name == "style" { try cssStrings(attribute.value, cssString) }
                    }
                    for text in shownInPlace(element) { inPlace.append((stream.count, scalarArray(withoutControls(text)))) }
                case .end:
                    let name = parents.popLast()
                    if name == "rt" || name == "rp" { annotationDepth -= 1 }
                    if let name, HTMLRebuild.blocks.contains(name) { lines.append("\n") }
                case .text(let text):
                    if parents.last != "style" { lines += text.unicodeScalars.lazy.filter { !isControl($0) } }
                    if parents.last == "style" {
                        if redactor.hasMarkers(withoutControls(text)) { throw inStyleSheet }
                        if text.unicodeScalars.contains(where: { !HTMLRebuild.isBlank($0) }) {
                            styled = true
                            let sheet = text.lowercased()
                            if sheet.contains("direction") || sheet.contains("unicode-bidi") { directed = true }
                            if ShownContext.mayHideOrMove(text) {
                                hasStyleSheet = true
                                if ShownContext.picksByPlace(text) { placeSelectors = true }
                            }
                        }
                        try cssStrings(text, cssString)
                    } else if skipDepth > 0 || parents.last == "head" {
                        material.count(piece: withoutControls(text), redactor: redactor)
                    }
                    // Text the model shows is counted from its stream once its spans are known (``refuseJoinable``).
                case .comment: break
                }
                if skipDepth > 0 {
                    switch node {
                    case .start(let element):
                        skipDepth += 1
                        try validateUnshown(element)
                    case .end:
                        skipDepth -= 1
                        if skipDepth == 0 {
                            // Markers in dropped content pair up within it, or the mail is refused.
                            if !skippedText.isEmpty {
                                try redactor.validate(String(scalars: skippedText), part: part)
                                skippedText.removeAll(keepingCapacity: true)
                            }
                        }
                    case .text(let text):
                        skippedText.append(contentsOf: text.unicodeScalars.lazy.filter { !isControl($0) })
                    case .comment(let text):
                        try redactor.validate(withoutControls(text), part: part)
                    }
                    continue
                }
                switch node {
                case .comment(let text):
                    try redactor.validate(withoutControls(text), part: part)
                case .text(let text):
                    if parents.last == "head" { continue }
                    let start = stream.count
                    for scalar in text.unicodeScalars where !isControl(scalar) { stream.append(scalar) }
                    if stream.count > start {
                        events.append(.text(start..<stream.count))
                        if annotationDepth > 0 { annotations.append(start..<stream.count) }
                        let context = shownStack.last ?? 0, tags = taggedStack.last ?? 0, element = elementStack.last ?? 0
                        if contexts.last?.context != context || contexts.last?.tags != tags || contexts.last?.element != element {
                            contexts.append((start, context, tags, element))
                        }
                    }
                case .end:
                    if let name = open.removeLast() { events.append(.close(name: name, position: stream.count)) }
                case .start(let element):
                    try validateUnshown(element)
                    switch classify(element) {
                    case .drop(let reason):
                        if let reason { dropped.insert(reason) }
                        skipDepth = 1
                    case .unwrap(let reason):
                        if let reason { dropped.insert(reason) }
                        open.append(nil)
                    case .keep(let name):
                        var attributes: [(name: String, value: String)] = []
                        // An element the parser made again (a link left open in a span, reopened in
                        // every later block) keeps none of its attributes: they were written where
                        // the sender wrote the element, maybe inside a span, not where it now stands.
                        if element.reopened && !element.attributes.isEmpty { dropped.insert("attributes of a reopened element") }
                        for attribute in element.attributes where !element.reopened {
                            let allowed = globalAttributes.contains(attribute.name)
                                || elementAttributes[element.name]?.contains(attribute.name) == true
                            guard allowed else { dropped.insert(describe(attribute: attribute.name)); continue }
                            var value = withoutControls(attribute.value)
                            if redactor.hasMarkers(value) { value = try redactor.redact(value, mode: attributeMode, part: part) }
                            if urlAttributes.contains(attribute.name) && !value.hasPrefix("#") {
                                guard let scheme = scheme(of: value) else { dropped.insert("url (relative)"); continue }
                                guard allowedSchemes.contains(scheme) else { dropped.insert(describe(scheme: scheme)); continue }
                            }
                            attributes.append((attribute.name, value))
                        }
                        events.append(.open(name: name, attributes: attributes, position: stream.count))
                        open.append(voidElements.contains(name) ? nil : name)
                    }
                }
            }
        }

        enum Decision {
            case keep(String)
            case unwrap(String?)
            case drop(String?)
        }

        func classify(_ element: HTMLDocument.Element) -> Decision {
            guard element.namespace == .html else {
                return .drop(element.namespace == .svg ? "element svg" : "element math")
            }
            if element.isTemplate { return .drop("element template") }
            let name = element.name
            if droppedElements.contains(name) { return .drop("element " + name) }
            for attribute in element.attributes {
                switch attribute.name {
                case "hidden":
                    return .drop("hidden content")
                case "aria-hidden" where attribute.value.trimmingASCIIWhitespaceLowercased() == "true":
                    return .drop("hidden content")
                case "style" where hidesContent(style: attribute.value):
                    return .drop("hidden content")
                default:
                    continue
                }
            }
            if keptElements.contains(name) { return .keep(name) }
            if literalElements.contains(name) { return .keep("pre") }
            // The head's own elements are dropped one by one (and named); its white space is not text of the body.
            if name == "html" || name == "body" || name == "head" { return .unwrap(nil) }
            return .unwrap(element.known ? "element " + name : "element (unknown)")
        }

        // MARK: Writing

        /// The document written with the spans (found in ``stream``) treated as `mode` says.
        func write(spans: [Redactor.Span], redactor: Redactor, mode: Redactor.Mode) -> Rebuilt {
            var out: [UInt8] = []
            var text: [Unicode.Scalar] = []
            var written: [HTMLDocument.Attribute] = []
            var referred: Set<String> = []
            out.reserveCapacity(stream.count + stream.count / 4 + 128)
            out.append(contentsOf: #"<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>"#.utf8)
            let removes = mode.removesSpan
            var next = 0   // the first span that ends after the current position
            func span(at position: Int) -> Redactor.Span? {
                while next < spans.count && spans[next].closeEnd <= position { next += 1 }
                return next < spans.count && spans[next].openStart <= position ? spans[next] : nil
            }
            for event in events {
                switch event {
                case .open(let name, let attributes, let position):
                    out.append(0x3C)
                    out.append(contentsOf: name.utf8)
                    // A tag that starts inside a span keeps no attribute value.
                    let inside = span(at: position).map { $0.openStart < position } ?? false
                    if removes && inside {
                        for attribute in attributes { if let id = HTMLRebuild.contentID(attribute.value, url: true) { referred.insert(id) } }
                    } else {
                        for attribute in attributes {
                            out.append(0x20)
                            out.append(contentsOf: attribute.name.utf8)
                            out.append(contentsOf: #"=""#.utf8)
                            for scalar in attribute.value.unicodeScalars { escape(scalar, into: &out) }
                            out.append(0x22)
                            written.append(HTMLDocument.Attribute(name: attribute.name, value: attribute.value))
                        }
                    }
                    out.append(0x3E)
                    // The parser drops a line feed right after <pre>: this one, not the text's.
                    if name == "pre" { out.append(0x0A) }
                case .close(let name, _):
                    out.append(contentsOf: "</".utf8)
                    out.append(contentsOf: name.utf8)
                    out.append(0x3E)
                case .text(let range):
                    for position in range {
                        guard let found = span(at: position) else {
                            escape(stream[position], into: &out)
                            text.append(stream[position])
                            continue
                        }
                        if position == found.openStart && removes {
                            let content = String(scalars: stream[found.openEnd..<found.closeStart])
                            for scalar in mode.replacement(for: content, placeholder: redactor.placeholder).unicodeScalars
                            where !isControl(scalar) {
                                escape(scalar, into: &out)
                                text.append(scalar)
                            }
                        }
                        if !removes && position >= found.openEnd && position < found.closeStart {
                            escape(stream[position], into: &out)
                            text.append(stream[position])
                        }
                    }
                }
            }
            // Nothing after </html>: a line feed there is text of the body to a parser.
            out.append(contentsOf: "</body></html>".utf8)
            var rebuilt = Rebuilt(html: String(decoding: out, as: UTF8.self), dropped: dropped.sorted(),
                                  text: String(scalars: text), attributes: written)
            rebuilt.referredInSpans = referred
            return rebuilt
        }
    }

    /// The elements around a text that may hide it or show it elsewhere than the
    /// document's order: ones a browser reorders or hides by their kind (table sections and
    /// cells, `details`/`summary`, `meter`/`progress` fallback, `bdo`/`bdi`, `font`, custom
    /// elements, which may hold a shadow root, and the like), and any element with an
    /// attribute that may (a `style`, `class` or `id` a style sheet can reach, `dir`, `slot`,
    /// `color` …: all but a few that only name or link). Other elements (`p`, `b`, `span`
    /// without attributes) change neither, and count as nothing.
    enum ShownContext {
        /// Attributes that neither hide nor move what an element holds.
        static let inert: Set<String> = ["href", "title", "alt", "target", "rel", "lang", "name", "src", "width", "height"]

        /// Elements a browser may show out of order, hide, or draw instead of their text.
        static let reordering: Set<String> = [
            "table", "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "td", "th", "details", "summary",
            "meter", "progress", "bdo", "bdi", "font", "template", "slot", "ruby", "rb", "rt", "rtc", "rp", "marquee",
            "select", "option", "optgroup", "datalist", "object", "video", "audio", "canvas", "noscript", "dialog",
            "fieldset", "legend", "button", "label", "output", "textarea", "iframe", "center", "frameset", "frame",
        ]

        /// True when the CSS `text` sets a property that can hide text or show it elsewhere (`display`,
        /// `visibility`, `opacity`, `font-size`, `position`, `order`, `float`, `transform` …, a colour
        /// that may not show: white, transparent, or a colour function). Read roughly (any
        /// occurrence of a name): it may say so wrongly, which only asks more of a span.
        static func mayHideOrMove(_ text: String) -> Bool {
            let css = text.lowercased()
            let properties = ["display", "visibility", "opacity", "font-size", "font:", "clip", "height", "width", "overflow",
                              "position", "transform", "order", "float", "flex", "grid", "direction", "unicode-bidi",
                              "text-indent", "writing-mode", "zoom", "scale", "filter", "mask", "column", "margin", "inset",
                              "left", "right", "top", "bottom", "hidden", "transparent", "white", "#fff", "rgb", "hsl", "color-mix",
                              "@import", "var("]
            return properties.contains { css.contains($0) }
        }

        /// True when the CSS `text` may pick an element by its place among others or by what is
        /// not in the part: a structural pseudo-class, a sibling combinator, `:not(` and the like,
        /// or `@import`. Read roughly (strings and comments included): it may say so wrongly,
        /// which only asks more of a span.
        static func picksByPlace(_ text: String) -> Bool {
            let css = text.lowercased()
            return ["+", "~", ":nth", ":first", ":last", ":only", ":not(", ":has(", ":is(", ":where(", ":empty", "@import"]
                .contains { css.contains($0) }
        }

        /// Numbers for contexts, equal for equal ones: 0 is the document's own.
        struct Interner {
            private var known: [String: Int] = [:]
            /// Every element counts, by its name at least (a style sheet's type selectors reach them all).
            let everyElement: Bool

            init(everyElement: Bool = false) { self.everyElement = everyElement }

            /// The context inside `element`, itself inside the context `outer`.
            mutating func context(of element: HTMLDocument.Element, inside outer: Int) -> Int {
                let attributes = element.attributes.filter { !ShownContext.inert.contains($0.name) }
                let counts = everyElement || !element.known || element.namespace != .html || reordering.contains(element.name)
                    || !attributes.isEmpty
                guard counts else { return outer }
                var key = String(outer) + "\u{0}" + element.name
                for attribute in attributes { key += "\u{0}" + attribute.name + "=" + attribute.value }
                if let number = known[key] { return number }
                known[key] = known.count + 1
                return known.count
            }
        }
    }

    /// Appends `scalar` as the output writes every character: `&`, `<`, `>`
    /// and `"` as named references, printable ASCII, tab and line feed as
    /// themselves, everything else as a hexadecimal reference (one reading,
    /// whatever charset a reader assumes).
    @inline(__always)
    static func escape(_ scalar: Unicode.Scalar, into out: inout [UInt8]) {
        switch scalar {
        case "&": out.append(contentsOf: "&amp;".utf8)
        case "<": out.append(contentsOf: "&lt;".utf8)
        case ">": out.append(contentsOf: "&gt;".utf8)
        case "\"": out.append(contentsOf: "&quot;".utf8)
        default:
            let value = scalar.value
            if (value >= 0x20 && value < 0x7F) || value == 0x09 || value == 0x0A {
                out.append(UInt8(value))
            } else {
                out.append(contentsOf: "&#x".utf8)
                out.append(contentsOf: String(value, radix: 16, uppercase: true).utf8)
                out.append(0x3B)
            }
        }
    }
}

extension String {
    /// ASCII white space trimmed, ASCII lower-cased: how HTML compares keyword attribute values.
    fileprivate func trimmingASCIIWhitespaceLowercased() -> String {
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\u{C}" || $0 == "\r" }
        let scalars = unicodeScalars.drop(while: isSpace)
        var result = String(scalars: scalars)
        while let last = result.unicodeScalars.last, isSpace(last) { result.unicodeScalars.removeLast() }
        return result.lowercased()
    }
}
