import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21 (a red team's round): both markers of a pair typed with blanks inside
/// (`[[ private ]]secret[[ /private ]]`) were no markers, so the mail went out with the span
/// the sender plainly meant. Such near-markers (``NearMarkerScan``) are refused as invalid
/// markers (65, one line naming the place), in a text part, a header field, a file name
/// and HTML; ordinary text with brackets (`[[wiki links]]`, `[ private ]`) passes.
@Suite("Markers typed with white space inside")
struct NearMarkerTests {
    static let spaces = [" ", "  ", "\t", "\u{A0}", "\u{3000}", "\u{2002}", " \u{200B}"]

    /// `marker` with white space put between some of its scalars (at least once).
    static func spaced(_ marker: String, _ random: inout SeededRandom) -> String {
        let scalars = Array(marker.unicodeScalars)
        var out = "", any = false
        for (index, scalar) in scalars.enumerated() {
            out.unicodeScalars.append(scalar)
            guard index < scalars.count - 1 else { continue }
            // Inside the brackets most often, as people mistype them.
            let likely = index == 1 || index == scalars.count - 3
            if Int.random(in: 0..<100, using: &random) < (likely ? 50 : 8) || index == scalars.count - 2 && !any {
                any = true
                out += spaces.randomElement(using: &random)!
            }
        }
        return out
    }

    /// Text with brackets that is no marker.
    static func ordinary(_ random: inout SeededRandom) -> String {
        [
            "[[wiki links]]", "[ private ]", "[[Main Page]]", "[ [ x ] ]", "[[ notes ]]", "[private]", "[[ /usr/bin ]]",
            "[[privately]]", "[ [private ]", "private ]]", "[[ private", "[[pri vacy]]", "[/private]"
        ].randomElement(using: &random)!
    }

    enum Place: CaseIterable { case text, subject, filename, html }

    static func mail(_ place: Place, _ shown: String, real: Bool, _ random: inout SeededRandom) -> String {
        // A real span elsewhere, sometimes: the part is then read and censored as well.
        let span = real ? " [[private]]other[[/private]]" : ""
        let head = "From: a@example.org\nTo: b@example.org\nMessage-ID: <near@example.org>\nMIME-Version: 1.0\n"
        func encoded(_ text: String) -> String { "=?utf-8?b?" + Data(text.utf8).base64EncodedString() + "?=" }
        switch place {
        case .text:
            return head + "Subject: notes\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
                + Data("hello \(shown) bye\(span)\n".utf8).base64EncodedString(options: .lineLength76Characters) + "\n"
        case .subject:
            return head + "Subject: \(encoded("notes " + shown))\nContent-Type: text/plain; charset=utf-8\n\nbody\(span)\n"
        case .filename:
            return head + "Subject: notes\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nbody\(span)\n"
                + "--b\nContent-Type: application/pdf\nContent-Disposition: attachment; filename=\"\(encoded(shown + ".pdf"))\"\n"
                + "Content-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--b--\n"
        case .html:
            // Blanks sometimes written as references, as composers write them.
            var html = shown
            if Bool.random(using: &random) { html = html.replacingOccurrences(of: "\u{A0}", with: "&nbsp;").replacingOccurrences(of: " ", with: "&#32;") }
            return head + "Subject: notes\nContent-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
                + Data("<p>hello \(html) bye</p><p>\(span)</p>\n".utf8).base64EncodedString(options: .lineLength76Characters) + "\n"
        }
    }

    @Test("generated mails: near-markers refused in text, Subject, file names and HTML; bracketed ordinary text passes")
    func nearMarkers() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_22)
        var issues = 0
        for round in 0..<400 {
            let place = Place.allCases[round % Place.allCases.count]
            let near = round % 2 == 0
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let shown: String
            if near {
                // Both mistyped, or one of the two (the other written right, which alone does not pair).
                let which = Int.random(in: 0..<3, using: &random)
                let open = which == 2 ? "[[private]]" : Self.spaced("[[private]]", &random)
                let close = which == 1 ? "[[/private]]" : Self.spaced("[[/private]]", &random)
                shown = open + secret + close
            } else {
                shown = Self.ordinary(&random) + " " + secret + " " + Self.ordinary(&random)
            }
            let real = Bool.random(using: &random)
            let text = Self.mail(place, shown, real: real, &random)
            let what = "round \(round) (\(place), \(near ? "near" : "ordinary"), real span \(real)): \(shown.debugDescription)"
            do {
                let postcard = try Postcard.censored(try MIMEMessage.parse(Array(text.utf8)))
                if near {
                    issues += 1
                    Issue.record("\(what): went out")
                } else {
                    // Ordinary text is kept, wherever it stands.
                    let all = try everythingVisible(postcard.serialize())
                    #expect(all.contains { $0.contains(secret) }, "\(what): ordinary text lost")
                }
            } catch let error as PolicyError {
                if !near {
                    issues += 1
                    Issue.record("\(what): refused: \(error)")
                } else {
                    // A near-marker beside a marker written right may make the pair unbalanced first: refused all the same.
                    #expect(error.marker != nil, "\(what): \(error)")
                }
            } catch {
                if !near {
                    issues += 1
                    Issue.record("\(what): \(error)")
                }
            }
        }
        #expect(issues == 0)
    }

    @Test("the scan finds a near-marker exactly where blanks stand between a marker's scalars")
    func scanAgainstOracle() {
        var random = SeededRandom(seed: 2026_11_27_23)
        let redactor = Redactor.standard
        // Markers with blanks are built, and broken on purpose (a letter left out).
        for _ in 0..<2000 {
            let marker = Bool.random(using: &random) ? "[[private]]" : "[[/private]]"
            let spaced = Self.spaced(marker, &random)
            let pad = ["", "x", "[", "[[", " ", "]]", "[ ["].randomElement(using: &random)!
            #expect(redactor.hasNearMarker(pad + spaced + pad), "\(spaced.debugDescription)")
            #expect(!redactor.hasNearMarker(pad + marker + pad), "\(marker)")
            // One scalar of the marker left out: no near-marker.
            var scalars = Array(spaced.unicodeScalars)
            let visible = scalars.indices.filter { scalars[$0].properties.isAlphabetic }
            scalars.remove(at: visible.randomElement(using: &random)!)
            var broken = ""
            broken.unicodeScalars.append(contentsOf: scalars)
            #expect(!redactor.hasNearMarker(broken), "\(broken.debugDescription)")
        }
    }
}
