import Foundation
import Policy
import Testing

@Suite("Marked spans and redaction")
struct RedactorTests {
    let redactor = Redactor.standard

    @Test("plain text: letters keep the text without markers, postcards get a fixed placeholder")
    func plainText() throws {
        let text = "Meet at [[private]]Room 7,\nthird floor[[/private]] at [[PRIVATE]]9[[/Private]]."
        #expect(try redactor.redact(text, mode: .reveal) == "Meet at Room 7,\nthird floor at 9.")
        #expect(try redactor.redact(text, mode: .censor) == "Meet at █████ at █████.")
        #expect(try redactor.redact("no spans here", mode: .censor) == "no spans here")
        #expect(redactor.hasMarkers(text) && !redactor.hasMarkers("plain"))
        // The placeholder does not tell how long the span was.
        let short = try redactor.redact("[[private]]a[[/private]]", mode: .censor)
        let long = try redactor.redact("[[private]]" + String(repeating: "x", count: 500) + "[[/private]]", mode: .censor)
        #expect(short == long)
    }

    @Test("unbalanced and nested markers are errors that name the place")
    func markerErrors() throws {
        let cases: [(String, Int, Int, PolicyError.MarkerProblem)] = [
            ("a\nb [[private]] open", 2, 3, .unclosed),
            ("x [[/private]]", 1, 3, .unopened),
            ("[[private]] a\n  [[private]] b [[/private]]", 2, 3, .nested),
        ]
        for (text, line, column, problem) in cases {
            let position = PolicyError.MarkerPosition(part: "body", line: line, column: column, problem: problem)
            #expect(throws: PolicyError(.unbalancedMarkers, marker: position)) {
                try redactor.redact(text, mode: .censor, part: "body")
            }
            do { _ = try redactor.redact(text, mode: .censor, part: "body") } catch PolicyError.Code.invalidMarkers {
                Issue.record("matched the wrong code")
            } catch PolicyError.Code.unbalancedMarkers {
                // the code matches in a catch clause
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test("configurable markers; bad markers refused")
    func customMarkers() throws {
        let custom = try Redactor(open: "<<", close: ">>", placeholder: "[redacted]")
        #expect(try custom.redact("a <<b>> c", mode: .censor) == "a [redacted] c")
        #expect(throws: PolicyError(.invalidMarkers)) { try Redactor(open: "", close: "x") }
        #expect(throws: PolicyError(.invalidMarkers)) { try Redactor(open: "[p]", close: "[P]") }
        // Markers that hold one another as the spans are searched for, scalar by
        // scalar with invisible scalars passed over, are refused too: a soft
        // hyphen or a combining mark does not make a closing marker that the
        // search would find inside the opening one acceptable.
        #expect(throws: PolicyError(.invalidMarkers)) { try Redactor(open: "[[P]]", close: "[[\u{AD}p]]") }
        #expect(throws: PolicyError(.invalidMarkers)) { try Redactor(open: "<e\u{301}>", close: "<E") }
        #expect(throws: PolicyError(.invalidMarkers)) { try Redactor(open: "{{\u{200B}x}}", close: "{{X") }
        #expect(try Redactor(open: "<<3", close: "3>>").open == "<<3")
        // A marker that an HTML part written by hand would hold as a tag (a red team's round, issue 21).
        for (open, close) in [("<private>", "</private>"), ("<<private>>", "<</private>>"), ("<!p>", "<!/p>"), ("<?p", "?p>"),
                              ("[[a", "</a]]"), ("{x}", "{<Y}")] {
            #expect(throws: PolicyError(.invalidMarkers), "\(open) \(close)") { try Redactor(open: open, close: close) }
        }
        #expect(try Redactor(open: "<<", close: ">>").close == ">>")
        #expect(try Redactor(open: "k<", close: ">k").open == "k<")
    }

    @Test("HTML: no text and no attribute value survives inside a span; tags stay bare")
    func html() throws {
        let html = """
            <p class="intro">Hello <b>Bob</b>, [[private]]the <a href="https://secret.example/x" title="hint">code</a>
            is <i style="color:red">42</i>[[/private]] &amp; bye.</p>
            """
        let censored = try redactor.redactHTML(html, mode: .censor)
        #expect(censored == """
            <p class="intro">Hello <b>Bob</b>, █████<a></a><i></i> &amp; bye.</p>
            """)
        for secret in ["secret.example", "hint", "code", "42", "color", "private"] {
            #expect(!censored.contains(secret), "\(secret) leaked")
        }
        let revealed = try redactor.redactHTML(html, mode: .reveal)
        #expect(revealed == html.replacingOccurrences(of: "[[private]]", with: "").replacingOccurrences(of: "[[/private]]", with: ""))
    }

    @Test("HTML: markers split by tags or written with entities still count")
    func htmlSplitMarkers() throws {
        let html = "<div>[[pri<span>vate]]</span>top &#115;ecret[[&#x2F;private]] end</div>"
        let censored = try redactor.redactHTML(html, mode: .censor)
        #expect(!censored.contains("ecret") && !censored.contains("top"))
        #expect(censored.contains("█████") && censored.contains(" end</div>"))
        #expect(try redactor.redactHTML(html, mode: .reveal).contains("top secret"))
    }

    @Test("HTML: markers inside attribute values and comments are handled; unbalanced ones are errors")
    func htmlAttributes() throws {
        let html = #"<img alt="[[private]]Ann's face[[/private]]" src="a.png"><!-- [[private]]note[[/private]] --><p>x</p>"#
        let censored = try redactor.redactHTML(html, mode: .censor)
        #expect(censored == "<img><p>x</p>")
        #expect(try redactor.redactHTML(html, mode: .reveal) == #"<img alt="Ann's face" src="a.png"><!-- note --><p>x</p>"#)
        #expect(throws: PolicyError.self) { try redactor.redactHTML("<p>[[private]]open</p>", mode: .censor) }
    }

    @Test("HTML: script and style content inside a span is dropped too")
    func htmlRawText() throws {
        let html = "<p>[[private]]<script>var key = 'k';</script><style>.x{}</style>[[/private]]ok</p>"
        #expect(try redactor.redactHTML(html, mode: .censor) == "<p>█████<script></script><style></style>ok</p>")
    }

    /// A hostile review hid markers with scalars a browser draws as nothing
    /// but that are not default-ignorable: line and paragraph separators,
    /// interlinear annotation marks, object replacement. Anywhere inside
    /// either marker, once or several times, they do not stop it being one.
    @Test func markersWithDrawnAsNothing() throws {
        var random = SystemRandomNumberGenerator()   // each failure names its scalars
        let hiders: [Character] = ["\u{2028}", "\u{2029}", "\u{FFF9}", "\u{FFFA}", "\u{FFFB}", "\u{FFFC}"]
        for _ in 0..<200 {
            func hidden(_ marker: String) -> String {
                var scalars = Array(marker)
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    scalars.insert(hiders.randomElement(using: &random)!, at: Int.random(in: 1..<scalars.count, using: &random))
                }
                return String(scalars)
            }
            let text = "a " + hidden("[[private]]") + "zqsecret" + hidden("[[/private]]") + " b"
            #expect(redactor.hasMarkers(text), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
            let censored = try redactor.redact(text, mode: .censor)
            #expect(!censored.contains("zqsecret") && censored.hasPrefix("a ") && censored.hasSuffix(" b"), "\(censored)")
        }
    }
}
