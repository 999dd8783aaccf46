import Foundation

/// HTML whose only span a browser composes from CSS or alt text (issue 21): the
/// five shapes (strings around `attr()`, concatenated or escaped strings, text
/// reordered, pieces hidden by a class, alt text), and the friendly styled HTML
/// of newsletters that must pass.
extension HiddenMarkerMails {
    /// `text` as a CSS string literal: each character written as itself, `\hex` (short or six
    /// digits, a blank after it or not) or `\char`, at random; cut into concatenated strings
    /// (`"[[pri" "vate]]"`) at random places when `split`.
    static func cssString(_ text: String, split: Bool, _ random: inout SeededRandom) -> String {
        let quote = pick(["\"", "'"], &random)
        var out = quote
        for (index, character) in text.enumerated() {
            if split && index > 0 && Int.random(in: 0..<3, using: &random) == 0 { out += quote + pick([" ", "", "\n  "], &random) + quote }
            let value = character.unicodeScalars.first!.value
            switch Int.random(in: 0..<5, using: &random) {
            case 0: out += "\\" + String(value, radix: 16) + " "
            case 1: out += "\\" + String(format: "%06X", value)
            case 2 where !character.isHexDigit: out += "\\" + String(character)
            default: out += String(character)
            }
        }
        return out + quote
    }

    /// Friendly CSS and HTML of newsletters (controls: never refused): attribute selectors, clearfix, icon fonts,
    /// Outlook's conditional comments, one footnote, images with alt text.
    public static let friendlyCSS = [
        "a[x-apple-data-detectors] { color: inherit !important; text-decoration: none !important; }",
        ".clearfix::after { content: \"\"; display: table; clear: both; }",
        ".icon-arrow::before { content: \"\\f101\"; font-family: 'icons'; }",
        "u + #body a, #MessageViewBody a { color: inherit; }",
        "[owa] .col { width: 100% !important; }",
        "@media only screen and (max-width: 600px) { .wrap { width: 100% !important; } }",
        "div[style*=\"margin: 16px 0\"] { margin: 0 !important; }",
        ".quote::before { content: \"\\201C\"; }",
    ]
    /// Friendly HTML of newsletters: conditional comments, one footnote, logos and a tracking pixel with alt text, inline styles.
    public static let friendlyHTML = [
        "<!--[if mso]><table role=\"presentation\"><tr><td><![endif]-->", "<!--[if mso]></td></tr></table><![endif]-->",
        "<p>Read the study<sup>[1]</sup> before Friday.</p>", "<img src=\"https://news.example/logo.png\" alt=\"Example News\">",
        "<img src=\"https://news.example/p.gif\" alt=\"\" width=\"1\" height=\"1\">", "<p style=\"font-family:Arial,sans-serif;color:#333\">Hello Bob, private matters aside, see you.</p>",
        "<a class=\"icon-arrow\" href=\"https://news.example/a?x=1&amp;y=2\">More</a>", "<div class=\"clearfix\"><span class=\"quote\">Great</span></div>",
    ]

    static func noise(_ random: inout SeededRandom) -> (css: String, html: String) {
        let css = friendlyCSS.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random)).joined(separator: "\n")
        let html = friendlyHTML.filter { !$0.contains("[1]") }.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random)).joined()
        return (css, html)
    }

    /// A marker cut into two pieces at a random place.
    static func cut(_ marker: String, _ random: inout SeededRandom) -> (String, String) {
        let at = Int.random(in: 1..<marker.count, using: &random)
        return (String(marker.prefix(at)), String(marker.dropFirst(at)))
    }

    /// One HTML part whose only span a browser composes: the five shapes of the issue, at random.
    public static func styledHTML(_ random: inout SeededRandom, secret: String) -> (variant: String, html: String) {
        let open = pick(["[[private]]", "[[PRIVATE]]", "[[Private]]"], &random), close = pick(["[[/private]]", "[[/Private]]"], &random)
        let (css, noise) = Self.noise(&random)
        var sheet = css, body = ""
        let variant: String
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
            variant = "content: strings around attr()"
            sheet += "\n.a::before { content: \(cssString("[[", split: true, &random)) attr(data-x) \(cssString("]]", split: true, &random)); }"
            body = "<span class=\"a\" data-x=\"\(open.dropFirst(2).dropLast(2))\"></span>\(secret)<span class=\"a\" data-x=\"\(close.dropFirst(2).dropLast(2))\"></span>"
        case 1:
            variant = "content: concatenated or escaped strings"
            sheet += "\n.o::before { content: \(cssString(open, split: true, &random)); }\n.c::after { content: \(cssString(close, split: true, &random)); }"
            body = "<span class=\"o\"></span>\(secret)<span class=\"c\"></span>"
        case 2:
            variant = "quotes: in a style attribute"
            let value = "quotes: \(cssString(open, split: false, &random)) \(cssString(close, split: false, &random))"
            body = "<q style=\"\(value.replacingOccurrences(of: "\"", with: "&quot;"))\">\(secret)</q>"
        case 3, 4:
            // The marker's second piece written first, shown second by a flex container.
            let wrap: String, first: String, second: String
            if Int.random(in: 0..<2, using: &random) == 0 {
                variant = "flex row-reverse"
                let style = "display:flex;flex-direction:row-reverse"
                wrap = Bool.random(using: &random) ? "style=\"\(style)\"" : "class=\"rev\""
                if wrap.hasPrefix("class") { sheet += "\n.rev { \(style) }" }
                (first, second) = ("", "")
            } else {
                variant = "order:"
                (wrap, first, second) = ("style=\"display:flex\"", " style=\"order:1\"", " style=\"order:2\"")
            }
            func swapped(_ marker: String) -> String {
                let (a, b) = cut(marker, &random)
                return "<div \(wrap)><span\(second)>\(b)</span><span\(first)>\(a)</span></div>"
            }
            body = swapped(open) + secret + swapped(close)
        case 5:
            variant = "bidi-override by a class"
            sheet += "\n.r { direction: rtl; unicode-bidi: bidi-override; }"
            func mirrored(_ marker: String) -> String {
                String(marker.reversed().map { $0 == "[" ? "]" : $0 == "]" ? "[" : $0 })
            }
            body = "<span class=\"r\">" + mirrored(open + secret + close) + "</span>"
        case 6:
            let hider = pick(["display:none", "visibility:hidden", "display: NONE !important", "font-size:0"], &random)
            variant = "hidden by a class: " + hider
            sheet += "\n.h { \(hider); }"
            func hidden(_ marker: String) -> String {
                let (a, b) = cut(marker, &random)
                return a + "<span class=\"h\">x\(Int.random(in: 0...99, using: &random))</span>" + b
            }
            body = hidden(open) + secret + hidden(close)
        default:
            variant = "alt text of a blocked image"
            func alt(_ marker: String) -> String {
                let (a, b) = cut(marker, &random)
                return Bool.random(using: &random) ? "<img src=\"cid:x\" alt=\"\(a)\">\(b)" : "\(a)<img alt=\"\(b)\" src=\"https://x.example/i.png\">"
            }
            body = alt(open) + secret + alt(close)
        }
        let style = sheet.isEmpty ? "" : "<style>\n\(sheet)\n</style>"
        let html = "<!DOCTYPE html><html><head>\(style)</head><body><p>Hello Bob</p>\(noise)<p>Code: \(body)</p></body></html>\n"
        return (variant, html)
    }

    /// A mail whose only span a browser composes by CSS or alt text (issue 21; ``styledHTML(_:secret:)``),
    /// the HTML part 8bit, base64 or quoted-printable, a text part beside it at random (with a span when `anchor`).
    public static func styledMail(_ random: inout SeededRandom, anchor: Bool = false) -> Mail {
        let secret = Self.secret(&random)
        let (variant, html) = styledHTML(&random, secret: secret)
        let part = leaf("text/html; charset=utf-8", disposition: nil, content: html, &random)
        return Mail(variant: "styled: " + variant, mail: envelope(subject: "notes", parts: [part], anchor: anchor, &random),
                    secret: secret, shown: secret, reversed: false)
    }

    /// A friendly styled HTML document of the controls above, at random.
    public static func friendlyStyledHTML(_ random: inout SeededRandom) -> String {
        let css = friendlyCSS.shuffled(using: &random).prefix(Int.random(in: 1...friendlyCSS.count, using: &random)).joined(separator: "\n")
        return "<!DOCTYPE html><html><head><style>\(css)</style></head><body>"
            + friendlyHTML.shuffled(using: &random).prefix(Int.random(in: 2...friendlyHTML.count, using: &random)).joined()
            + "</body></html>\n"
    }
}
