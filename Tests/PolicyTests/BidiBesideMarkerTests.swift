@testable import Policy
import TestSupport
import Testing

/// A red team's round (issue 21): `[[private]] RLI LRI [[/private]] PDI LRI secret PDI PDI`
/// is shown with the secret between the markers (the isolates swap the two runs), while it is
/// written after them, so the postcard showed it — in text, the Subject, a filename, a display
/// name. A marker on a line with an explicit bidirectional control is now refused, wherever
/// the text is read (every reading goes through the one span search).
@Suite("A marker on a line with bidirectional controls is refused; controls on other lines are not")
struct BidiBesideMarkerTests {
    static let controls: [Unicode.Scalar] = ["\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}", "\u{202E}",
                                             "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}"]
    static let lineEnds = ["\n", "\r\n", "\r", "\u{2029}"]

    private func words(_ rng: inout SeededRandom) -> String {
        (0..<Int(rng.next() % 5)).map { _ in ["ab", "plan", "x", "שלום", "42", "ok."][Int(rng.next() % 6)] }.joined(separator: " ")
    }

    @Test("500 random texts: a control anywhere on a marker's line refuses; anywhere else the span is censored")
    func refusedOnlyOnTheMarkersLine() throws {
        for seed in 0..<UInt64(500) {
            var rng = SeededRandom(seed: 31_000 + seed)
            let secret = "S\(rng.next() % 100_000)X"
            let end = Self.lineEnds[Int(rng.next() % 4)]
            let before = words(&rng), after = words(&rng), inside = words(&rng)
            // The span on one line, or across two.
            let across = rng.next() % 3 == 0
            let spanLines = "[[private]] \(inside) " + (across ? end : "") + "\(secret) [[/private]]"
            let control = String(Self.controls[Int(rng.next() % UInt64(Self.controls.count))])
            let where_ = rng.next() % 3   // 0: on the span's (first or last) line, 1: on a line before, 2: after
            var lines = [before, spanLines, after]
            switch where_ {
            case 0:
                // Somewhere on the span's text: before its opening marker, inside it, or after its close.
                var text = lines[1]
                let places = Array(text.indices) + [text.endIndex]
                text.insert(contentsOf: control, at: places[Int(rng.next() % UInt64(places.count))])
                lines[1] = text
            case 1: lines[0] += control
            default: lines[2] = control + lines[2]
            }
            let text = lines.joined(separator: end)
            let result = Result { () throws(PolicyError) in try Redactor.standard.redact(text, mode: .censor, part: "text") }
            switch result {
            case .success(let censored):
                #expect(where_ != 0, "seed \(seed): not refused: \(text.debugDescription)")
                #expect(!censored.contains(secret), "seed \(seed)")
            case .failure(let error):
                // A control inside a marker is passed over as invisible: the marker's line holds it all the same.
                #expect(where_ == 0, "seed \(seed): refused a control on another line: \(text.debugDescription) \(error)")
            }
        }
    }

    @Test("the red team's swap: refused in a reading of any size, at the marker's line and column")
    func theSwap() throws {
        for filler in [0, 1, 1000, 70_000] {
            let text = String(repeating: "line\n", count: filler) + "[[private]] \u{2067}\u{2066}[[/private]]\u{2069}\u{2066}S1X\u{2069}\u{2069}\n"
            let result = Result { () throws(PolicyError) in try Redactor.standard.redact(text, mode: .censor) }
            guard case .failure(let error) = result else { Issue.record("not refused at \(filler) lines"); continue }
            #expect(error.marker?.problem == .bidiControls)
            #expect(error.marker?.line == filler + 1 && error.marker?.column == 1, "\(error)")
        }
    }
}
