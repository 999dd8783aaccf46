import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// Issue 21: an HTML part went out unchanged when no reading found a marker, while a
/// browser showed one composed by CSS (`content:` strings, `attr()`, text reordered or
/// hidden by a class) or by alt text (a reader that blocks images). Such a part is now
/// refused (65, ``PolicyError/MarkerProblem/joinable``); friendly styled mail is not.
@Suite("Markers a style sheet or alt text joins")
struct JoinedByStyleTests {
    static var seed: UInt64 {
        UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
    }

    static func pick<T>(_ choices: [T], _ random: inout SeededRandom) -> T { choices.randomElement(using: &random)! }

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

    /// Friendly CSS and HTML of newsletters: attribute selectors, clearfix, icon fonts,
    /// Outlook's conditional comments, one footnote, images with alt text.
    static let friendlyCSS = [
        "a[x-apple-data-detectors] { color: inherit !important; text-decoration: none !important; }",
        ".clearfix::after { content: \"\"; display: table; clear: both; }",
        ".icon-arrow::before { content: \"\\f101\"; font-family: 'icons'; }",
        "u + #body a, #MessageViewBody a { color: inherit; }",
        "[owa] .col { width: 100% !important; }",
        "@media only screen and (max-width: 600px) { .wrap { width: 100% !important; } }",
        "div[style*=\"margin: 16px 0\"] { margin: 0 !important; }",
        ".quote::before { content: \"\\201C\"; }",
    ]
    static let friendlyHTML = [
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
    static func joinedHTML(_ random: inout SeededRandom, secret: String) -> (variant: String, html: String) {
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
        case 3:
            variant = "flex row-reverse"
            let style = "display:flex;flex-direction:row-reverse"
            let wrap = Bool.random(using: &random) ? "style=\"\(style)\"" : "class=\"rev\""
            if wrap.hasPrefix("class") { sheet += "\n.rev { \(style) }" }
            func reversed(_ marker: String) -> String {
                let (a, b) = cut(marker, &random)
                return "<div \(wrap)><span>\(b)</span><span>\(a)</span></div>"
            }
            body = reversed(open) + secret + reversed(close)
        case 4:
            variant = "order:"
            func ordered(_ marker: String) -> String {
                let (a, b) = cut(marker, &random)
                return "<div style=\"display:flex\"><span style=\"order:2\">\(b)</span><span style=\"order:1\">\(a)</span></div>"
            }
            body = ordered(open) + secret + ordered(close)
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

    static func mail(html: String, anchor: Bool, _ random: inout SeededRandom) -> String {
        let htmlPart = "Content-Type: text/html; charset=utf-8\n"
            + (Bool.random(using: &random) ? "Content-Transfer-Encoding: 8bit\n\n" + html
                : "Content-Transfer-Encoding: base64\n\n" + Data(html.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n")
        let text = anchor ? "Hi, [[private]]zqanchor[[/private]] here.\n" : "Hi, nothing private here.\n"
        return "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nSubject: notes\nDate: Wed, 25 Nov 2026 10:00:00 +0000\n"
            + "Message-ID: <css.\(random.next())@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"b\"\n\n"
            + "--b\nContent-Type: text/plain; charset=utf-8\n\n\(text)--b\n\(htmlPart)--b--\n"
    }

    @Test("a span composed by CSS (attr(), concatenated or escaped strings, quotes:, flex, order:, bidi-override, hidden by a class) or by alt text: refused (65), never sent")
    func joinedIsRefused() throws {
        let seed = Self.seed
        var random = SeededRandom(seed: seed)
        for round in 0..<80 {
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let (variant, html) = Self.joinedHTML(&random, secret: secret)
            let mail = Self.mail(html: html, anchor: round % 4 == 3, &random)
            do {
                let postcard = try Postcard.censored(try parse(mail))
                Issue.record("seed \(seed) round \(round) \(variant): not refused\n\(html)\n-- postcard:\n\(String(decoding: postcard.serialize(), as: UTF8.self))")
            } catch let error as PolicyError {
                #expect(error.code == .unbalancedMarkers && [.joinable, .inStyleSheet].contains(error.marker?.problem),
                        "seed \(seed) round \(round) \(variant): \(error)")
                #expect(!error.description.contains(secret))
            }
        }
    }

    @Test("friendly styled HTML (attribute selectors, clearfix, icon fonts, Outlook's conditional comments, a footnote, logos' alt text), random: sent unchanged")
    func friendlyPasses() throws {
        let seed = Self.seed
        var random = SeededRandom(seed: seed)
        for round in 0..<40 {
            let css = Self.friendlyCSS.shuffled(using: &random).prefix(Int.random(in: 1...Self.friendlyCSS.count, using: &random)).joined(separator: "\n")
            let html = "<!DOCTYPE html><html><head><style>\(css)</style></head><body>"
                + Self.friendlyHTML.shuffled(using: &random).prefix(Int.random(in: 2...Self.friendlyHTML.count, using: &random)).joined()
                + "</body></html>\n"
            let mail = Self.mail(html: html, anchor: false, &random)
            do {
                let postcard = try Postcard.censored(try parse(mail))
                let texts = postcard.body?.walk().compactMap(\.entity.text) ?? []
                #expect(texts.contains { $0.trimmingCharacters(in: .whitespacesAndNewlines) == html.trimmingCharacters(in: .whitespacesAndNewlines) }, "seed \(seed) round \(round): not sent unchanged")
            } catch {
                Issue.record("seed \(seed) round \(round): refused: \(error)\n\(html)")
            }
        }
    }

    @Test("a styled mail (style attributes, a style sheet) with a real span is rebuilt and censored, not refused")
    func styledWithSpanIsCensored() throws {
        let html = """
            <html><head><style>a[x-apple-data-detectors]{color:inherit} .clearfix::after{content:""}</style></head>\
            <body style="font-family:Arial"><p style="color:#222">Hi Bob [1], the code is [[private]]zqsecret[[/private]] [2].</p>\
            <img alt="[logo]" src="https://x.example/l.png"></body></html>
            """
        var random = SeededRandom(seed: 7)
        let written = String(decoding: try Postcard.censored(try parse(Self.mail(html: html, anchor: true, &random))).serialize(), as: UTF8.self)
        #expect(!written.contains("zqsecret") && !written.contains("zqanchor"))
    }
}
