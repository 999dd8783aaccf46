import HTML
import Policy
import Redaction
import TestSupport
import Testing

/// A red team's round (issue 21): the rebuild read HTML in the order of Gumbo's tree, all
/// text visible, while a browser may show a span's markers around other text — the parser
/// moves text written inside a table before it (foster parenting), a `<tfoot>` written first
/// is drawn last, a closed `<details>`, a `<meter>`'s fallback or a class a style sheet hides
/// take an inner marker out of sight, a `dir` swaps two runs. The sender then sees
/// `[[private]] secret [[/private]]` and the postcard showed the secret. Now such a part is
/// refused (``PolicyError/MarkerProblem/otherOrder``); spans as composers write them are not.
@Suite("HTML whose spans a browser may show around other text is refused; composers' spans are censored")
struct OtherOrderTests {
    private func pick<T>(_ items: [T], _ rng: inout SplitMix64) -> T { items[Int(rng.next() % UInt64(items.count))] }

    private func words(_ rng: inout SplitMix64) -> String {
        (0..<Int(1 + rng.next() % 4)).map { _ in pick(["the", "plan", "for", "Monday", "budget", "ok", "notes", "see"], &rng) }
            .joined(separator: " ")
    }

    /// One hostile document: its secret stands between the markers as a browser shows them, but
    /// not in document order with every text shown.
    private func hostile(_ rng: inout SplitMix64) -> (html: String, secret: String) {
        let secret = "S\(rng.next() % 1_000_000)X"
        let a = words(&rng), b = words(&rng)
        // Wrappers a browser hides (the inner markers vanish) or shows elsewhere.
        let hiding: [(String, String)] = [
            ("<details><summary>more</summary>", "</details>"), ("<meter value=\"0.5\">", "</meter>"),
            ("<progress value=\"1\" max=\"2\">", "</progress>"), ("<span class=\"h\">", "</span>"),
            ("<font color=\"#ffffff\">", "</font>"), ("<span style=\"visibility:hidden\">", "</span>"),
            ("<span slot=\"gone\">", "</span>"), ("<x-box>", "</x-box>"), ("<span id=\"z\">", "</span>"),
        ]
        let style = rng.next() % 2 == 0 ? "<style>.h{display:none} #z{font-size:0}</style>" : ""
        let kind = rng.next() % 7
        var body: String
        switch kind {
        case 0:  // inner markers hidden: two empty spans in the tree, one span to the sender
            let (open, close) = pick(hiding, &rng)
            body = "<p>[[private]] \(a) \(open)[[/private]]\(close) \(secret) \(open)[[private]]\(close) \(b) [[/private]]</p>"
        case 1:  // foster parenting: markers written between a table and its rows
            let cell = pick(["<td>\(secret)</td>", "<td><img alt=\"\(secret)\" src=\"cid:x\"></td>", "<th>\(secret)</th>"], &rng)
            body = "<p>\(a)</p><table>[[private]]<tr>\(cell)</tr>[[/private]]</table><p>\(b)</p>"
        case 2:  // a caption or a table section drawn elsewhere than written
            body = pick([
                "<p>[[private]]</p><table><tr><td>[[/private]]</td></tr><caption>\(secret)</caption></table>",
                "<table><tfoot><tr><td>[[/private]]</td></tr></tfoot><tbody><tr><td>[[private]]</td></tr><tr><td>\(secret)</td></tr></tbody></table>",
                "<table><tbody><tr><td>\(secret)</td></tr><tr><td>[[/private]]</td></tr></tbody><thead><tr><td>[[private]]</td></tr></thead></table>",
            ], &rng)
        case 3:  // a direction swapping two runs
            let (open, close) = pick([("<span dir=\"rtl\">", "</span>"), ("<bdo dir=\"rtl\">", "</bdo>")], &rng)
            body = "<p>[[private]] \(open)<bdi>[[/private]]</bdi> <bdi>\(secret)</bdi>\(close) \(a)</p>"
        case 4:  // a summary written late, drawn first
            body = "<p>[[private]]</p><details open><p>[[/private]]</p><summary>\(secret)</summary></details>"
        case 5:  // styled boxes reordered
            body = "<div style=\"display:flex\"><span>[[private]]</span><span style=\"order:3\">[[/private]]</span>"
                + "<span style=\"order:2\">\(secret)</span></div>"
        default:  // floated
            body = "<p>[[private]] \(a) <span style=\"float:right\">[[/private]]</span> \(secret)</p>"
        }
        let filler = (0..<Int(rng.next() % 3)).map { _ in "<p>\(words(&rng))</p>" }.joined()
        return ("<html><head>\(style)</head><body>\(filler)\(body)\(filler)</body></html>", secret)
    }

    /// One document as composers write spans: within a paragraph, across plain or identically
    /// styled paragraphs, inside one table cell, around formatting and links.
    private func friendly(_ rng: inout SplitMix64) -> (html: String, secret: String) {
        let secret = "S\(rng.next() % 1_000_000)X"
        let a = words(&rng), b = words(&rng)
        let p = pick([
            ("<p>", "</p>"), ("<div>", "</div>"), ("<p class=\"MsoNormal\"><span style=\"font-family:Calibri\">", "</span></p>"),
            ("<div dir=\"ltr\">", "</div>"), ("<p style=\"margin:0\">", "</p>"),
        ], &rng)
        let inner = pick(["\(secret)", "<b>\(secret)</b>", "<a href=\"https://example.org/\(secret)\">\(secret)</a>",
                          "<i>x</i> \(secret) <u>y</u>"], &rng)
        let body: String
        switch rng.next() % 4 {
        case 0: body = "\(p.0)\(a) [[private]]\(inner)[[/private]] \(b)\(p.1)"
        case 1: body = "\(p.0)\(a) [[private]]\(inner)\(p.1)\(p.0)\(b)[[/private]]\(p.1)"
        case 2: body = "<table><tr><td>\(a)</td><td>[[private]] \(inner) [[/private]]</td></tr></table>"
        default: body = "<ul><li>\(a) [[private]]\(inner)</li><li>\(b) [[/private]]</li></ul>"
        }
        let signature = rng.next() % 2 == 0 ? "<table><tr><td>--<br>Alice</td></tr></table>" : ""
        return ("<html><body><div dir=\"ltr\">\(body)\(signature)</div></body></html>", secret)
    }

    @Test("400 random documents whose spans a browser shows around other text: refused, or the secret censored all the same")
    func refusedWhenOrdersDiffer() throws {
        var refused = 0
        for seed in 0..<UInt64(400) {
            var rng = SplitMix64(seed: 21_000 + seed)
            let (html, secret) = hostile(&rng)
            do {
                let rebuilt = try HTMLRebuild.rebuilt(html, redactor: .standard, mode: .censor, part: "part 1 (text/html)")
                #expect(!(try Reading(rebuilt.html)).shows(secret), "seed \(seed): the postcard shows the secret: \(html.debugDescription)")
            } catch let error as PolicyError {
                #expect(error.code == .unbalancedMarkers, "seed \(seed): \(error)")
                refused += 1
            }
        }
        // In these documents the tree's order puts the secret outside every span: only a refusal keeps it out.
        #expect(refused == 400, "\(refused) of 400 refused")
    }

    @Test("400 random documents with spans as composers write them: none refused, every secret censored")
    func composersSpansCensored() throws {
        for seed in 0..<UInt64(400) {
            var rng = SplitMix64(seed: 22_000 + seed)
            let (html, secret) = friendly(&rng)
            let rebuilt = try HTMLRebuild.rebuilt(html, redactor: .standard, mode: .censor, part: "part 1 (text/html)")
            let reading = try Reading(rebuilt.html)
            #expect(!reading.shows(secret), "seed \(seed): \(html.debugDescription)")
            #expect(rebuilt.text.contains(Redactor.standard.placeholder), "seed \(seed)")
        }
    }

    @Test("a link or title left open inside a span is reopened by the parser in later blocks without its attributes")
    func reopenedElementsKeepNoAttributes() throws {
        for seed in 0..<UInt64(100) {
            var rng = SplitMix64(seed: 23_000 + seed)
            let secret = "S\(rng.next() % 1_000_000)X"
            let open = pick(["<a href=\"https://example.org/\(secret).pdf\">", "<b title=\"\(secret)\">",
                             "<a href=\"mailto:\(secret)@example.org\" title=\"\(secret)\">", "<i lang=\"en\" title=\"\(secret)\">"], &rng)
            let later = (0..<Int(1 + rng.next() % 4)).map { _ in "<p>\(words(&rng))</p>" }.joined()
            let html = "<p>see [[private]]the \(open)\(secret) file[[/private]] today</p>\(later)"
            let rebuilt = try HTMLRebuild.rebuilt(html, redactor: .standard, mode: .censor, part: "part 1 (text/html)")
            #expect(!(try Reading(rebuilt.html)).shows(secret), "seed \(seed): \(html.debugDescription)")
        }
    }
}

/// A hostile review of the round above: in HTML a line end is a space, so bidirectional
/// controls reorder across source lines; a style sheet's type and place selectors hide
/// elements that carry no attribute.
@Suite("HTML: controls across source lines, and style sheets that pick elements by name or place")
struct OtherOrderReviewTests {
    private func pick<T>(_ items: [T], _ rng: inout SplitMix64) -> T { items[Int(rng.next() % UInt64(items.count))] }

    @Test("200 random documents: isolates or overrides split over source lines (LF, CR, CRLF, references) are refused")
    func controlsAcrossSourceLines() throws {
        for seed in 0..<UInt64(200) {
            var rng = SplitMix64(seed: 24_000 + seed)
            let end = pick(["\n", "\r", "\r\n", " \n "], &rng)
            let (rli, lri, pdi) = pick([("\u{2067}", "\u{2066}", "\u{2069}"), ("&#x2067;", "&#x2066;", "&#x2069;"),
                                        ("\u{202B}", "\u{202A}", "\u{202C}")], &rng)
            let html = "<p>[[private]]\(end)\(rli)\(lri)\(end)[[/private]]\(end)\(pdi)\(lri)S\(seed)X\(pdi)\(pdi)</p>"
            #expect(throws: PolicyError.self, "seed \(seed): \(html.debugDescription)") {
                try HTMLRebuild.rebuilt(html, redactor: .standard, mode: .censor, part: "part 1 (text/html)")
            }
            // A right-to-left override on an earlier source line, a reversed span after it: a marker a browser shows.
            let reversed = "<p>\(pick(["\u{202E}", "&#x202E;"], &rng))\(end)]]etavirp/[[TERCES\(seed)]]etavirp[[</p>"
            #expect(Redactor.standard.hasMarkersInAnyRendering(reversed, type: "text", subtype: "html"), "seed \(seed): \(reversed.debugDescription)")
        }
    }

    @Test("200 random documents: inner markers hidden by selectors without attributes (type, nth-of-type, siblings) are refused")
    func selectorsWithoutAttributes() throws {
        for seed in 0..<UInt64(200) {
            var rng = SplitMix64(seed: 25_000 + seed)
            let tag = pick(["b", "i", "span", "em", "u"], &rng)
            let selector = pick(["\(tag):nth-of-type(2),\(tag):nth-of-type(3)", "\(tag) + \(tag)", "\(tag) ~ \(tag)",
                                 "\(tag):not(:first-child)", "\(tag):nth-child(2),\(tag):nth-child(3)"], &rng)
            let hide = pick(["display:none", "visibility:hidden", "font-size:0", "color:transparent", "opacity:0"], &rng)
            let html = "<style>\(selector){\(hide)}</style><p><\(tag)>[[private]]</\(tag)> <\(tag)>[[/private]]</\(tag)> S\(seed)X "
                + "<\(tag)>[[private]]</\(tag)> <\(tag)>[[/private]]</\(tag)></p>"
            #expect(throws: PolicyError.self, "seed \(seed): \(html.debugDescription)") {
                try HTMLRebuild.rebuilt(html, redactor: .standard, mode: .censor, part: "part 1 (text/html)")
            }
        }
        // A style sheet that hides nothing leaves spans across formatting alone (Outlook writes one).
        let outlook = "<style>p.MsoNormal{mso-style-priority:99} a:link{mso-style-link:x}</style>"
            + "<p class=\"MsoNormal\"><b>[[private]]</b> Q1X <i>[[/private]]</i></p>"
        #expect(try !HTMLRebuild.rebuilt(outlook, redactor: .standard, mode: .censor, part: "part 1").text.contains("Q1X"))
    }
}
