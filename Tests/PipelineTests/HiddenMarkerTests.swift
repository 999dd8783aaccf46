import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21, after the rebuild: a mail whose only markers show through a
/// decoding mailsec does not apply, or reversed under a bidirectional
/// override, was judged to have no spans and went out unchanged. Whether a
/// mail has spans is now decided by the search the `pass` mode uses on
/// opaque parts (``Redactor/MarkerSearch`` with its decodings), and the
/// same decodings read every text.
@Suite("Markers only a decoding or a bidi override shows")
struct HiddenMarkerTests {
    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26 }

    /// Each opaque mode against one generated mail: `withhold` censors or
    /// refuses, and the postcard shows no span; where a part was withheld (or
    /// the mail refused), `pass` and `refuse` refuse.
    static func check(_ generated: HiddenMarkerMails.Mail, round: Int) throws {
        let what = "round \(round): \(generated.variant)\n\(generated.mail)"
        var withheld = true
        do {
            let postcard = try Postcard.censored(try parse(generated.mail))
            let written = String(decoding: postcard.serialize(), as: UTF8.self)
            withheld = written.contains("held back")
            let reparsed = try MIMEMessage.parse(Array(written.utf8))
            let pieces = [reparsed.subject ?? ""] + (reparsed.body?.walk().compactMap(\.entity.text) ?? [])
            let reading = pieces.joined(separator: "\n----\n")
            #expect(!HiddenMarkerMails.leaks(generated, in: reading) && !HiddenMarkerMails.leaks(generated, in: written),
                    "\(what)\n-- postcard:\n\(written)")
        } catch let error as PipelineError {
            #expect(!error.description.contains(generated.secret), "\(what)")
        } catch let error as PolicyError {
            // Refused (65) as markers that do not pair up, or pieces CSS could join (a bidi override set by style=).
            #expect(!error.description.contains(generated.secret), "\(what)")
        }
        // A part withheld by default, passed unread or refused, refuses the mail: its decodings show the marker.
        for mode in [OpaqueParts.pass, .refuse] where !generated.reversed && withheld {
            #expect(throws: PipelineError.self, "\(mode): \(what)") { try Postcard.censored(try parse(generated.mail), opaque: mode) }
        }
    }

    @Test("escaped markers alone (HTML references in a file named .html, JSON, RTF, Markdown, CSS, percent, unicode_escape charsets, UTF-7): the mail is rebuilt, never sent unchanged; pass and refuse refuse")
    func escapedMarkers() throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<60 {
            try Self.check(HiddenMarkerMails.escapedMail(&random, anchor: round % 4 == 3), round: round)
        }
    }

    @Test("markers joined by what a reader hides (hidden HTML content, terminal escape sequences) alone: the mail is rebuilt, never sent unchanged")
    func joinedMarkers() throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<60 {
            try Self.check(HiddenMarkerMails.joinedMail(&random, anchor: round % 4 == 3), round: round)
        }
    }

    @Test("a span in a part that only another reading of the multipart's boundary opens (given twice, RFC 2231 forms, unquoted with a blank): refused, never sent unchanged")
    func boundaryReadTwoWays() throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<30 {
            let generated = HiddenMarkerMails.boundaryMail(&random)
            try Self.check(generated, round: round)
            // GMime's reading (check's) takes one boundary; a reader that takes the other
            // decodes the hidden part: every run of base64 lines of the postcard, decoded.
            do {
                let written = String(decoding: try Postcard.censored(try parse(generated.mail)).serialize(), as: UTF8.self)
                var runs: [String] = [], run = ""
                for line in written.split(separator: "\n", omittingEmptySubsequences: false) {
                    let isBase64 = !line.isEmpty && line.allSatisfy { $0.isLetter && $0.isASCII || $0.isNumber || "+/=".contains($0) }
                    if isBase64 { run += line } else if !run.isEmpty { runs.append(run); run = "" }
                }
                let decoded = runs.compactMap { Data(base64Encoded: $0).map { String(decoding: $0, as: UTF8.self) } }.joined(separator: "\n")
                #expect(!decoded.contains(generated.secret), "round \(round): \(generated.variant)\n\(written)")
            } catch let error as PipelineError {
                #expect(!error.description.contains(generated.secret))
            }
        }
    }

    @Test("markers reversed after RLO, RLE or RLI (plain text, Subject, HTML with bdo, dir=rtl and references), mirrored or not: refused or shown without the override")
    func bidiReversedMarkers() throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<40 {
            try Self.check(HiddenMarkerMails.bidiMail(&random, anchor: round % 4 == 3), round: round)
        }
    }

    @Test("the visual reading: a reversed marker after an override shows forwards; nested overrides; none without one")
    func visualReadings() {
        let redactor = Redactor.standard
        #expect(redactor.hasMarkersInDecodings("a \u{202E}]]etavirp[[ b"))
        #expect(redactor.hasMarkersInDecodings("a \u{202E}[[etavirp]]\u{202C} b"))
        #expect(redactor.hasMarkersInDecodings("a \u{2067}]]etavirp/[[\u{2069}"))
        // LRO inside RLO keeps its run's order, and the run as a whole moves.
        #expect(redactor.hasMarkersInDecodings("\u{202E}]]etav\u{202D}pri\u{202C}[[\u{202C}"))
        #expect(!redactor.hasMarkersInDecodings("]]etavirp[["))
        #expect(!redactor.hasMarkersInDecodings("a \u{202E}]]etavirp\n[[ b"), "the override ends at the line's end")
        #expect(!redactor.hasMarkersInDecodings("plain text with & and % and \\ and + and *stars*"))
    }

    @Test("the visual reading made only of the lines that hold a control: a marker half before the override on its line, lines far apart, a control only an escape makes, U+2029 as a line end")
    func visualReadingWindows() {
        let redactor = Redactor.standard
        var random = SeededRandom(seed: Self.seed)
        func filler(_ count: Int) -> String {
            String((0..<count).map { _ in Character(Unicode.Scalar(UInt8.random(in: 0x61...0x7A, using: &random))) })
        }
        for round in 0..<12 {
            // The marker reversed after the override, far from it and from the line's end (the
            // override runs to there): the visual order (brackets not mirrored) reads it only when
            // made of the whole line; and "[[pri" before an override, "vate]]" reversed after it.
            let control = ["\u{202E}", "\\u202e", "&#x202E;", "%E2%80%AE"][round % 4]
            let line = filler(Int.random(in: 0...3000, using: &random)) + " [[pri" + control + "]]etav\n" + filler(Int.random(in: 0...3000, using: &random)) + control + filler(Int.random(in: 20...3000, using: &random)) + " ]]etavirp[[ "
                + filler(Int.random(in: 100...3000, using: &random))
            let other = filler(200) + "\u{202E}" + filler(50)
            let separator = round % 3 == 0 ? "\u{2029}" : "\n"
            let lines = (0..<Int.random(in: 1...30, using: &random)).map { _ in filler(Int.random(in: 0...400, using: &random)) }
            let at = Int.random(in: 0...lines.count, using: &random)
            var text = lines
            text.insert(line, at: at)
            if round % 2 == 0 { text.insert(other, at: 0); text.append(other) }
            let joined = text.joined(separator: separator)
            #expect(redactor.hasMarkersInDecodings(joined), "round \(round): the marker before and after the override")
            #expect(redactor.hasMarkersInDecodings(joined.replacingOccurrences(of: "[[pri", with: "[[prj")), "round \(round): the reversed marker")
            #expect(!redactor.hasMarkersInDecodings(joined.replacingOccurrences(of: "[[pri", with: "[[prj")
                .replacingOccurrences(of: "etavirp", with: "etavjrp")), "round \(round): no marker")
        }
    }

    @Test("the reading gaps (issue 21): \\N{name} of an invisible character and Perl's \\N{U+…}, line continuations between scalars and inside an escape, bare CR and LF inside a marker in RTF; found in the decodings and by the byte search")
    func readingGaps() {
        let redactor = Redactor.standard
        let shown = [
            "note = \"\\x5b\\N{ZERO WIDTH SPACE}[private]]\"", "\\x5b\\N{zwsp}\\x5bpri\\N{Word Joiner}vate]]",
            "[\\N{SOFT HYPHEN}[private]]", "\\N{U+5B}\\N{u+5b}private]]", "\\N{U+5B}\\N{U+200B}[private]]", "\\N{LEFT_SQUARE_BRACKET}[private]]",
            "\\x5b\\\n[private]]", "[\\\r\n[pri\\\nvate]]", "\\u00\\\n5b[private]]",
            "{\\rtf1 [\n[pri\r\nvate]]}", "{\\rtf1 \\'5b\r\\'5bprivate]]}",
        ]
        for text in shown { #expect(redactor.hasMarkersInDecodings(text), "\(text.debugDescription)") }
        for content in shown + ["{\\rtf1 [[pri\nvate]]}", "[[pri\r\nva\u{200B}te]]", "[[priv\\u0061te]]"] {
            var search = Redactor.MarkerSearch(redactor, encodings: true)
            Array(content.utf8).withUnsafeBytes { search.feed($0) }
            let found = search.finish()
            #expect(found, "the byte search: \(content.debugDescription)")
        }
        // A name that is a marker's scalar's stands for it; a line end without a backslash still ends a C reading's marker.
        #expect(!redactor.hasMarkersInDecodings("\\x5b\\N{LATIN SMALL LETTER A}[private]]"))
        #expect(!redactor.hasMarkersInDecodings("note = \"\\x5b\n[private]]\""), "a bare line end is not a continuation outside RTF's reading")
    }

    @Test("the byte search passes over the invisible characters the redactor passes over (random invisibles inside markers, random piece sizes): both agree")
    func invisiblesAgree() {
        var random = SeededRandom(seed: Self.seed)
        let redactor = Redactor.standard
        let invisibles = ["\u{0}", "\u{1}", "\u{1B}", "\u{7F}", "\u{85}", "\u{9F}", "\u{AD}", "\u{200B}", "\u{200D}", "\u{2028}", "\u{2029}",
                          "\u{2060}", "\u{FEFF}", "\u{FFF9}", "\u{FFFC}", "\u{E0041}", "\u{FE0F}", "\u{180E}", "\u{34F}"]
        let visible = ["a", "x", " ", "é", "中", "\u{301}", "\u{2014}", "-", "\n"]
        var found = 0
        for round in 0..<400 {
            let marker = Bool.random(using: &random) ? "[[private]]" : "[[/PRIVATE]]"
            var text = "text " + marker.map { character -> String in
                var piece = String(character)
                while Int.random(in: 0..<4, using: &random) == 0 {
                    piece += Int.random(in: 0..<5, using: &random) == 0 ? visible.randomElement(using: &random)! : invisibles.randomElement(using: &random)!
                }
                return piece
            }.joined() + " end"
            if round % 10 == 0 { text = String(text.dropFirst(Int.random(in: 5...8, using: &random))) }
            // A blank among the invisibles makes a near-marker, which the byte search counts too (NearMarkerTests).
            let marked = redactor.hasMarkers(text), expected = marked || redactor.hasNearMarker(text)
            if expected { found += 1 }
            let bytes = Array(text.utf8)
            var search = Redactor.MarkerSearch(redactor, encodings: false)
            var at = 0
            while at < bytes.count {
                let end = min(bytes.count, at + Int.random(in: 1...bytes.count, using: &random))
                bytes[at..<end].withUnsafeBytes { search.feed($0) }
                at = end
            }
            let seen = search.finish()
            #expect(seen == expected, "round \(round): \(text.unicodeScalars.map { String($0.value, radix: 16) })")
            // In UTF-16, both byte orders, a marker the redactor sees is seen too.
            if marked {
                for littleEndian in [true, false] {
                    let units = Array(text.utf16).flatMap { littleEndian ? [UInt8($0 & 0xFF), UInt8($0 >> 8)] : [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
                    var wide = Redactor.MarkerSearch(redactor, encodings: true)
                    units.withUnsafeBytes { wide.feed($0) }
                    let wideSeen = wide.finish()
                    #expect(wideSeen, "round \(round) UTF-16 \(littleEndian ? "LE" : "BE")")
                }
            }
        }
        #expect(found > 100 && found < 400, "both kinds generated: \(found)")
    }
}
