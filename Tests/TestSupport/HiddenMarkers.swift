import Foundation

/// Mails whose only markers show through a decoding a viewer applies and a
/// plain search does not (issue 21, the classes of the hostile review after
/// the rebuild): escapes in a file a browser, JSON, RTF or Markdown viewer
/// opens, escape charsets (Python's `unicode_escape`), UTF-7, and markers
/// written reversed after a bidirectional override. Each has no other marked
/// span unless `anchor`. The secret inside is plain (or, for the bidi
/// class, reversed) lower-case ASCII, so a reader of the postcard that sees
/// it shows the span.
public enum HiddenMarkerMails {
    /// One generated mail: what it tries, the secret, and the text a reader shows when it leaks.
    public struct Mail: Sendable {
        public let variant: String
        public let mail: String
        public let secret: String
        /// What stands in the postcard when the span leaks: the secret, or for
        /// the bidi class the secret reversed (shown forwards by the reader).
        public let shown: String
        /// True for the bidi class: the leak is the reversed secret beside an override.
        public let reversed: Bool
    }

    static func secret(_ random: inout SeededRandom) -> String {
        "zq" + String((0..<Int.random(in: 7...10, using: &random)).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
    }

    static func pick<T>(_ choices: [T], _ random: inout SeededRandom) -> T { choices.randomElement(using: &random)! }

    /// `text` with a random non-empty set of its characters in `escapable`
    /// (at least one of each marker's brackets) written by `escape`.
    static func escaped(_ text: String, _ escapable: String, _ random: inout SeededRandom, _ escape: (Character, inout SeededRandom) -> String) -> String {
        var out = "", any = false
        for character in text {
            if escapable.contains(character) && (Bool.random(using: &random) || !any && character == "[") {
                out += escape(character, &random)
                any = true
            } else {
                out += String(character)
            }
        }
        return out
    }

    static func code(_ character: Character) -> UInt32 { character.unicodeScalars.first!.value }

    /// The marked span with some brackets as HTML character references (decimal,
    /// hex, named, with and without `;`, leading zeros).
    static func htmlReferences(_ span: String, _ random: inout SeededRandom) -> String {
        escaped(span, "[]/p", &random) { character, random in
            let value = code(character)
            let named: [Character: [String]] = ["[": ["&lsqb;", "&lbrack;"], "]": ["&rsqb;", "&rbrack;"], "/": ["&sol;"], "p": ["&#112;"]]
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return "&#\(value);"
            case 1: return "&#x" + String(value, radix: 16, uppercase: Bool.random(using: &random)) + ";"
            case 2: return "&#000\(value)" + (Bool.random(using: &random) ? ";" : "")
            default: return pick(named[character]!, &random)
            }
        }
    }

    static func cEscapes(_ span: String, _ random: inout SeededRandom, python: Bool) -> String {
        escaped(span, "[]/pv", &random) { character, random in
            let value = code(character)
            let forms = ["\\u" + String(format: "%04x", value), "\\u" + String(format: "%04X", value)]
                + (python ? ["\\x" + String(format: "%02x", value), "\\" + String(value, radix: 8), "\\U" + String(format: "%08x", value)]
                          + (character == "[" ? ["\\N{LEFT SQUARE BRACKET}"] : character == "]" ? ["\\N{right square bracket}"] : [])
                          : [])
            return pick(forms, &random)
        }
    }

    static func rtfEscapes(_ span: String, _ random: inout SeededRandom) -> String {
        escaped(span, "[]/", &random) { character, random in
            let value = code(character)
            return pick(["\\'" + String(format: "%02x", value), "\\u\(value)?", "\\u\(value) ?", "{\\u\(value)\\'3f}"], &random)
        }
    }

    /// A mail of one class chosen at random (`anchor`: with another, plain marked span).
    public static func escapedMail(_ random: inout SeededRandom, anchor: Bool = false) -> Mail {
        let secret = Self.secret(&random)
        let span = pick(["[[private]]", "[[PRIVATE]]"], &random) + secret + "[[/private]]"
        let variant: String, part: String, subject: String
        var subjectLine: String?
        switch Int.random(in: 0..<9, using: &random) {
        case 0:
            let name = "report" + pick([".html", ".htm", ".shtml", ".xht", ".xhtml", ".mht", ".svg", ".HTML"], &random)
            let type = pick(["application/octet-stream", "application/pdf", "application/zip", "application/x-unknown"], &random)
            variant = "\(type) named \(name), HTML references"
            let html = "<html><body><p>Notes</p><p>" + htmlReferences(span, &random) + "</p></body></html>\n"
            part = leaf(type + "; name=\"\(name)\"", disposition: name, content: html, &random)
        case 1:
            let (type, name) = pick([("application/json", "data.json"), ("application/octet-stream", "data.json"), ("text/json", "x.json"),
                                     ("application/x-ndjson", "log.ndjson")], &random)
            variant = "\(type), JSON escapes"
            part = leaf(type, disposition: Bool.random(using: &random) ? name : nil,
                        content: "{\"note\": \"" + cEscapes(span, &random, python: false) + "\"}\n", &random)
        case 2:
            let type = pick(["application/rtf", "text/rtf", "application/octet-stream; name=\"memo.rtf\"", "application/msword"], &random)
            variant = "\(type), RTF escapes"
            part = leaf(type, disposition: "memo.rtf", content: "{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Arial;}}\\f0 Notes\\par " + rtfEscapes(span, &random) + "\\par }\n", &random)
        case 3:
            let type = pick(["text/markdown", "text/x-markdown", "application/octet-stream; name=\"notes.md\""], &random)
            variant = "\(type), Markdown escapes"
            part = leaf(type, disposition: "notes.md", content: "# Notes\n\n" + escaped(span, "[]", &random) { character, _ in "\\" + String(character) } + "\n", &random)
        case 4:
            let charset = pick(["unicode_escape", "raw_unicode_escape", "unicode-escape", "UNICODE_ESCAPE"], &random)
            variant = "text/plain; charset=\(charset)"
            part = leaf("text/plain; charset=\(charset)", disposition: nil, content: "Notes: " + cEscapes(span, &random, python: true) + "\n", &random)
        case 5:
            let charset = pick(["unicode_escape", "raw_unicode_escape"], &random)
            variant = "Subject in charset \(charset)"
            let escapedSpan = cEscapes(span, &random, python: true)
            subjectLine = "=?\(charset)?Q?" + escapedSpan.replacingOccurrences(of: "?", with: "=3F").replacingOccurrences(of: " ", with: "_") + "?="
            part = "Content-Type: text/plain; charset=utf-8\n\nNothing in the body.\n"
        case 6:
            variant = "text/plain in UTF-7 labelled otherwise"
            let utf7 = escaped(span, "[]/", &random) { character, random in
                let units = Array(String(character).utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
                return "+" + Data(units).base64EncodedString().replacingOccurrences(of: "=", with: "") + "-"
            }
            part = leaf("text/plain; charset=" + pick(["us-ascii", "utf-7", "utf-8"], &random), disposition: nil, content: "Notes " + utf7 + "\n", &random)
        case 7:
            variant = "CSS escapes in text/css"
            let css = escaped(span, "[]/", &random) { character, _ in "\\" + String(code(character), radix: 16) + " " }
            part = leaf(pick(["text/css", "application/octet-stream; name=\"site.css\""], &random), disposition: "site.css",
                        content: "p::after { content: \"" + css + "\"; }\n", &random)
        default:
            variant = "percent-encoding in a .url file"
            let url = escaped(span, "[]/", &random) { character, _ in "%" + String(format: "%02X", code(character)) }
            part = leaf("application/octet-stream; name=\"link.url\"", disposition: "link.url",
                        content: "[InternetShortcut]\nURL=https://example.org/?q=" + url + "\n", &random)
        }
        subject = subjectLine ?? "notes \(Int.random(in: 1...999, using: &random))"
        return Mail(variant: variant, mail: envelope(subject: subject, parts: [part], anchor: anchor, &random),
                    secret: secret, shown: secret, reversed: false)
    }

    /// A mail whose only markers are joined by what a recipient's program
    /// hides (the red team of 26 November): content a browser does not show
    /// (the `hidden` attribute, `display:none`, script, template, noscript,
    /// style, a comment, a hidden textarea) or a terminal escape sequence
    /// (CSI, OSC, DCS, APC, PM, character set designation, DECSC/DECRC,
    /// keypad mode, S7C1T; backspace overstrike) cut into each marker at a
    /// random place, in an HTML part, a text part or the Subject.
    public static func joinedMail(_ random: inout SeededRandom, anchor: Bool = false) -> Mail {
        let secret = Self.secret(&random)
        func cut(_ marker: String, _ insert: () -> String) -> String {
            let at = Int.random(in: 1..<marker.count, using: &random)
            return String(marker.prefix(at)) + insert() + String(marker.dropFirst(at))
        }
        let open = pick(["[[private]]", "[[PRIVATE]]", "[[Private]]"], &random), close = "[[/private]]"
        let word = "x" + String(Int.random(in: 0...99, using: &random))
        let variant: String
        var parts: [String] = [], subject = "notes"
        if Bool.random(using: &random) {
            let hiders = ["<span hidden>\(word)</span>", "<span style=\"display:none\">\(word)</span>", "<script>\(word)</script>",
                          "<template>\(word)</template>", "<noscript>\(word)</noscript>", "<style>.\(word){}</style>",
                          "<!-- \(word) -->", "<textarea hidden>\(word)</textarea>", "<b hidden></b>"]
            let hider = pick(hiders, &random)
            variant = "HTML markers joined by hidden content: " + hider
            let span = cut(open, { hider }) + secret + cut(close, { hider })
            let html = "<!DOCTYPE html><html><body><p>Hello Bob</p><p>Code: \(span)</p></body></html>\n"
            parts = [leaf("text/html; charset=utf-8", disposition: nil, content: html, &random)]
        } else {
            let escapes = ["\u{1B}[0m", "\u{1B}[1;31m", "\u{1B}[K", "\u{1B}]0;title\u{07}", "\u{1B}]8;;http://x/\u{1B}\\", "\u{1B}P1$r\u{1B}\\",
                           "\u{1B}_app\u{1B}\\", "\u{1B}^pm\u{1B}\\", "\u{1B}(B", "\u{1B})0", "\u{1B}7", "\u{1B}8", "\u{1B}=", "\u{1B}>", "\u{1B} F"]
            let escape = pick(escapes, &random)
            let shown = escape.unicodeScalars.map { $0.value < 0x20 ? "^" + String(UnicodeScalar($0.value + 0x40)!) : String($0) }.joined()
            let span = cut(open, { escape }) + secret + cut(close, { escape })
            if Bool.random(using: &random) {
                variant = "text markers joined by a terminal escape: " + shown
                parts = [leaf("text/plain; charset=utf-8", disposition: nil, content: "Hello Bob,\ncode: \(span)\n", &random)]
            } else {
                variant = "Subject markers joined by a terminal escape: " + shown
                subject = "=?utf-8?b?" + Data(("notes " + span).utf8).base64EncodedString() + "?="
                parts = ["Content-Type: text/plain; charset=utf-8\n\nHello Bob.\n"]
            }
        }
        return Mail(variant: variant, mail: envelope(subject: subject, parts: parts, anchor: anchor, &random),
                    secret: secret, shown: secret, reversed: false)
    }

    /// A mail whose only span stands in a part that only a second reading of
    /// its multipart's boundary opens (the red team of 26 November): the
    /// boundary given twice, in RFC 2231 form beside the plain one (extended,
    /// a continuation, upper case) or unquoted with a blank, either one first.
    public static func boundaryMail(_ random: inout SeededRandom) -> Mail {
        let secret = Self.secret(&random)
        let (one, other) = ("b" + Self.secret(&random), "c" + Self.secret(&random))
        let forms: [(String, String)] = [
            ("given twice", "boundary=\"\(one)\"; boundary=\"\(other)\""),
            ("RFC 2231 extended", "boundary=\"\(one)\"; boundary*=utf-8''\(other)"),
            ("RFC 2231 continuation", "boundary=\"\(one)\"; boundary*0=\(other)"),
            ("upper-case extended", "boundary=\"\(one)\"; BOUNDARY*=us-ascii'en'\(other)"),
            ("unquoted with a blank", "boundary=\(other) \(one)"),
        ]
        var (variant, parameters) = pick(forms, &random)
        if Bool.random(using: &random), variant != "unquoted with a blank" {
            // The other order: which one a reader takes first differs too.
            parameters = parameters.components(separatedBy: "; ").reversed().joined(separator: "; ")
            variant += ", reversed"
        }
        let hiddenText = "Hello Bob, the code is [[private]]\(secret)[[/private]].\n"
        let hidden = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
            + Data(hiddenText.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n"
        let body = "Content-Type: multipart/mixed; \(parameters)\n\n--\(one)\nContent-Type: text/plain; charset=utf-8\n\n"
            + "Hello Bob, nothing private here.\n--\(other)\n" + hidden + "--\(other)--\n--\(one)--\n"
        let mail = "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nCc: Dora <dora@example.net>\nSubject: notes\n"
            + "Date: Wed, 25 Nov 2026 10:00:00 +0000\nMessage-ID: <boundary.\(random.next())@example.org>\nMIME-Version: 1.0\n" + body
        return Mail(variant: "boundary " + variant, mail: mail, secret: secret, shown: secret, reversed: false)
    }

    /// Bidirectional controls that make what follows right-to-left.
    static let overrides = ["\u{202E}", "\u{202B}", "\u{2067}"]

    /// A mail with a marked span written reversed after a right-to-left override
    /// (in the text, the Subject or HTML), mirrored brackets or not.
    /// `refusedOnly`: only the forms that keep their override in a rebuilt
    /// postcard (the text, the Subject, the override in HTML as a character or
    /// a reference), which must be refused; not `<bdo>` and `dir=rtl`, which
    /// the rebuild drops, leaving the reversed text harmless.
    public static func bidiMail(_ random: inout SeededRandom, anchor: Bool = false, refusedOnly: Bool = false) -> Mail {
        let secret = Self.secret(&random)
        let visual = "[[private]]" + secret + "[[/private]]"
        let reversed = String(visual.reversed())
        let mirrored = String(reversed.map { $0 == "[" ? "]" : $0 == "]" ? "[" : $0 })
        let logical = Bool.random(using: &random) ? reversed : mirrored
        let control = pick(overrides, &random)
        let end = pick(["\u{202C}", "\u{2069}", "", "\n"], &random)
        let variant: String, part: String
        var subject = "notes \(Int.random(in: 1...999, using: &random))"
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            variant = "text/plain, override U+\(String(code(Character(control)), radix: 16, uppercase: true))"
            part = leaf("text/plain; charset=utf-8", disposition: nil, content: "hello " + control + logical + end + " bye\n", &random)
        case 1:
            variant = "Subject, override U+\(String(code(Character(control)), radix: 16, uppercase: true))"
            let word = Array((control + logical).utf8).map { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    ? String(UnicodeScalar(byte)) : String(format: "=%02X", byte)
            }.joined()
            subject = "=?utf-8?Q?hi_" + word + "?="
            part = "Content-Type: text/plain; charset=utf-8\n\nNothing in the body.\n"
        default:
            let form = Int.random(in: refusedOnly ? 2..<4 : 0..<4, using: &random)
            variant = ["HTML, <bdo dir=rtl>", "HTML, dir=rtl with bidi-override", "HTML, &#x202E;", "HTML, the override itself"][form]
            // Half the time the marker is cut by a tag or comment holding a line end, which a
            // browser shows as nothing (the source's lines are not the page's: a hostile review's finding).
            func cut(_ text: String) -> String {
                guard Bool.random(using: &random) else { return text }
                let at = text.index(text.startIndex, offsetBy: Int.random(in: 1..<text.count, using: &random))
                let breaker = pick(["<b\n></b>", "<!--\n-->", "<span\r\nclass=\"x\"></span>", "<i\n\n></i>"], &random)
                return String(text[..<at]) + breaker + String(text[at...])
            }
            let html: String
            switch form {
            case 0: html = "<bdo dir=\"rtl\">" + cut(mirrored) + "</bdo>"
            case 1: html = "<span dir=\"rtl\" style=\"unicode-bidi: bidi-override\">" + cut(mirrored) + "</span>"
            case 2: html = "&#x202E;" + cut(logical) + "&#x202C;"
            default: html = control + cut(logical) + "\u{202C}"
            }
            part = leaf("text/html; charset=utf-8", disposition: nil, content: "<html><body><p>hello " + html + " bye</p></body></html>\n", &random)
        }
        return Mail(variant: variant, mail: envelope(subject: subject, parts: [part], anchor: anchor, &random),
                    secret: secret, shown: String(secret.reversed()), reversed: true)
    }

    static func leaf(_ type: String, disposition: String?, content: String, _ random: inout SeededRandom, encoding: Int? = nil) -> String {
        var head = "Content-Type: " + type + "\n"
        if let disposition { head += "Content-Disposition: attachment; filename=\"\(disposition)\"\n" }
        switch encoding ?? Int.random(in: 0..<3, using: &random) {
        case 0: return head + "Content-Transfer-Encoding: 8bit\n\n" + content
        case 1: return head + "Content-Transfer-Encoding: base64\n\n"
            + Data(content.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n"
        default: return head + "Content-Transfer-Encoding: quoted-printable\n\n" + quotedPrintable(Array(content.utf8))
        }
    }

    static func envelope(subject: String, parts: [String], anchor: Bool, _ random: inout SeededRandom) -> String {
        var all = parts
        if anchor || Bool.random(using: &random) {
            let text = anchor ? "Hi, [[private]]zqanchor[[/private]] here.\n" : "Hi, nothing private here.\n"
            let sibling = "Content-Type: text/plain; charset=utf-8\n\n" + text
            all.insert(sibling, at: Bool.random(using: &random) ? 0 : all.count)
        }
        let body = all.count == 1 ? all[0]
            : "Content-Type: multipart/mixed; boundary=\"hb\"\n\n" + all.map { "--hb\n" + $0 + ($0.hasSuffix("\n") ? "" : "\n") }.joined() + "--hb--\n"
        return "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nCc: Dora <dora@example.net>\nSubject: \(subject)\n"
            + "Date: Wed, 25 Nov 2026 10:00:00 +0000\nMessage-ID: <hidden.\(random.next())@example.org>\nMIME-Version: 1.0\n" + body
    }

    /// Python's `email` (policy.default) reading `bytes` as a recipient's
    /// reader does: every header field, file name and part (decoded; bytes as
    /// Latin-1), each also through `html.unescape` and the `unicode_escape`
    /// codec. One text, parts separated by lines of their own.
    public static let pythonReader = """
        import sys, email, email.policy, html, codecs
        m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
        out = []
        def add(s):
            out.append(s); out.append(html.unescape(s))
            try: out.append(codecs.decode(s.encode('latin-1', 'replace'), 'unicode_escape'))
            except Exception: pass
        for part in m.walk():
            for k, v in part.items(): add(str(v))
            add(part.get_filename() or '')
            if part.is_multipart(): continue
            try: c = part.get_content()
            except Exception: c = part.get_payload(decode=True) or b''
            if isinstance(c, bytes): c = c.decode('latin-1')
            if isinstance(c, str): add(c)
            else: add(str(c))
        sys.stdout.write('\\n----\\n'.join(out))
        """

    /// True when `reading` (``pythonReader``'s output) shows `mail`'s span:
    /// the secret, or for the bidi class the reversed secret in a piece that
    /// still holds an override or an `rtl` direction.
    public static func leaks(_ mail: Mail, in reading: String) -> Bool {
        let lower = reading.lowercased()
        guard mail.reversed else { return lower.contains(mail.secret) }
        return lower.components(separatedBy: "\n----\n").contains { piece in
            (piece.contains(mail.shown) || withoutTags(piece).contains(mail.shown))
                && (overrides.contains { piece.contains($0) } || piece.contains("\u{2068}") || piece.contains("rtl")
                    || ["&#x202", "&#x206", "&#82"].contains { piece.contains($0) })
        }
    }

    /// `text` with what a browser shows as nothing taken out: tags and comments, line ends inside them too.
    static func withoutTags(_ text: String) -> String {
        var out = "", rest = Substring(text)
        while let open = rest.firstIndex(of: "<") {
            out += rest[..<open]
            let closing = rest[open...].hasPrefix("<!--") ? rest[open...].range(of: "-->")?.upperBound : rest[open...].firstIndex(of: ">").map { rest.index(after: $0) }
            guard let closing else { return out + rest[open...] }
            rest = rest[closing...]
        }
        return out + rest
    }
}

/// Escaped markers shaped to pass the fixed lengths of the attachment byte
/// search (issue 21, the cut-offs an attacker controls): invisible padding
/// between a marker's first two scalars (past 48 bytes), inside a marker
/// (its escaped form past 512 bytes), a reversed marker more than 64 KiB
/// after its override on one line, and an escaped marker across the 1 MiB
/// window the search reads at a time. Each is in a part mailsec does not
/// read as text (`application/octet-stream` and the like, named for the
/// viewer that shows it), with no other marked span; ``reader`` names the
/// program that shows the marker, and `scripts`' Python check runs it.
public enum CutOffMarkerMails {
    /// The four cut-offs.
    public enum Shape: String, CaseIterable, Sendable {
        case paddedSecond, longMarker, farOverride, acrossWindows
        /// Readings the escape decodings missed: Python's `\N{name}` of an invisible character,
        /// Perl's `\N{U+…}`, a line continuation (backslash-newline) between a marker's scalars,
        /// and bare CR and LF inside a marker in RTF text, which RTF readers ignore.
        case readingGaps
    }

    /// One generated mail, with what it tries, the secret, the part's content and how a reader shows it.
    public struct Mail: Sendable {
        public let variant: String
        public let mail: [UInt8]
        public let secret: String
        /// What stands in the postcard when the span leaks (the secret, reversed for `farOverride`).
        public let shown: String
        /// The attachment's decoded content.
        public let content: [UInt8]
        /// How a reader shows the content: `json` (Python's `json.loads`), `python`
        /// (a string literal, Python's `ast.literal_eval`), `bidi` (the Unicode bidirectional
        /// algorithm's visual order, as a browser or terminal shows a `.txt`), `perl` (a Perl
        /// program printing a string), `rtf` (RTF's text: control words, groups and bare line ends out).
        public let reader: String
    }

    /// Invisible characters a reader shows as nothing, as JSON and Python write them (and raw).
    static let padding = ["\\u200b", "\\u200c", "\\u200d", "\\u2060", "\\ufeff", "\\u00ad", "\\u034f", "\u{200B}", "\u{2060}", "\u{00AD}"]

    static func escape(_ character: Character, python: Bool, _ random: inout SeededRandom) -> String {
        let value = character.unicodeScalars.first!.value
        var forms = ["\\u" + String(format: "%04x", value), "\\u" + String(format: "%04X", value)]
        if python {
            forms += ["\\x" + String(format: "%02x", value), "\\" + String(value, radix: 8), "\\U" + String(format: "%08x", value)]
            if character == "[" { forms.append(pick(["\\N{LEFT SQUARE BRACKET}", "\\N{left square bracket}"], &random)) }
            if character == "]" { forms.append("\\N{RIGHT SQUARE BRACKET}") }
        }
        return HiddenMarkerMails.pick(forms, &random)
    }

    static func pick<T>(_ choices: [T], _ random: inout SeededRandom) -> T { choices.randomElement(using: &random)! }

    /// `padding` invisibles of one kind, `count` of them.
    static func pad(_ count: Int, python: Bool, _ random: inout SeededRandom) -> String {
        let kind = pick(padding, &random)
        return String(repeating: kind, count: count)
    }

    /// `marker` written with every bracket escaped (some letters too) and `padAfter(i)` invisibles after scalar `i`.
    static func written(_ marker: String, python: Bool, _ random: inout SeededRandom, padAfter: (Int) -> Int) -> String {
        var out = ""
        for (index, character) in marker.enumerated() {
            out += "[]/".contains(character) || Int.random(in: 0..<4, using: &random) == 0
                ? escape(character, python: python, &random) : String(character)
            let count = padAfter(index)
            if count > 0 { out += pad(count, python: python, &random) }
        }
        return out
    }

    /// A mail of `shape`, its variation at random.
    public static func mail(_ shape: Shape, _ random: inout SeededRandom) -> Mail {
        let secret = HiddenMarkerMails.secret(&random)
        let python = shape == .acrossWindows || Bool.random(using: &random)
        let (type, name) = python
            ? pick([("application/octet-stream", "notes.py"), ("application/x-python-code", "notes.py"), ("application/octet-stream", "config.py")], &random)
            : pick([("application/octet-stream", "data.json"), ("application/octet-stream", "export.JSON"), ("application/x-unknown", "data.json")], &random)
        let reader = python ? "python" : "json"
        func literal(_ inner: String) -> String {
            python ? "note = \"" + inner + "\"\n" : "{\"note\": \"" + inner + "\"}\n"
        }
        let variant: String, content: String, shown = secret
        var encoding: Int?
        switch shape {
        case .paddedSecond:
            // 9 to 60 six-byte escapes (or raw invisibles) between the first `[` and the second.
            let count = Int.random(in: 9...60, using: &random)
            let open = written("[[private]]", python: python, &random) { $0 == 0 ? count : 0 }
            let close = written("[[/private]]", python: python, &random) { $0 == 0 ? count : 0 }
            // A span longer than the budget, so no escape inside it leads the search to the closing marker.
            content = literal("Notes: " + open + "what follows stays between us, " + secret + close + " end")
            variant = "\(name) (\(type)), \(count) invisibles between the first two scalars"
        case .longMarker:
            // The second scalar right after the first; past it, invisibles making the marker longer than 512 bytes.
            let count = Int.random(in: 100...400, using: &random)
            let open = written("[[private]]", python: python, &random) { $0 == 1 ? count : 0 }
            let close = written("[[/private]]", python: python, &random) { $0 == 1 ? count : 0 }
            content = literal(open + "what follows stays between us, " + secret + close)
            variant = "\(name) (\(type)), \(count) invisibles after the second scalar"
        case .farOverride:
            let visual = "[[private]]" + secret + "[[/private]]"
            let reversed = String(visual.reversed())
            let logical = Bool.random(using: &random) ? reversed : String(reversed.map { $0 == "[" ? "]" : $0 == "]" ? "[" : $0 })
            let filler = String((0..<Int.random(in: 66_000...90_000, using: &random)).map { _ in "abcdefgh ".randomElement(using: &random)! })
            content = "hello " + pick(HiddenMarkerMails.overrides, &random) + filler + logical + "\u{202C} bye\n"
            variant = "\(name) (\(type)), a reversed marker \(filler.utf8.count) bytes after its override"
            return Mail(variant: variant, mail: Array(HiddenMarkerMails.envelope(subject: "notes", parts: [
                HiddenMarkerMails.leaf(pick(["application/octet-stream", "application/x-unknown"], &random) + "; name=\"notes.txt\"",
                                       disposition: "notes.txt", content: content, &random)], anchor: false, &random).utf8),
                        secret: secret, shown: String(secret.reversed()), content: Array(content.utf8), reader: "bidi")
        case .readingGaps:
            return readingGap(secret, &random)
        case .acrossWindows:
            // Lines of letters, then the escaped marker straddling the byte search's window (1 MiB
            // and the overlap, read in GMime's 4,096-byte pieces: the first cut at 1,052,646).
            let open = written("[[private]]", python: true, &random) { _ in 0 }
            let close = written("[[/private]]", python: true, &random) { _ in 0 }
            let prefix = "note = \""
            let cut = 1_052_672 - 26
            let start = cut - Int.random(in: 1..<max(2, open.utf8.count - 1), using: &random)
            var filler = ""
            while prefix.utf8.count + filler.utf8.count < start - 80 { filler += "the quick brown fox jumps over the lazy dog \\\n" }
            filler += String(repeating: "x", count: start - prefix.utf8.count - filler.utf8.count)
            content = prefix + filler + open + secret + close + "\"\n"
            variant = "\(name) (\(type)), an escaped marker of \(open.utf8.count) bytes from byte \(start)"
            encoding = 0
        }
        let leaf = HiddenMarkerMails.leaf(type + "; name=\"\(name)\"", disposition: name, content: content, &random, encoding: encoding)
        return Mail(variant: variant, mail: Array(HiddenMarkerMails.envelope(subject: "notes", parts: [leaf], anchor: false, &random).utf8),
                    secret: secret, shown: shown, content: Array(content.utf8), reader: reader)
    }

    /// A mail of the ``Shape/readingGaps`` shape: which gap, where inside the markers and how many, at random.
    static func readingGap(_ secret: String, _ random: inout SeededRandom) -> Mail {
        let kind = Int.random(in: 0..<4, using: &random)
        let marks = Set((0..<Int.random(in: 1...3, using: &random)).map { _ in Int.random(in: 0..<10, using: &random) })
        let variant: String, content: String, reader: String, name: String
        typealias Form = (inout SeededRandom) -> String
        func gapped(_ marker: String, _ gap: Form, escape: (Character, inout SeededRandom) -> String, _ random: inout SeededRandom) -> String {
            var out = ""
            for (index, character) in marker.enumerated() {
                out += escape(character, &random)
                if marks.contains(index) { out += gap(&random) }
            }
            return out
        }
        switch kind {
        case 0, 1:
            // Python: `\N{name}` of an invisible character, or a line continuation, between scalars.
            let names = ["ZERO WIDTH SPACE", "zero width non-joiner", "ZWSP", "ZWJ", "SOFT HYPHEN", "Word Joiner", "ZERO WIDTH NO-BREAK SPACE"]
            let gap: Form = kind == 0 ? { random in "\\N{" + pick(names, &random) + "}" } : { random in pick(["\\\n", "\\\n\\\n"], &random) }
            let escape: (Character, inout SeededRandom) -> String = { character, random in
                "[]/".contains(character) && Bool.random(using: &random) ? Self.escape(character, python: true, &random) : String(character)
            }
            content = "note = \"" + gapped("[[private]]", gap, escape: escape, &random) + secret + gapped("[[/private]]", gap, escape: escape, &random) + "\"\n"
            variant = kind == 0 ? "Python \\N{name} of an invisible character inside the markers" : "Python line continuations inside the markers"
            reader = "python"
            name = "notes.py"
        case 2:
            // Perl: `\N{U+…}` for a bracket or an invisible between scalars.
            let gap: Form = { random in "\\N{U+" + pick(["200B", "200b", "2060", "AD", "FEFF"], &random) + "}" }
            let escape: (Character, inout SeededRandom) -> String = { character, random in
                "[]".contains(character) && Bool.random(using: &random)
                    ? "\\N{U+" + String(character.unicodeScalars.first!.value, radix: 16, uppercase: Bool.random(using: &random)) + "}"
                    : character == "[" || character == "]" ? "\\" + String(character) : String(character)
            }
            content = "print \"" + gapped("[[private]]", gap, escape: escape, &random) + secret + gapped("[[/private]]", gap, escape: escape, &random) + "\";\n"
            variant = "Perl \\N{U+...} inside the markers"
            reader = "perl"
            name = "notes.pl"
        default:
            // RTF: bare CR, LF or CRLF between scalars, the brackets raw or as `\'5b`.
            let gap: Form = { random in pick(["\n", "\r\n", "\r", "\n\n"], &random) }
            let escape: (Character, inout SeededRandom) -> String = { character, random in
                "[]".contains(character) && Bool.random(using: &random) ? "\\'" + String(format: "%02x", character.unicodeScalars.first!.value) : String(character)
            }
            content = "{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Arial;}}\\f0 Notes\\par " + gapped("[[private]]", gap, escape: escape, &random) + secret
                + gapped("[[/private]]", gap, escape: escape, &random) + "\\par }\n"
            variant = "RTF, bare line ends inside the markers"
            reader = "rtf"
            name = "memo.rtf"
        }
        let type = pick(["application/octet-stream", "application/x-unknown"], &random)
        let leaf = HiddenMarkerMails.leaf(type + "; name=\"\(name)\"", disposition: name, content: content, &random)
        return Mail(variant: "\(name) (\(type)), " + variant, mail: Array(HiddenMarkerMails.envelope(subject: "notes", parts: [leaf], anchor: false, &random).utf8),
                    secret: secret, shown: secret, content: Array(content.utf8), reader: reader)
    }

    /// Python showing a part's content as its reader does (`json`, `python`;
    /// `bidi`: the content as it is, reordered by the test), with the
    /// invisibles a renderer draws as nothing taken out.
    public static let pythonShows = """
        import sys, json, ast, unicodedata
        kind = sys.argv[1]
        data = sys.stdin.buffer.read().decode('utf-8')
        if kind == 'json': text = json.loads(data)['note']
        elif kind == 'python': text = ast.literal_eval(data.split('=', 1)[1].strip())
        elif kind == 'perl':
            import subprocess
            text = subprocess.run(['perl', '-CO'], input=data.encode(), capture_output=True, check=True).stdout.decode('utf-8')
        elif kind == 'rtf':
            import re
            t = data.replace('\\r', '').replace('\\n', '')
            t = re.sub(r"\\\\'([0-9a-fA-F]{2})", lambda m: bytes([int(m.group(1), 16)]).decode('cp1252'), t)
            t = re.sub(r'\\\\[a-zA-Z]+-?[0-9]* ?', '', t)
            text = t.replace('{', '').replace('}', '')
        else: text = data
        if kind != 'bidi': text = ''.join(c for c in text if unicodedata.category(c) != 'Cf' and c != '\\u034f')
        sys.stdout.write(text)
        """
}
