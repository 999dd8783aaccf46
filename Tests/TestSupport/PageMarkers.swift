import Foundation

/// Mails whose only span stands in a file a browser opens as a page (issue 21,
/// the red team of 27 November, class a): an HTML, SVG or XML file declared as
/// something else (`application/octet-stream`, `application/pdf` …, named
/// `.html`, `.svg`, `.xml` …, or unnamed and starting with a tag), each marker cut
/// by a tag or a comment, often holding a line end, which a browser shows as
/// nothing; or the span written reversed under an override (the character, a
/// reference, `<bdo dir=rtl>`, `dir=rtl` with `unicode-bidi: bidi-override`)
/// across such a cut. The file's source lines hold no marker; its page does.
extension HiddenMarkerMails {
    /// What a browser shows as nothing between two letters of a marker.
    static let pageCuts = ["<b\n></b>", "<!--\n-->", "<span\r\nclass=\"x\"></span>", "<i\n\n></i>", "<!-- a\nb -->", "<b></b>",
                           "<wbr>", "<span title=\"a>b\"></span>", "<!---->", "<em\tclass=x\n></em>"]

    /// `text` cut at a random place inside each of its markers (`[[` … `]]`) by one of ``pageCuts``.
    static func cutMarkers(_ text: String, _ random: inout SeededRandom) -> String {
        var out = "", inMarker = false, letters: [Character] = []
        func flush(_ random: inout SeededRandom) {
            let at = Int.random(in: 1..<letters.count, using: &random)
            out += String(letters[..<at]) + pick(pageCuts, &random) + String(letters[at...])
            letters = []
        }
        let chars = Array(text)
        var index = 0
        while index < chars.count {
            let pair = index + 1 < chars.count ? String(chars[index...index + 1]) : ""
            if !inMarker && (pair == "[[" || pair == "]]") {
                // A marker starts at a bracket pair and ends at the next pair of the other bracket or the same.
                inMarker = true
                letters = [chars[index], chars[index + 1]]
                index += 2
                continue
            }
            if inMarker {
                letters.append(chars[index])
                if letters.count > 2 && (pair == "]]" || pair == "[[") {
                    letters.append(chars[index + 1])
                    index += 2
                    inMarker = false
                    flush(&random)
                    continue
                }
                index += 1
                continue
            }
            out.append(chars[index])
            index += 1
        }
        if !letters.isEmpty { out += String(letters) }
        return out
    }

    /// A mail with one page file whose span only its page shows (see the extension's note).
    /// `page`: the file as a browser opens it (for an oracle); `reversed`: the span shows reversed.
    public static func pageMail(_ random: inout SeededRandom, anchor: Bool = false) -> (mail: Mail, page: String, kind: String) {
        let secret = Self.secret(&random)
        let visual = pick(["[[private]]", "[[PRIVATE]]", "[[Private]]"], &random) + secret + "[[/private]]"
        let bidi = Int.random(in: 0..<3, using: &random) == 0
        let body: String, variant: String
        if bidi {
            let reversed = String(visual.reversed())
            let mirrored = String(reversed.map { $0 == "[" ? "]" : $0 == "]" ? "[" : $0 })
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                variant = "override character"
                body = pick(overrides, &random) + cutMarkers(Bool.random(using: &random) ? reversed : mirrored, &random) + "\u{202C}"
            case 1:
                variant = "override as &#x202E;"
                body = "&#x202E;" + cutMarkers(Bool.random(using: &random) ? reversed : mirrored, &random) + "&#x202C;"
            case 2:
                variant = "<bdo dir=rtl>"
                body = "<bdo dir=\"rtl\">" + cutMarkers(mirrored, &random) + "</bdo>"
            default:
                variant = "dir=rtl with bidi-override"
                body = "<span dir=\"rtl\" style=\"unicode-bidi: bidi-override\">" + cutMarkers(mirrored, &random) + "</span>"
            }
        } else {
            variant = "markers cut by tags and comments"
            body = cutMarkers(visual, &random)
        }
        let kind: String, page: String
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
            kind = "svg"
            page = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\"><text x=\"0\" y=\"20\">Code: " + body + "</text></svg>\n"
        case 1:
            kind = "xml"
            page = "<?xml version=\"1.0\"?>\n<note><to>Bob</to><body>Code: " + body + "</body></note>\n"
        default:
            kind = "html"
            let head = pick(["<!DOCTYPE html><html><body>", "<html>\n<body>\n", "<p>", "\u{FEFF}<!doctype html>\n<meta charset=\"utf-8\">"], &random)
            page = head + "<p>Hello Bob</p>\n<p>Code: " + body + "</p>\n" + (head == "<p>" ? "" : "</body></html>\n")
        }
        let extensions = ["html": [".html", ".htm", ".HTML", ".shtml", ".xhtml"], "svg": [".svg"], "xml": [".xml"]][kind]!
        let name: String? = Int.random(in: 0..<4, using: &random) == 0 ? nil : "report" + pick(extensions, &random)
        let type = pick(["application/octet-stream", "application/pdf", "application/x-unknown", "application/zip"], &random)
        let declared = name.map { type + "; name=\"\($0)\"" } ?? "application/octet-stream"
        let part = leaf(declared, disposition: name, content: page, &random)
        let mail = Mail(variant: "\(declared), \(kind), \(variant)", mail: envelope(subject: "notes", parts: [part], anchor: anchor, &random),
                        secret: secret, shown: bidi ? String(secret.reversed()) : secret, reversed: bidi)
        return (mail, page, kind)
    }

    /// A mail without spans (`anchor` false) or with one plain span, with `page` attached
    /// as `application/octet-stream` named `name`, in a random transfer encoding.
    public static func pageFileMail(_ page: String, name: String, anchor: Bool = false, _ random: inout SeededRandom) -> String {
        let part = leaf("application/octet-stream; name=\"\(name)\"", disposition: name, content: page, &random)
        return envelope(subject: "notes", parts: [part], anchor: anchor, &random)
    }

    /// A CSS string holding `text`, some of its characters escaped (`\5b `, `\00005b`, `\[`)
    /// and cut into adjacent strings, which CSS joins.
    static func cssString(_ text: String, _ random: inout SeededRandom) -> String {
        var pieces: [String] = [], piece = ""
        for character in text {
            let value = code(character)
            switch Int.random(in: 0..<4, using: &random) {
            case 0 where !character.isLetter: piece += "\\" + String(value, radix: 16) + " "
            case 1 where !character.isLetter: piece += "\\" + String(format: "%06x", value)
            case 2 where !character.isLetter: piece += "\\" + String(character)
            default: piece.append(character)
            }
            if Int.random(in: 0..<4, using: &random) == 0 { pieces.append(piece); piece = "" }
        }
        pieces.append(piece)
        let quote = pick(["\"", "'"], &random)
        return pieces.filter { !$0.isEmpty }.map { quote + $0 + quote }.joined(separator: " ")
    }

    /// A page whose span only its style sheet composes (class d): the markers as CSS
    /// `content:` strings around the secret (escaped, cut into adjacent strings), joined
    /// from attributes by `attr()`, or a `@counter-style` (its name escaped) whose prefix
    /// or symbols show the open marker before a list item; in an attachment a browser
    /// opens (`application/octet-stream` named `.html`), with or without another span.
    public static func styledPageMail(_ random: inout SeededRandom, anchor: Bool = false) -> (mail: Mail, page: String) {
        let secret = Self.secret(&random)
        let open = pick(["[[private]]", "[[PRIVATE]]"], &random), close = "[[/private]]"
        let page: String, variant: String
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            variant = "content: strings"
            let (before, after) = pick([("::before", "::after"), (":before", ":after")], &random)
            page = "<style>p.s\(before) { content: \(cssString(open, &random)); } p.s\(after) { content: \(cssString(close, &random)) }</style>\n"
                + "<p>Hello Bob</p><p class=\"s\">\(secret)</p>\n"
        case 1:
            variant = "attr() joined"
            let cut = Int.random(in: 1..<open.count, using: &random), cutClose = Int.random(in: 1..<close.count, using: &random)
            page = "<style>b::before, i::after { content: attr(data-a) attr(data-b); }</style>\n"
                + "<p><b data-a=\"\(open.prefix(cut))\" data-b=\"\(open.dropFirst(cut))\"></b>\(secret)"
                + "<i data-a=\"\(close.prefix(cutClose))\" data-b=\"\(close.dropFirst(cutClose))\"></i></p>\n"
        default:
            variant = "@counter-style"
            let name = pick(["\\70 riv", "p\\72 iv", "\\000070riv", "priv"], &random)
            let field = pick(["prefix", "symbols"], &random)
            page = "<style>@counter-style \(name) { system: cyclic; \(field == "prefix" ? "symbols: \"\"; prefix" : "symbols"): \(cssString(open, &random)); suffix: \"\"; }\n"
                + "ul { list-style: \(name); } li::after { content: \(cssString(close, &random)); }</style>\n<ul><li>\(secret)</li></ul>\n"
        }
        let html = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>\n" + page + "</body></html>\n"
        let name = "page" + pick([".html", ".htm", ".xhtml"], &random)
        let part = leaf("application/octet-stream; name=\"\(name)\"", disposition: name, content: html, &random)
        let mail = Mail(variant: "styled page, " + variant, mail: envelope(subject: "notes", parts: [part], anchor: anchor, &random),
                        secret: secret, shown: secret, reversed: false)
        return (mail, html)
    }
}
