import HTML
import Policy
import Redaction

/// A seeded generator, so that a failing case can be made again from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A document as Gumbo reads it back: its text in order and every attribute.
struct Reading {
    let text: String
    let attributes: [HTMLDocument.Attribute]

    init(_ html: String) throws {
        var text = ""
        var attributes: [HTMLDocument.Attribute] = []
        for node in try HTMLDocument(parsing: html).nodes {
            switch node {
            case .text(let piece): text += piece
            case .start(let element):
                // The fixed <meta charset> of the head is the writer's own.
                if element.name != "meta" { attributes += element.attributes }
            case .end, .comment: break
            }
        }
        self.text = text
        self.attributes = attributes
    }

    /// True when `secret` shows in the text or in any attribute value.
    func shows(_ secret: String) -> Bool {
        text.contains(secret) || attributes.contains { $0.value.contains(secret) }
    }
}

/// Random HTML around marked spans: each span holds a secret word, and the
/// markers, the secret and the text around them are written in the ways
/// `classes` allows.
struct HostileHTML {
    /// The ways of writing that a case may use.
    enum Trick: CaseIterable {
        case entities        // markers and text written with character references, some without ';'
        case splitByTags     // markers and the secret broken up by empty or crossing elements
        case nul             // NUL and other controls inside markers and text
        case foreign         // SVG and MathML with CDATA around and between spans
        case rawText         // script, style, title, textarea, xmp, noscript, plaintext-free raw text
        case hidden          // hidden, aria-hidden, display:none, <input type=hidden>, template
        case nonASCIILess    // '<' before a non-ASCII letter, which is text
        case css             // CSS content: and attr() in style sheets and attributes
        case embedded        // data: URLs and srcdoc documents, nested
    }

    let html: String
    let secrets: [String]

    init(tricks: Set<Trick>, using rng: inout SplitMix64) {
        var out = ""
        var secrets: [String] = []
        let spanCount = Int.random(in: 1...4, using: &rng)
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

        /// Ordinary text around spans, with its own hostile bits.
        func filler() -> String {
            var pieces = ["Hello ", "ok. ", "caf\u{E9} ", "\u{4E2D}\u{6587} ", "a &amp; b ", "x &lt; y ", "\u{1F600} ", "1 > 0 ", "\"quoted\" "]
            if tricks.contains(.entities) { pieces += ["&amp ", "&lt;b&gt; ", "&notit; ", "&#x41;&#66 ", "&copy ", "&#0; "] }
            if tricks.contains(.nonASCIILess) { pieces += ["<\u{E9}t\u{E9} ", "<\u{4E2D}> ", "a<\u{3B1}b "] }
            if tricks.contains(.nul) { pieces += ["a\u{0}b ", "\u{1B}[31m ", "c\r\nd "] }
            var text = ""
            for _ in 0..<Int.random(in: 0...3, using: &rng) { text += pick(pieces) }
            return text
        }

        /// Something a browser does not show (noise: no markers, no secrets).
        func unshown() -> String {
            var choices: [String] = []
            if tricks.contains(.rawText) {
                choices += ["<script>var a = '<b>x</b>';</script>", "<style>p { color: red }</style>", "<title>t</title>",
                            "<textarea>area <b>x</b></textarea>", "<noscript>no <i>script</i></noscript>", "<template><p>t</p></template>"]
            }
            if tricks.contains(.hidden) {
                choices += ["<span hidden>h</span>", "<div aria-hidden=\"true\">h</div>", "<div style=\"display: none\">h</div>",
                            "<input type=hidden value=\"h\">", "<span style=\"opacity:0\">h</span>"]
            }
            if tricks.contains(.foreign) {
                choices += ["<svg><text>s</text><![CDATA[c]]></svg>", "<math><mi>m</mi><![CDATA[c]]></math>"]
            }
            if tricks.contains(.embedded) {
                choices += ["<iframe srcdoc=\"&lt;p&gt;doc&lt;/p&gt;\"></iframe>", "<object data=\"data:text/html,x\"></object>"]
            }
            return choices.isEmpty ? "" : pick(choices)
        }

        /// A marker as written: plainly, or broken up as the tricks allow.
        func marker(_ text: String) -> String {
            var ways = ["plain", "upper"]
            if tricks.contains(.entities) { ways += ["brackets", "p without semicolon", "soft hyphen"] }
            if tricks.contains(.splitByTags) { ways += ["<b></b>", "<span title=\"t\"></span>", "<!-- c -->"] }
            if tricks.contains(.nul) { ways.append("\u{0}") }
            if tricks.contains(.rawText) { ways += ["<script>x</script>", "<style>y</style>"] }
            if tricks.contains(.hidden) { ways.append("<span hidden>z</span>") }
            switch pick(ways) {
            case "plain": return text
            case "upper": return text.uppercased()
            case "brackets": return Self.replace(Self.replace(text, "[", "&#91;"), "]", "&rsqb;")
            case "p without semicolon": return Self.replace(text, "p", "&#x70")
            case "soft hyphen": return Self.replace(text, "i", "i&shy;")
            case let piece: return Self.insert(piece, into: text, using: &rng)
            }
        }

        /// The secret: a word that appears nowhere else, maybe broken up.
        func secret() -> (word: String, written: String) {
            let word = "Qz" + String(UInt32.random(in: 100_000...999_999, using: &rng)) + "Jx"
            var written = word
            if tricks.contains(.splitByTags) && chance(0.5) { written = Self.insert(pick(["<b>", "</b>", "<i></i>", "<br>"]), into: written, using: &rng) }
            if tricks.contains(.entities) && chance(0.5) { written = Self.replace(written, "z", "&#122;") }
            return (word, written)
        }

        out += pick(["", "<!DOCTYPE html>", "<html><head><title>x</title></head><body>"])
        for _ in 0..<spanCount {
            out += filler() + unshown()
            if tricks.contains(.splitByTags) && chance(0.5) { out += pick(["<p>", "<div>", "<b>", "<table><tr><td>", "<ul><li>"]) }
            out += marker("[[private]]")
            let (word, written) = secret()
            secrets.append(word)
            out += filler()
            if chance(0.5) { out += unshown() }
            if tricks.contains(.splitByTags) && chance(0.5) { out += pick(["</p><p>", "<i>", "</b>", "</td><td>", "<a href=\"http://x/\">"]) }
            out += written
            if tricks.contains(.css) && chance(0.5) {
                out += pick(["<span title=\"" + word + "\"></span>", "<img alt=\"" + word + "\">", "<a href=\"https://x.example/" + word + "\">l</a>"])
            }
            if tricks.contains(.embedded) && chance(0.5) {
                out += pick(["<img src=\"data:image/svg+xml,&lt;svg&gt;" + word + "\">", "<iframe srcdoc=\"" + word + "\"></iframe>",
                             "<a href=\"javascript:alert('" + word + "')\">j</a>"])
            }
            out += filler()
            out += marker("[[/private]]")
            out += filler()
            if tricks.contains(.css) && chance(0.3) {
                out += pick(["<style>p::before { content: \"x\" } p::after { content: attr(title) }</style>",
                             "<p style=\"color: red; background: url(x)\" title=\"t\">styled</p>"])
            }
        }
        out += filler()
        self.html = out
        self.secrets = secrets
    }

    /// `text` with every `old` replaced by `new`.
    static func replace(_ text: String, _ old: Character, _ new: String) -> String {
        var out = ""
        for character in text { if character == old { out += new } else { out.append(character) } }
        return out
    }

    /// `piece` put at a random place inside `text`.
    static func insert(_ piece: String, into text: String, using rng: inout SplitMix64) -> String {
        var scalars = Array(text.unicodeScalars)
        let at = Int.random(in: 1..<max(2, scalars.count), using: &rng)
        scalars.insert(contentsOf: piece.unicodeScalars, at: min(at, scalars.count))
        return String(String.UnicodeScalarView(scalars))
    }
}
