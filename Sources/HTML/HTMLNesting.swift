/// A bound, found in one pass over the bytes and before any parse, on how
/// deep the HTML5 tree construction of a document nests its open elements.
///
/// Why: Gumbo (Debian's 0.10) checks "has an element in scope" by walking
/// the stack of open elements, for most start and end tags, and walks the
/// list of active formatting elements likewise; markup nested N deep costs it
/// N steps a tag, N² in all (80,000 nested `<div>`s: 38 s). Gumbo has no
/// depth option; browsers cap the depth instead (Chromium stops nesting at
/// 512, `kMaximumHTMLParserDOMTreeDepth`). A document whose bound passes
/// ``limit`` is not parsed at all: mailsec cannot read it completely, and it
/// is an opaque part.
///
/// The bound must never be lower than the real depth, or hostile markup would
/// get through to the quadratic parse; it may be higher. So the scan keeps a
/// stack of its own that holds at least every element Gumbo holds open:
/// - void elements never push;
/// - an end tag pops its match and what stands above it, as Gumbo does, only
///   when no element that bounds its scope stands above the match (`table`,
///   `td`, `button`, `object`, `template`, SVG and MathML integration points;
///   for other than formatting elements every special element): Gumbo
///   ignores it; a start tag that ends an element (`<p>` and every block a
///   `p`, `<li>` an `li`, `<td>` a `td`, `<a>` an `a`) pops likewise;
/// - formatting elements (`b`, `font` …) leave only through their own end
///   tag, never because another element ended: Gumbo may reopen them
///   (reconstruct the active formatting elements);
/// - an element whose start tag Gumbo ignores in places (table parts outside
///   a table, a second `body` or `form`, `frameset`) pops only itself, and
///   stays when another below it ends;
/// - inside comments, bogus comments, CDATA sections, raw text (`script`,
///   `style`, `textarea` …) and quoted attribute values end tags count for
///   nothing, start tags still push.
/// Elements that the tree construction adds by itself (`html`, `head`,
/// `body`, `tbody` and `tr` in a table) are few for each pushed element:
/// random tag soup, and short units of it repeated hundreds of times, never
/// nest deeper in Gumbo than three times the bound plus three
/// (`HTMLNestingTests`), so Gumbo's work stays under a constant times
/// ``limit`` a tag. The price: formatting elements left open in every
/// paragraph count as if nested (`<p><font>x` 3,000 times is withheld).
package struct HTMLNesting: Sendable, Equatable {
    /// The upper bound on the depth of open elements (formatting elements included:
    /// what presses on Gumbo's list of active formatting elements is on its stack too).
    package private(set) var depth = 0

    /// Above this bound a document is not parsed (``HTMLError/Reason/tooDeep``).
    /// Twice Chromium's depth: the bound over-estimates ordinary markup (a
    /// newsletter's tables, inline elements left open), and the
    /// deepest of the 56 HTML parts of the public corpus bounds at 90
    /// (Gumbo nests it 20 deep).
    package static let limit = 1024

    /// Formatting elements: Gumbo keeps them in the list of active formatting elements.
    static let formattingNames: Set<String> = ["a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u"]
    /// Elements without content (never on the stack).
    static let voidNames: Set<String> = ["area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta",
                                         "param", "source", "track", "wbr", "basefont", "bgsound", "frame", "image", "menuitem"]
    /// Elements whose content is text until their end tag (RAWTEXT, RCDATA, script data).
    static let rawTextNames: Set<String> = ["script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title"]
    /// Elements that bound some scope of the tree construction, or that Gumbo's
    /// "any other end tag" stops at (the special elements): an end tag whose match
    /// is below one of them may be ignored, so it pops nothing here.
    static let boundaryNames: Set<String> = [
        "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "button", "select", "ol", "ul",
        "mi", "mo", "mn", "ms", "mtext", "annotation-xml", "foreignobject", "desc", "title", "svg", "math",
        "address", "area", "article", "aside", "base", "basefont", "bgsound", "blockquote", "body", "center", "col", "colgroup",
        "dd", "details", "dir", "div", "dl", "dt", "embed", "fieldset", "figcaption", "figure", "footer", "form", "frame",
        "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "iframe", "img", "input", "li",
        "link", "listing", "main", "menu", "meta", "nav", "noembed", "noframes", "noscript", "p", "param", "plaintext", "pre",
        "script", "section", "source", "style", "summary", "tbody", "textarea", "tfoot", "thead", "tr", "track", "ul", "wbr", "xmp",
    ]
    /// Elements that bound the default scope (the adoption agency finds a formatting element only within it).
    static let scopeNames: Set<String> = ["applet", "caption", "html", "table", "td", "th", "marquee", "object", "template",
                                          "mi", "mo", "mn", "ms", "mtext", "annotation-xml", "foreignobject", "desc", "title"]
    /// Elements that put a marker in the list of active formatting elements (what is listed before it is not reopened).
    static let markerNames: Set<String> = ["applet", "caption", "td", "th", "marquee", "object", "template"]
    /// Elements whose start tag Gumbo ignores in some places (table parts outside a table,
    /// a second `html`, `body`, `form` …): one of them here may stand for nothing in Gumbo's
    /// stack, so its end pops only itself.
    static let doubtfulNames: Set<String> = ["td", "th", "tr", "tbody", "thead", "tfoot", "caption", "colgroup", "html", "head",
                                             "body", "frameset", "form", "select", "table", "option", "optgroup", "svg", "math"]
    /// Start tags that close a `p` in button scope before they push (`table` only outside quirks mode: never here).
    static let closesParagraph: Set<String> = [
        "address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div", "dl", "fieldset", "figcaption",
        "figure", "footer", "header", "hgroup", "main", "menu", "nav", "ol", "section", "summary", "ul", "h1", "h2", "h3", "h4",
        "h5", "h6", "pre", "listing", "form", "li", "dd", "dt", "plaintext", "hr", "xmp",
    ]
    /// Start tags that close an open element of the same kind (`<p>` a `p`, `<td>` a `td` or `th`),
    /// searching down the stack no further than an element of the set given.
    static let closing: [String: (kinds: Set<String>, stops: Set<String>)] = {
        let buttonScope: Set<String> = ["applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "button",
                                        "mi", "mo", "mn", "ms", "mtext", "annotation-xml", "foreignobject", "desc", "title", "svg", "math"]
        // `<li>`, `<dd>`, `<dt>` search down to any special element but `address`, `div` and `p`.
        let special = boundaryNames.union(buttonScope).subtracting(["address", "div", "p"])
        let table: Set<String> = ["html", "table", "template"]
        return [
            "p": (["p"], buttonScope), "li": (["li"], special.subtracting(["li"])), "dd": (["dd", "dt"], special.subtracting(["dd", "dt"])),
            "dt": (["dd", "dt"], special.subtracting(["dd", "dt"])),
            "td": (["td", "th"], table), "th": (["td", "th"], table), "tr": (["tr"], table),
        ]
    }()

    /// The bound for `html` (its UTF-8 bytes).
    package init(_ html: some Collection<UInt8>) {
        let bytes = Array(html)
        // The elements open: every one Gumbo holds open, and more. An element leaves only
        // through its own end tag or a start tag that ends it, never because another ended
        // (what Gumbo pops with that one, it may reopen or keep: the bound stays high).
        var stack: [String] = []
        // How many of each name the stack holds: a search down the stack for a kind that is
        // not there is skipped (else each `<div>` under 1,000 others walks all of them).
        var held: [String: Int] = [:]
        // The ignored region: end tags before `quiet` count for nothing.
        var quiet = 0
        let count = bytes.count
        // The last search for each needle: the first match at or after `from` is `found`, so a
        // later search starting between them has the same answer (the scan stays linear).
        var searches: [[UInt8]: (from: Int, found: Int)] = [:]
        func search(_ needle: [UInt8], from start: Int) -> Int {
            guard needle.count <= count else { return count }
            var index = start
            while index + needle.count <= count {
                if bytes[index] == needle[0] {
                    var match = true
                    for offset in 1..<needle.count where bytes[index + offset] != needle[offset] { match = false; break }
                    if match { return index }
                }
                index += 1
            }
            return count
        }
        func find(_ needle: [UInt8], from start: Int) -> Int {
            if let last = searches[needle], last.from <= start, start <= last.found { return last.found }
            let found = search(needle, from: start)
            searches[needle] = (start, found)
            return found
        }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D }
        func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
        func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte + 32 : byte }
        func note() {
            depth = max(depth, stack.count)
        }
        /// True when an element of `names` stands on the stack at `height` or above.
        func bounded(above height: Int, by names: Set<String>) -> Bool {
            stack[min(height, stack.count)...].contains { names.contains($0) }
        }
        /// Removes `stack[at]` and what stands above it, as Gumbo pops them, but formatting
        /// elements (Gumbo may reopen them) and elements Gumbo may have pushed elsewhere
        /// (a `frameset` where Gumbo ignored the `p` being ended).
        func pop(from at: Int) {
            let removed = stack.count > at + 1 && Self.doubtfulNames.contains(stack[at]) ? [at] : Array(stack.indices[at...])
            var kept: [String] = []
            for index in removed.dropFirst() where Self.formattingNames.contains(stack[index]) || Self.doubtfulNames.contains(stack[index]) {
                kept.append(stack[index])
            }
            for index in removed { held[stack[index], default: 1] -= 1 }
            for name in kept { held[name, default: 0] += 1 }
            if removed.count > 1 { stack.removeSubrange(at...); stack += kept } else { stack.remove(at: at) }
        }
        var index = 0
        // Past the limit the answer is known; stopping there also keeps each tag's work under the limit.
        while index < count && depth <= Self.limit {
            guard bytes[index] == 0x3C, index + 1 < count else { index += 1; continue }   // `<`
            let next = bytes[index + 1]
            if next == 0x21 {   // `<!`: a comment, CDATA, a doctype or a bogus comment
                let rest = Array(bytes[(index + 2)..<min(count, index + 9)])
                if rest.starts(with: [0x2D, 0x2D]) {
                    quiet = max(quiet, find(Array("-->".utf8), from: index + 4))
                } else if rest.starts(with: Array("[CDATA[".utf8)) {
                    quiet = max(quiet, find(Array("]]>".utf8), from: index + 9))
                } else {
                    quiet = max(quiet, find([0x3E], from: index + 2))
                }
                index += 2
                continue
            }
            if next == 0x3F {   // `<?`: a bogus comment up to `>`
                quiet = max(quiet, find([0x3E], from: index + 2))
                index += 2
                continue
            }
            let isEnd = next == 0x2F
            let nameStart = isEnd ? index + 2 : index + 1
            guard nameStart < count, isLetter(bytes[nameStart]) else {
                if isEnd { quiet = max(quiet, find([0x3E], from: index + 2)) }   // `</3`: a bogus comment
                index += 1
                continue
            }
            var cursor = nameStart
            var nameBytes: [UInt8] = []
            while cursor < count, !isSpace(bytes[cursor]), bytes[cursor] != 0x2F, bytes[cursor] != 0x3E {
                nameBytes.append(lower(bytes[cursor]))
                cursor += 1
            }
            let name = String(decoding: nameBytes, as: UTF8.self)
            // The attributes, as the tokenizer reads them: a quoted value may hold `<` and `>`.
            while cursor < count, bytes[cursor] != 0x3E {
                let byte = bytes[cursor]
                if byte == 0x3D {   // `=`: a value follows
                    cursor += 1
                    while cursor < count, isSpace(bytes[cursor]) { cursor += 1 }
                    if cursor < count, bytes[cursor] == 0x22 || bytes[cursor] == 0x27 {
                        let close = find([bytes[cursor]], from: cursor + 1)
                        quiet = max(quiet, close)
                        cursor = close + 1
                        continue
                    }
                    continue
                }
                cursor += 1
            }
            // `<div/>` opens a div in HTML; self-closing counts only in foreign content, and is not trusted here.
            let quieted = index < quiet
            index = max(cursor, index + 1)
            if isEnd {
                guard !quieted, held[name, default: 0] > 0, let at = stack.lastIndex(of: name) else { continue }
                // Gumbo ignores an end tag whose element is out of scope (a formatting element's,
                // through the adoption agency) or below a special element (any other).
                if Self.formattingNames.contains(name) {
                    if !bounded(above: at + 1, by: Self.scopeNames) { held[name, default: 1] -= 1; stack.remove(at: at) }
                    continue
                }
                if bounded(above: at + 1, by: Self.boundaryNames) { continue }
                pop(from: at)
                continue
            }
            if Self.voidNames.contains(name) { continue }
            if name == "a", held["a", default: 0] > 0, let at = stack.lastIndex(of: "a"), !bounded(above: at + 1, by: Self.markerNames) {
                held["a", default: 1] -= 1
                stack.remove(at: at)   // `<a>` with an `a` open since the last marker ends it first
            }
            if Self.closesParagraph.contains(name), held["p", default: 0] > 0, let rule = Self.closing["p"] {
                // A block start tag closes a `p` in button scope, as `<p>` does.
                var at = stack.count - 1
                while at >= 0, stack[at] != "p", !rule.stops.contains(stack[at]) { at -= 1 }
                if at >= 0, stack[at] == "p" { pop(from: at) }
            }
            if let rule = Self.closing[name], rule.kinds.contains(where: { held[$0, default: 0] > 0 }) {
                var at = stack.count - 1
                while at >= 0, !rule.kinds.contains(stack[at]), !rule.stops.contains(stack[at]) { at -= 1 }
                if at >= 0, rule.kinds.contains(stack[at]) { pop(from: at) }
            }
            stack.append(name)
            held[name, default: 0] += 1
            note()
            if name == "plaintext" { quiet = count; continue }
            if Self.rawTextNames.contains(name), !quieted {
                // Raw text up to `</name` followed by white space, `/` or `>`: the first such, as the tokenizer ends it.
                var search = index
                while true {
                    let close = find([0x3C, 0x2F], from: search)
                    if close >= count { quiet = count; break }
                    let candidate = bytes[(close + 2)..<min(count, close + 2 + nameBytes.count)].map(lower)
                    let after = close + 2 + nameBytes.count
                    if candidate == nameBytes, after >= count || isSpace(bytes[after]) || bytes[after] == 0x2F || bytes[after] == 0x3E {
                        quiet = max(quiet, close)
                        break
                    }
                    search = close + 2
                }
            }
        }
    }
}
