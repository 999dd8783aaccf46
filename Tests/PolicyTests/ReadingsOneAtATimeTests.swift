@testable import Policy
import TestSupport
import Testing

/// The readings are made one at a time and the search stops at the first marker
/// (``Redactor/forEachDecodedScalarReading(_:markup:_:)``, 27 November): a red team of that
/// change. Random texts of escapes (C, RTF, CSS, entities, %HH, =HH, UTF-7, Markdown) and
/// bidirectional controls: the readings collected are those the former code made, in its
/// order (its body, kept here as the oracle), and a search that stops at a reading has seen
/// every reading before it, none skipped.
@Suite("Readings made one at a time")
struct ReadingsOneAtATimeTests {
    /// `decodedScalarReadings` as it stood before the readings were made one at a time (95079e7).
    static func formerReadings(_ redactor: Redactor, _ scalars: [Unicode.Scalar], markup: Bool) -> ([[Unicode.Scalar]], Int) {
        var hasBackslash = false, hasAmpersand = false, hasPercent = false, hasEquals = false
        var hasEmphasis = false, hasBidi = false, hasPlus = false
        for scalar in scalars {
            switch scalar.value {
            case 0x5C: hasBackslash = true
            case 0x26: hasAmpersand = true
            case 0x25: hasPercent = true
            case 0x3D: hasEquals = true
            case 0x2B: hasPlus = true
            case 0x2A, 0x5F, 0x7E, 0x60: hasEmphasis = true
            case 0x202A...0x202E, 0x2066...0x2069: hasBidi = true
            default: break
            }
        }
        var readings: [[Unicode.Scalar]] = []
        var cDecoded: [Unicode.Scalar]?
        if hasBackslash {
            cDecoded = redactor.cEscapesDecoded(scalars)
            readings.append(cDecoded!)
            readings.append(Redactor.rtfDecoded(scalars))
            readings.append(Redactor.cssUnescaped(scalars))
            // Since the sixth red team: RTF as its readers show it by default.
            if let shown = Redactor.rtfShown(scalars) { readings.append(shown) }
        }
        if hasAmpersand && !markup { readings.append(decodeEntities(scalars)) }
        // Since the sixth red team: Markdown as rendered.
        if !markup && scalars.contains(where: { $0 == "<" || $0 == "]" }) { readings.append(Redactor.markdownShown(scalars)) }
        if hasPercent || hasEquals { readings.append(Redactor.hexEscapesDecoded(scalars)) }
        if hasPlus { readings.append(Redactor.utf7Decoded(scalars)) }
        if hasEmphasis || hasBackslash {
            readings.append((cDecoded ?? redactor.cEscapesDecoded(scalars)).filter { !["*", "_", "~", "`"].contains($0) })
        }
        func isBidi(_ scalar: Unicode.Scalar) -> Bool {
            scalar.value >= 0x202A && scalar.value <= 0x202E || scalar.value >= 0x2066 && scalar.value <= 0x2069
        }
        let decoded = readings.count
        if hasBidi || (hasBackslash || hasAmpersand || hasPercent || hasEquals || hasPlus) && readings.contains(where: { $0.contains(where: isBidi) }) {
            for index in -1..<decoded {
                let reading = index < 0 ? scalars : readings[index]
                readings += Redactor.visualReadings(reading)
                // Since a hostile review: markup is read again with its line ends as spaces (HTML's paragraphs run on).
                if markup, let spaced = Redactor.lineEndsAsSpaces(reading) { readings += Redactor.visualReadings(spaced) }
            }
        }
        return (readings, decoded)
    }

    @Test("random escapes and controls: the same readings as before, in order; a stopped search skipped none")
    func sameReadingsNoneSkipped() {
        var random = SeededRandom(seed: 2026_11_27_25)
        let redactor = Redactor.standard
        let pieces = ["[[", "]]", "private", "\\", "\\5b ", "\\x5b", "\\'5b", "&#91;", "&lbrack;", "&", "%5B", "%", "=5B", "=",
                      "+AFs-", "+", "*", "_", "~", "`", "\u{202E}", "\u{202D}", "\u{2066}", "\u{2067}", "\u{2069}", "\u{202C}",
                      "\\u202e", "&#x202E;", "%E2%80%AE", " ", "a", "(", ")", "<", ">"]
        var compared = 0, stops = 0
        for _ in 0..<400 {
            let text = (0..<Int.random(in: 0...24, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let scalars = Array(text.unicodeScalars)
            let markup = Bool.random(using: &random)
            let (former, decoded) = Self.formerReadings(redactor, scalars, markup: markup)
            let now = redactor.decodedScalarReadings(scalars, markup: markup)
            #expect(now.readings.map { String(String.UnicodeScalarView($0)) } == former.map { String(String.UnicodeScalarView($0)) },
                    "readings of \(text.debugDescription), markup \(markup)")
            #expect(now.visualFrom == decoded, "visual readings' start for \(text.debugDescription)")
            compared += 1
            // Every order the search sees them in; stopped at each, it has seen exactly those before.
            var all: [[Unicode.Scalar]] = []
            _ = redactor.forEachDecodedScalarReading(scalars, markup: markup) { reading, _ in all.append(reading); return false }
            #expect(all.count == former.count, "\(text.debugDescription)")
            for stop in all.indices {
                var seen: [[Unicode.Scalar]] = []
                let stopped = redactor.forEachDecodedScalarReading(scalars, markup: markup) { reading, _ in
                    seen.append(reading); return seen.count == stop + 1
                }
                #expect(stopped && seen == Array(all.prefix(stop + 1)), "stopped at \(stop) of \(text.debugDescription)")
                stops += 1
            }
        }
        #expect(compared == 400 && stops > 400, "\(stops) stops")
    }
}
