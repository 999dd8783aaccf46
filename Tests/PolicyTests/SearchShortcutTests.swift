@testable import Policy
import TestSupport
import Testing

/// The marker search's shortcuts for random-byte HTML (issue 21: under 1 s per MB) give what
/// the code they replace gave: each is checked against that code, kept here as the oracle, on
/// random texts made of what each shortcut could get wrong.
@Suite("Marker search shortcuts agree with the code they replace")
struct SearchShortcutTests {
    /// Scalars of every kind a reading holds: ASCII, Latin-1, U+FFFD, marks that join the
    /// scalar before, a mark that joins the one after, invisibles, controls, astral scalars.
    static let kinds: [Unicode.Scalar] = [
        "a", "R", "r", "T", "t", "L", "l", "[", "]", "%", "=", "&", "\\", "\n", "\r", " ", "p", "P", "I", "V", "/",
        "\u{E9}", "\u{C9}", "\u{FFFD}", "\u{301}", "\u{903}", "\u{200D}", "\u{600}", "\u{130}", "\u{212A}", "\u{3A3}",
        "\u{200B}", "\u{AD}", "\u{1F1E6}", "\u{D55C}", "\u{1100}", "\u{202E}", "\u{202A}", "\u{202C}", "\u{2066}", "\u{2069}", "\u{202F}", "\u{2065}",
        "\u{2029}", "\u{1F600}", "\u{10FFFF}", "\u{80}", "\u{7FF}", "\u{800}", "\u{FFFF}", "\u{10000}",
    ]

    static func randomScalars(_ random: inout SeededRandom, count: Int) -> [Unicode.Scalar] {
        (0..<count).map { _ in kinds.randomElement(using: &random)! }
    }

    @Test("hexEscapesDecoded: escapes decoded alone give what the whole text as bytes gave")
    func hexEscapes() {
        // The former body: the whole text as UTF-8 with the escapes' bytes, read as UTF-8.
        func former(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
            var bytes: [UInt8] = []
            var index = 0
            while index < s.count {
                if s[index] == "%" || s[index] == "=", index + 2 < s.count, let high = hexValue(s[index + 1]), let low = hexValue(s[index + 2]) {
                    bytes.append(UInt8(high << 4 | low))
                    index += 3
                } else {
                    UTF8.encode(s[index]) { bytes.append($0) }
                    index += 1
                }
            }
            return Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
        }
        var random = SeededRandom(seed: 2026_11_27_21)
        // Escapes of bytes that start, continue or break UTF-8 sequences, next to raw scalars.
        let escapes = ["%E2", "%80", "%AE", "%C3", "%A9", "%F0", "%9F", "%98", "%ED", "%A0", "%FF", "%C0", "%41", "=5B", "=E2", "=", "%", "%G1"]
        var mismatches = 0
        for round in 0..<3000 {
            var text: [Unicode.Scalar] = []
            for _ in 0..<Int.random(in: 0...30, using: &random) {
                if Bool.random(using: &random) {
                    text += escapes.randomElement(using: &random)!.unicodeScalars
                } else {
                    text.append(Self.kinds.randomElement(using: &random)!)
                }
            }
            if Redactor.hexEscapesDecoded(text) != former(text) {
                mismatches += 1
                if mismatches < 5 { Issue.record("round \(round): \(String(String.UnicodeScalarView(text)).debugDescription)") }
            }
        }
        #expect(mismatches == 0)
    }

    /// `text.contains(needle)` as Policy reads it: by characters (the standard library's search;
    /// Policy does not import Foundation, whose `contains` this file would get, which compares
    /// UTF-16 and so finds `rtl` inside the character `l` and a combining mark).
    static func containsByCharacters(_ text: String, _ needle: String) -> Bool {
        let characters = Array(text), wanted = Array(needle)
        guard characters.count >= wanted.count else { return false }
        return (0...(characters.count - wanted.count)).contains { start in
            wanted.indices.allSatisfy { characters[start + $0] == wanted[$0] }
        }
    }

    @Test("mentionsRTL: what lower-casing the whole text and searching it by characters said")
    func mentionsRTL() {
        var random = SeededRandom(seed: 2026_11_27_22)
        var mismatches = 0, yes = 0
        for round in 0..<20000 {
            var text = Self.randomScalars(&random, count: Int.random(in: 0...8, using: &random))
            // Mostly an `rtl` in some case, among scalars that may join it.
            if Int.random(in: 0..<4, using: &random) > 0 {
                let at = Int.random(in: 0...text.count, using: &random)
                text.insert(contentsOf: ["rR", "tT", "lL"].map { $0.unicodeScalars.randomElement(using: &random)! }, at: at)
            }
            let former = Self.containsByCharacters(String(String.UnicodeScalarView(text)).lowercased(), "rtl")
            if former { yes += 1 }
            if Redactor.mentionsRTL(text) != former {
                mismatches += 1
                if mismatches < 5 { Issue.record("round \(round): \(String(String.UnicodeScalarView(text)).debugDescription) was \(former)") }
            }
        }
        #expect(mismatches == 0)
        #expect(yes > 1000 && yes < 19000, "both answers met: \(yes) of 20000")
    }

    @Test("containsAny: what searching for each needle alone found")
    func containsAnyNeedle() {
        var random = SeededRandom(seed: 2026_11_27_23)
        let needleSets: [[[Unicode.Scalar]]] = [
            [folded(Array("[[private]]".unicodeScalars)), folded(Array("[[/private]]".unicodeScalars))],
            [folded(Array("<<p".unicodeScalars)), folded(Array("[/p".unicodeScalars))],   // two first scalars
            [folded(Array("%p".unicodeScalars)), folded(Array("ki".unicodeScalars))],    // a letter first: one by one
            [folded(Array("[".unicodeScalars))],
        ]
        let pieces = ["[[private]]", "[[/private]]", "[[PRIV\u{200B}ATE]]", "[[pri", "vate]]", "[", "[[", "<<p", "[/p", "%p", "\u{212A}i", "ki"]
        var mismatches = 0, found = 0
        for round in 0..<6000 {
            var text = Self.randomScalars(&random, count: Int.random(in: 0...40, using: &random))
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                text.insert(contentsOf: pieces.randomElement(using: &random)!.unicodeScalars, at: Int.random(in: 0...text.count, using: &random))
            }
            let needles = needleSets[round % needleSets.count]
            let former = needles.contains { find($0, in: text, from: text.startIndex) != nil }
            if former { found += 1 }
            if containsAny(needles, in: text) != former {
                mismatches += 1
                if mismatches < 5 { Issue.record("round \(round): \(String(String.UnicodeScalarView(text)).debugDescription) was \(former)") }
            }
        }
        #expect(mismatches == 0)
        #expect(found > 500 && found < 5500, "both answers met: \(found) of 6000")
    }

    @Test("visual windows: a marker in a whole visual order is found in the windows' orders or in the text, and only then")
    func visualWindows() {
        let redactor = Redactor.standard
        let markers = [folded(Array(redactor.open.unicodeScalars)), folded(Array(redactor.close.unicodeScalars))]
        var random = SeededRandom(seed: 2026_11_27_24)
        // Markers whole, reversed, split around controls; controls of every kind; lines ended every way.
        let pieces = ["[[private]]", "]]etavirp[[", "[[/private]]", "]]etavirp/[[", "[[pri", "vate]]", "]]eta", "virp[[", "[[", "]]",
                      "\u{202E}", "\u{202D}", "\u{202B}", "\u{202A}", "\u{202C}", "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}",
                      "\n", "\r", "\u{2029}", "\u{200B}", "\u{200B}\u{200B}\u{200B}", "a", "xyz", "\u{FFFD}", " ", "(", "<"]
        var mismatches = 0, found = 0, windowCounts = Set<Int>()
        for round in 0..<3000 {
            let text = (0..<Int.random(in: 0...30, using: &random)).map { _ in
                // Long runs too, so that parts fall lines and more than a marker's length apart.
                Int.random(in: 0..<8, using: &random) == 0 ? String(repeating: "a", count: Int.random(in: 10...40, using: &random))
                    : pieces.randomElement(using: &random)!
            }.joined()
            let scalars = Array(text.unicodeScalars)
            windowCounts.insert(Redactor.bidiWindows(scalars, context: 12).count)
            // The text itself too, as every caller searches it (``Redactor/hasMarkers(_:)``).
            let windowed = redactor.hasMarkersInDecodings(scalars: scalars) || containsAny(markers, in: scalars)
            // Every reading's whole visual orders, and the text itself.
            let whole = redactor.forEachDecodedScalarReading(scalars) { reading, _ in containsAny(markers, in: reading) }
                || containsAny(markers, in: scalars)
            if windowed { found += 1 }
            if windowed != whole {
                mismatches += 1
                if mismatches < 5 { Issue.record("round \(round): \(text.debugDescription): windows \(windowed), whole \(whole)") }
            }
        }
        #expect(mismatches == 0)
        #expect(found > 300 && found < 2900, "both answers met: \(found) of 3000")
        #expect(windowCounts.contains(2) && windowCounts.contains(3), "texts with parts apart: \(windowCounts.sorted())")
    }

    @Test("visual readings: what they were, appended scalar by scalar, controls at every place")
    func visualReadings() {
        var random = SeededRandom(seed: 2026_11_27_27)
        let quiet: [Unicode.Scalar] = ["a", "\u{FFFD}", "\u{2065}", "\u{202F}", "\u{2029}", "\n", "\u{200B}", "[", "(", "\u{AB}", "\u{203A}"]
        let controls: [Unicode.Scalar] = ["\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}", "\u{202E}", "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}"]
        var mismatches = 0, made = 0
        for round in 0..<4000 {
            // Lengths around the eight-scalar steps of the control scan, controls at their edges too.
            var text = (0..<Int.random(in: 0...70, using: &random)).map { _ in quiet.randomElement(using: &random)! }
            for _ in 0..<Int.random(in: 0...3, using: &random) where !text.isEmpty {
                text[Int.random(in: 0..<text.count, using: &random)] = controls.randomElement(using: &random)!
            }
            let now = Redactor.visualReadings(text)
            if !now.isEmpty { made += 1 }
            if now != Self.formerVisualReadings(text) {
                mismatches += 1
                if mismatches < 5 { Issue.record("round \(round): \(String(String.UnicodeScalarView(text)).debugDescription)") }
            }
        }
        #expect(mismatches == 0)
        #expect(made > 1000 && made < 3900, "both answers met: \(made) of 4000")
    }

    /// The visual orders as ``Redactor/forEachVisualReading(_:_:)`` made them before (7b51a5f), appended scalar by scalar.
    static func formerVisualReadings(_ s: [Unicode.Scalar]) -> [[Unicode.Scalar]] {
        guard s.contains(where: { (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value) }) else { return [] }
        var kept: [Unicode.Scalar] = [], levels: [UInt8] = []
        var stack: [UInt8] = []
        var level: UInt8 = 0
        let deepest: UInt8 = 15
        for scalar in s {
            switch scalar.value {
            case 0x202B, 0x202E, 0x2067, 0x2068:
                stack.append(level)
                level = min(deepest, level | 1 == level ? level + 2 : level | 1)
            case 0x202A, 0x202D, 0x2066:
                stack.append(level)
                level = min(deepest - 1, level & 1 == 0 ? level + 2 : level + 1)
            case 0x202C, 0x2069:
                level = stack.popLast() ?? 0
            case 0x0A, 0x0D, 0x2029:
                stack.removeAll()
                level = 0
                kept.append(scalar)
                levels.append(0)
            default:
                kept.append(scalar)
                levels.append(level)
            }
        }
        let highest = levels.max() ?? 0
        guard highest > 0 else { return [] }
        let mirrors: [Unicode.Scalar: Unicode.Scalar] = [
            "[": "]", "]": "[", "(": ")", ")": "(", "{": "}", "}": "{", "<": ">", ">": "<",
            "\u{AB}": "\u{BB}", "\u{BB}": "\u{AB}", "\u{2039}": "\u{203A}", "\u{203A}": "\u{2039}",
        ]
        var mirrored = kept
        for index in mirrored.indices where levels[index] & 1 == 1 {
            if let mirror = mirrors[mirrored[index]] { mirrored[index] = mirror }
        }
        func reordered(_ text: [Unicode.Scalar]) -> [Unicode.Scalar] {
            var text = text, levels = levels
            for threshold in stride(from: highest, through: 1, by: -1) {
                var index = 0
                while index < text.count {
                    guard levels[index] >= threshold else { index += 1; continue }
                    var end = index
                    while end < text.count && levels[end] >= threshold { end += 1 }
                    text[index..<end].reverse()
                    levels[index..<end].reverse()
                    index = end
                }
            }
            return text
        }
        return [reordered(mirrored), reordered(kept)]
    }

    @Test("String(scalars:): the text String.UnicodeScalarView made")
    func textOfScalars() {
        var random = SeededRandom(seed: 2026_11_27_25)
        for _ in 0..<2000 {
            var text = Self.randomScalars(&random, count: Int.random(in: 0...50, using: &random))
            text += (0..<Int.random(in: 0...4, using: &random)).compactMap { _ in Unicode.Scalar(UInt32.random(in: 0...0x10FFFF, using: &random)) }
            let made = String(scalars: text)
            #expect(made == String(String.UnicodeScalarView(text)) && Array(made.unicodeScalars) == text && Array(made.utf8) == text.flatMap { Array(String($0).utf8) })
            if text.count > 2 { #expect(String(scalars: text[1...]) == String(String.UnicodeScalarView(text[1...]))) }
        }
    }

    /// HTML's renderings as ``Redactor/forEachRendering(_:type:subtype:parameters:_:)`` made them
    /// before (7b51a5f): each a text, made from the text before it.
    static func formerHTMLRenderings(_ text: String) -> [String] {
        func withDirectionsAsControls(_ html: String) -> String? {
            guard containsByCharacters(html.lowercased(), "rtl") else { return nil }
            var out = String.UnicodeScalarView()
            let scalars = Array(html.unicodeScalars)
            var index = 0
            while index < scalars.count {
                guard scalars[index] == "<", let end = scalars[index...].prefix(4096).firstIndex(of: ">") else {
                    out.append(scalars[index])
                    index += 1
                    continue
                }
                let tag = String(String.UnicodeScalarView(scalars[index...end])).lowercased()
                if tag.hasPrefix("</bdo") {
                    out.append("\u{202C}")
                } else if !tag.hasPrefix("</") && containsByCharacters(tag, "rtl") {
                    out.append("\u{202E}")
                }
                index = end + 1
            }
            return String(out)
        }
        var out = [text]
        let decoded = String(String.UnicodeScalarView(decodeEntities(text)))
        out.append(decoded)
        if containsByCharacters(decoded, "&") { out.append(String(String.UnicodeScalarView(decodeEntities(decoded)))) }
        out.append(Redactor.cssUnescaped(decoded))
        out.append(Redactor.percentDecoded(decoded))
        if let directed = withDirectionsAsControls(decoded) { out.append(directed) }
        for payload in Redactor.dataURLPayloads(decoded) {
            out.append(payload)
            let inner = String(String.UnicodeScalarView(decodeEntities(payload)))
            out += [inner, Redactor.cssUnescaped(inner), Redactor.percentDecoded(inner)]
        }
        return out
    }

    @Test("forEachRendering: HTML's renderings as before, in order, whether made as texts or as scalars")
    func htmlRenderings() {
        var random = SeededRandom(seed: 2026_11_27_26)
        let pieces = ["&amp;", "&#x5b;", "&lbrack;", "&amp;#91;", "\\5b ", "\\", "%5B", "%", "<bdo dir=rtl>", "</bdo>", "rtl", "RtL", "<p>",
                      "<p dir=\"RTL\">", "data:text/plain,%5b", "data:;base64,W1s=", "\"", "\u{202E}", "\u{FFFD}", "\u{301}", "\u{600}",
                      "a", " ", "\n", "&#x202e;"]
        var scalarForms = 0, mismatches = 0
        for round in 0..<600 {
            let text = (0..<Int.random(in: 0...20, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            var now: [String] = []
            _ = Redactor.standard.forEachRendering(text, type: "text", subtype: "html", parameters: [:]) { (rendering: Redactor.Rendering) in
                if case .scalars = rendering { scalarForms += 1 }
                now.append(rendering.text)
                return false
            }
            if now != Self.formerHTMLRenderings(text) {
                mismatches += 1
                if mismatches < 5 { Issue.record("round \(round): \(text.debugDescription)") }
            }
        }
        #expect(mismatches == 0)
        #expect(scalarForms > 1000)
    }
}
