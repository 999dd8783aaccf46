import Foundation
import HTML
import TestSupport
import Testing

/// ``HTMLNesting``: the pre-scan that keeps deeply nested HTML away from
/// Gumbo's quadratic tree construction. Its bound must never fall below the
/// depth Gumbo really builds (hostile markup would get through), and must stay
/// far below the limit for ordinary mail (it would be withheld).
@Suite("HTML nesting bound")
struct HTMLNestingTests {
    /// The hostile shapes, `n` levels each, with a marked span at the end.
    static func hostile(_ shape: String, _ n: Int) -> String {
        let span = "[[private]]x[[/private]]"
        return switch shape {
        case "div": String(repeating: "<div>", count: n) + span
        case "unknown": String(repeating: "<x-a>", count: n) + span
        case "formatting": (0..<n).map { ["<b>", "<i>", "<font>"][$0 % 3] }.joined() + span
        case "formatting-ids": (0..<n).map { "<b id=\($0)>" }.joined() + span
        case "table": String(repeating: "<table><tr><td>", count: n) + span
        case "svg": "<svg>" + String(repeating: "<g>", count: n) + "</svg><p>" + span
        case "math": "<math>" + String(repeating: "<mrow>", count: n) + "</math><p>" + span
        // End tags Gumbo ignores (the `b` is below a table cell) must not lower the bound.
        case "ignored-ends": String(repeating: "<b><table><td></b></td></table>", count: n) + span
        case "stray-ends": String(repeating: "<div></span></x-a>", count: n) + span
        case "commented-ends": String(repeating: "<div><!-- </div> --><style></div></style><i title='</div>'></i>", count: n) + span
        default: String(repeating: "<p><span>", count: n) + span
        }
    }

    @Test("each hostile shape nested 3,000 deep is refused before the parse",
          arguments: ["div", "unknown", "formatting", "formatting-ids", "table", "svg", "math", "ignored-ends", "stray-ends", "commented-ends"])
    func hostileIsTooDeep(_ shape: String) {
        let html = Self.hostile(shape, 3_000)
        #expect(HTMLNesting(Array(html.utf8)).depth > HTMLNesting.limit, "\(shape)")
        #expect(throws: HTMLError(.tooDeep)) { try HTMLDocument(parsing: html) }
    }

    @Test("repeated unclosed <a>, <li>, <td>, <p> stay shallow, as Gumbo builds them")
    func impliedEndsStayShallow() throws {
        for html in [String(repeating: "<a href=#>x", count: 3_000), "<ul>" + String(repeating: "<li>x", count: 3_000),
                     "<table>" + String(repeating: "<tr><td>x<td>y", count: 3_000), String(repeating: "<p>x", count: 3_000),
                     Self.hostile("p-span", 3_000), String(repeating: "<div><span>x</div>", count: 3_000)] {
            let bound = HTMLNesting(Array(html.utf8)).depth
            #expect(bound < 10, "\(html.prefix(30)): \(bound)")
            #expect(try HTMLDocument(parsing: html).depth < 10)
        }
    }

    /// What the bound does not follow: a formatting element popped because another ended
    /// stays counted (Gumbo may reopen it, and whether it does cannot be told without its
    /// tree construction). Shallow in Gumbo, too deep here: withheld, not parsed.
    @Test("formatting elements left open in 3,000 paragraphs are counted: over-estimated, never under")
    func unclosedFormattingOverEstimates() throws {
        for html in [String(repeating: "<p><font face=x>text", count: 3_000), String(repeating: "<div><b>x</div>", count: 3_000)] {
            #expect(HTMLNesting(Array(html.utf8)).depth > HTMLNesting.limit)
        }
    }

    /// Random tag soup from the elements whose tree-construction rules differ
    /// most (scopes, formatting elements, implied ends, raw text, foreign
    /// content, comments and quoted `>`), a few hundred tags each: the depth
    /// Gumbo builds is never more than three times the bound, plus the
    /// `html` and `body` it adds.
    @Test("on random tag soup, Gumbo's depth stays within three times the bound")
    func boundHoldsOnTagSoup() throws {
        let names = ["div", "p", "span", "b", "i", "a", "font", "nobr", "u", "table", "tr", "td", "th", "tbody", "caption",
                     "ul", "ol", "li", "dl", "dd", "dt", "select", "option", "button", "template", "object", "x-u", "svg", "g",
                     "foreignObject", "math", "mi", "mrow", "style", "textarea", "title", "script", "h1", "pre", "form", "marquee",
                     "br", "img", "col", "colgroup", "frameset", "head", "body", "html", "plaintext"]
        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["HTML_NESTING_SEED"] ?? "") ?? 0x21_6075_3B0)
        var worst = 0.0
        func token(_ rng: inout SplitMix64) -> String {
            let name = names.randomElement(using: &rng)!
            return switch Int.random(in: 0..<21, using: &rng) {
            case 0..<9: "<\(name)>"
            case 9..<15: "</\(name)>"
            case 15: "<!-- </\(name)> -->"
            case 16: "<\(name) title='a>b</div>'>"
            case 17: "<\(name)/>"
            case 18: "<![CDATA[ </\(name)> ]]>"
            case 19: "<\(name) id=\(Int.random(in: 0..<3, using: &rng))>"
            default: "x"
            }
        }
        for round in 0..<(ProcessInfo.processInfo.environment["HTML_NESTING_SEED"] == nil ? 600 : 6_000) {
            var html = ""
            if round % 2 == 0 {
                for _ in 0..<Int.random(in: 50...400, using: &rng) { html += token(&rng) }
            } else {
                // A short unit repeated: how a bound that misses one level a unit would fall behind.
                let unit = (0..<Int.random(in: 2...8, using: &rng)).map { _ in token(&rng) }.joined()
                html = String(repeating: unit, count: Int.random(in: 20...150, using: &rng))
            }
            let bound = HTMLNesting(Array(html.utf8)).depth
            guard bound <= HTMLNesting.limit else { continue }
            let real = try HTMLDocument(parsing: html).depth
            worst = max(worst, Double(real) / Double(bound + 1))
            #expect(real <= 3 * bound + 3, "round \(round): Gumbo nests \(real), bound \(bound): \(html)")
        }
        print("HTMLNesting tag soup: the most Gumbo nested per bound level: \(worst)")
        #expect(worst > 0)
    }

    /// The HTML parts of the public corpus's mails (decoded by Python's email package).
    @Test("the public corpus's HTML mails bound far below the limit",
          .enabled(if: Paths.publicCorpus != nil, "../shared/corpora/public is absent: corpus NOT measured"))
    func corpusStaysBelowLimit() throws {
        let root = try #require(Paths.publicCorpus)
        let script = """
        import email, email.policy, json, pathlib, sys
        out = []
        for path in sorted(pathlib.Path(sys.argv[1]).rglob('*')):
            if not path.is_file() or path.suffix in ('.json', '.asc', '.key', '.tsv'): continue
            try: message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            except Exception: continue
            for part in message.walk():
                if part.get_content_type() != 'text/html': continue
                try: out.append(part.get_content())
                except Exception: pass
        json.dump(out, sys.stdout)
        """
        let result = try run("python3", ["-c", script, root.path])
        try #require(result.status == 0, "\(result.errors.suffix(300))")
        let parts = try JSONDecoder().decode([String].self, from: Data(result.stdout))
        #expect(parts.count >= 20, "the corpus has HTML mails")
        let bounds = parts.map { HTMLNesting(Array($0.utf8)).depth }
        let deepest = bounds.max() ?? 0
        print("HTMLNesting corpus: \(parts.count) HTML parts, bounds up to \(deepest), Gumbo depths up to \(try parts.map { try HTMLDocument(parsing: $0).depth }.max() ?? 0)")
        // Measured 2026-11-25: 56 parts, the deepest bound 90 (Gumbo nests it 20 deep).
        #expect(deepest * 8 <= HTMLNesting.limit, "deepest bound \(deepest) of \(parts.count) parts")
        for html in parts { _ = try HTMLDocument(parsing: html) }
    }
}
