@testable import Policy
import TestSupport
import Testing

/// Redactor.spans looks for each marker's next place again only once the search
/// has passed it (issue 24, item 4: searched anew at every step, the text was read
/// twice over). On random texts of markers in any case, invisible characters inside
/// them, stray and nested markers, it gives what searching anew at every step gives:
/// the same spans, or the same error at the same place.
@Suite("The span search reuses the places it found")
struct SpanSearchTests {
    /// The search as it was: both markers looked for from the current place at every step.
    static func anew(_ redactor: Redactor, _ scalars: [Unicode.Scalar]) -> Result<[[Int]], PolicyError> {
        let openScalars = folded(Array(redactor.open.unicodeScalars)), closeScalars = folded(Array(redactor.close.unicodeScalars))
        var result: [[Int]] = [], index = 0
        var pending: (Int, Int)?
        func error(_ offset: Int, _ problem: PolicyError.MarkerProblem) -> Result<[[Int]], PolicyError> {
            var line = 1, column = 1
            for scalar in scalars[..<offset] { if scalar == "\n" { line += 1; column = 1 } else { column += 1 } }
            return .failure(PolicyError(.unbalancedMarkers, marker: .init(part: "t", line: line, column: column, problem: problem)))
        }
        while index < scalars.count {
            let nextOpen = find(openScalars, in: scalars, from: index), nextClose = find(closeScalars, in: scalars, from: index)
            if let openAt = nextOpen, nextClose == nil || openAt.lowerBound < nextClose!.lowerBound {
                if pending != nil { return error(openAt.lowerBound, .nested) }
                pending = (openAt.lowerBound, openAt.upperBound)
                index = openAt.upperBound
            } else if let closeAt = nextClose {
                guard let opened = pending else { return error(closeAt.lowerBound, .unopened) }
                result.append([opened.0, opened.1, closeAt.lowerBound, closeAt.upperBound])
                pending = nil
                index = closeAt.upperBound
            } else {
                index = scalars.count
            }
        }
        if let opened = pending { return error(opened.0, .unclosed) }
        return .success(result)
    }

    @Test("random texts: the same spans or the same error as a search anew at every step")
    func sameAsAnew() throws {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededRandom(seed: seed)
        let redactors = [Redactor.standard, try Redactor(open: "<<", close: ">>"), try Redactor(open: "{s}", close: "{/s}")]
        let invisibles: [Unicode.Scalar] = ["\u{200B}", "\u{AD}", "\u{FEFF}", "\u{2028}"]
        var withSpans = 0, refused = 0
        for round in 0..<10_000 {
            let redactor = redactors[round % redactors.count]
            var text: [Unicode.Scalar] = []
            for _ in 0..<Int(random.next() % 12) {
                switch random.next() % 6 {
                case 0, 1:
                    // A marker in random case, sometimes with an invisible character inside.
                    var marker = Array((random.next() % 2 == 0 ? redactor.open : redactor.close).unicodeScalars)
                    if random.next() % 3 == 0 { marker = marker.map { Unicode.Scalar($0.properties.uppercaseMapping.unicodeScalars.first!.value)! } }
                    if random.next() % 3 == 0 { marker.insert(invisibles[Int(random.next() % 4)], at: Int(random.next() % UInt64(marker.count))) }
                    text += marker
                case 2: text += Array("secret\n".unicodeScalars)
                case 3: text += Array(redactor.open.unicodeScalars.prefix(Int(random.next() % 3)))
                case 4: text += [invisibles[Int(random.next() % 4)]]
                default: text += Array("ab[<{ K\u{212A}".unicodeScalars.shuffled(using: &random).prefix(3))
                }
            }
            let expected = Self.anew(redactor, text)
            let actual = Result { () throws(PolicyError) -> [[Int]] in
                try redactor.spans(text, part: "t").map { [$0.openStart, $0.openEnd, $0.closeStart, $0.closeEnd] }
            }
            switch (expected, actual) {
            case let (.success(want), .success(got)):
                if !want.isEmpty { withSpans += 1 }
                #expect(want == got, "seed \(seed) round \(round): \(String(String.UnicodeScalarView(text)).debugDescription)")
            case let (.failure(want), .failure(got)):
                refused += 1
                #expect(want.marker == got.marker, "seed \(seed) round \(round): \(String(String.UnicodeScalarView(text)).debugDescription)")
            default:
                Issue.record("seed \(seed) round \(round): \(expected) vs \(actual) for \(String(String.UnicodeScalarView(text)).debugDescription)")
            }
        }
        // Both kinds of text came up often: the comparison is not of empty searches.
        #expect(withSpans > 300 && refused > 300, "\(withSpans) texts with spans, \(refused) refused")
    }

    /// What `redact` gives from the spans of a search over the text as an array of scalars:
    /// the text between spans, and each span replaced as `mode` says.
    static func redactedByScalars(_ redactor: Redactor, _ scalars: [Unicode.Scalar], _ spans: [[Int]], _ mode: Redactor.Mode) -> String {
        var out = String.UnicodeScalarView(), position = 0
        for span in spans {
            out += scalars[position..<span[0]]
            let content = String(String.UnicodeScalarView(scalars[span[1]..<span[2]]))
            out += mode.replacement(for: content, placeholder: redactor.placeholder).unicodeScalars
            position = span[3]
        }
        out += scalars[position...]
        return String(out)
    }

    @Test("random texts: validate and redact, which search the text's UTF-8 in place, give what the search of its scalars gives")
    func inPlaceAsScalars() throws {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededRandom(seed: seed)
        // "k<" starts with a letter the Kelvin sign folds to: the search without memchr.
        let redactors = [Redactor.standard, try Redactor(open: "<<", close: ">>"), try Redactor(open: "{s}", close: "{/s}"),
                         try Redactor(open: "k<", close: ">k")]
        let pieces: [String] = ["secret\n", "é", "😀", "\u{200B}", "\u{AD}", "\u{FEFF}", "\u{2028}", "K", "\u{212A}", "k", "[", "<", "{", "ab"]
        var withSpans = 0, refused = 0
        for round in 0..<10_000 {
            let redactor = redactors[round % redactors.count]
            var text = ""
            for _ in 0..<Int(random.next() % 12) {
                switch random.next() % 4 {
                case 0:
                    var marker = random.next() % 2 == 0 ? redactor.open : redactor.close
                    if random.next() % 3 == 0 { marker = marker.uppercased() }
                    if random.next() % 3 == 0 {
                        var scalars = Array(marker.unicodeScalars)
                        scalars.insert(["\u{200B}", "\u{AD}", "\u{FEFF}"][Int(random.next() % 3)], at: Int(random.next() % UInt64(scalars.count)))
                        marker = String(String.UnicodeScalarView(scalars))
                    }
                    text += marker
                case 1: text += String(String.UnicodeScalarView(Array(redactor.open.unicodeScalars).prefix(Int(random.next() % 3))))
                default: text += pieces[Int(random.next() % UInt64(pieces.count))]
                }
            }
            let scalars = Array(text.unicodeScalars)
            let context = "seed \(seed) round \(round): \(text.debugDescription)"
            switch Self.anew(redactor, scalars) {
            case .success(let spans):
                if !spans.isEmpty { withSpans += 1 }
                #expect(throws: Never.self, "\(context)") { try redactor.validate(text, part: "t") }
                for mode in [Redactor.Mode.censor, .reveal] {
                    #expect(try redactor.redact(text, mode: mode, part: "t") == Self.redactedByScalars(redactor, scalars, spans, mode), "\(context)")
                }
            case .failure(let want):
                refused += 1
                #expect(throws: want, "\(context)") { try redactor.validate(text, part: "t") }
                #expect(throws: want, "\(context)") { try redactor.redact(text, mode: .censor, part: "t") }
            }
        }
        #expect(withSpans > 300 && refused > 300, "\(withSpans) texts with spans, \(refused) refused")
    }
}
