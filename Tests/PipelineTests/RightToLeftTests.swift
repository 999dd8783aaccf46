import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21, a hostile review's F3 and F1b: in a right-to-left paragraph (`dir=rtl`, `dir=auto`
/// or plain text whose first letter is Hebrew) a reader shows runs of left-to-right text from
/// right to left, so `א [[private]] ב [[/private]] ג SECRET ד [[private]] ה [[/private]]` shows
/// `[[private]] ד SECRET ג [[/private]]` read from the left; and `<bdo dir=rtl>` shows reversed
/// markers on the next source line as a span whose secret the postcard showed reversed. Such
/// parts are refused (65, ``PolicyError/MarkerProblem/rightToLeft``); left-to-right paragraphs
/// with Hebrew inside or beside a span are censored as before.
@Suite("Markers in right-to-left text")
struct RightToLeftTests {
    static let hebrew = ["א", "ב", "שלום", "סוד", "תודה", "מחר"], arabic = ["سر", "شكرا", "غدا"]

    static func word(_ random: inout SeededRandom) -> String {
        String((0..<Int.random(in: 3...7, using: &random)).map { _ in "abcdefghkmnpqrstuvwxyz".randomElement(using: &random)! })
    }

    static func rtlWord(_ random: inout SeededRandom) -> String {
        (Bool.random(using: &random) ? hebrew : arabic).randomElement(using: &random)!
    }

    /// F3's shape: two spans whose runs, read from the left in a right-to-left paragraph, put the
    /// secret between an opening and a closing marker.
    static func swapped(_ secret: String, lrm: Bool, _ random: inout SeededRandom) -> String {
        let m = lrm ? "\u{200E}" : ""
        var words: [String] = []
        for _ in 0..<5 { words.append(rtlWord(&random)) }
        return "\(words[0]) \(m)[[private]]\(m) \(words[1]) \(m)[[/private]]\(m) \(words[2]) \(secret) \(words[3]) \(m)[[private]]\(m) \(words[4]) \(m)[[/private]]\(m)"
    }

    enum Case: CaseIterable {
        /// Plain text whose line starts with a right-to-left letter: refused.
        case plainRTLParagraph
        /// A Subject starting with a right-to-left letter: refused.
        case subjectRTL
        /// HTML with a direction set and right-to-left letters (first letter Latin, so only the HTML rule sees it): refused.
        case htmlDirected
        /// `<bdo dir=rtl>` with reversed markers on the next line: refused.
        case bdoReversed
        /// Plain text, a left-to-right line with Hebrew inside and beside a span: censored.
        case plainLTR
        /// HTML without any direction set, Hebrew inside and beside a span: censored.
        case htmlUndirected
        /// HTML with a direction set (dir=ltr, dir=rtl, bdi …) but no right-to-left letter or mark: censored.
        case htmlDirectedLatin
        /// A right-to-left paragraph (plain text, or HTML with a direction set) with one span, or two
        /// with no right-to-left text between them, Hebrew before, inside and after: censored.
        case rtlOneSpan
    }

    static func mail(_ kind: Case, _ random: inout SeededRandom, secret: String) -> String {
        let head = "From: a@example.org\nTo: b@example.org\nMessage-ID: <rtl@example.org>\nMIME-Version: 1.0\n"
        func plain(_ text: String, subject: String = "notes") -> String {
            head + "Subject: =?utf-8?b?\(Data(subject.utf8).base64EncodedString())?=\nContent-Type: text/plain; charset=utf-8\n"
                + "Content-Transfer-Encoding: base64\n\n" + Data(text.utf8).base64EncodedString(options: .lineLength76Characters) + "\n"
        }
        func html(_ text: String) -> String {
            head + "Subject: notes\nContent-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
                + Data(text.utf8).base64EncodedString(options: .lineLength76Characters) + "\n"
        }
        let lrm = Bool.random(using: &random)
        let directions = ["<p dir=rtl>%@</p>", "<p dir=\"auto\">%@</p>", "<html dir=rtl><body><p>%@</p></body></html>",
                          "<div style=\"direction: rtl\">%@</div>", "<style>p { direction: rtl }</style><p>%@</p>",
                          "<p><bdi>%@</bdi></p>", "<p style=\"unicode-bidi: plaintext\">%@</p>"]
        switch kind {
        case .plainRTLParagraph:
            return plain(word(&random) + " line\n" + swapped(secret, lrm: lrm, &random) + "\nbye\n")
        case .subjectRTL:
            return plain("body\n", subject: swapped(secret, lrm: lrm, &random))
        case .htmlDirected:
            // A Latin word first: the paragraph rule of plain text does not see it.
            let inner = word(&random) + " " + swapped(secret, lrm: lrm, &random)
            return html(directions.randomElement(using: &random)!.replacingOccurrences(of: "%@", with: inner))
        case .bdoReversed:
            let reversed = String(("[[private]]" + secret + "[[/private]]").reversed().map { $0 == "[" ? "]" : $0 == "]" ? "[" : $0 })
            return html("<p>\(word(&random))<bdo dir=rtl>\n\(reversed)\n</bdo></p>")
        case .plainLTR:
            return plain("\(word(&random)) \(rtlWord(&random)) [[private]]\(rtlWord(&random)) \(secret)[[/private]] \(rtlWord(&random))\n")
        case .htmlUndirected:
            return html("<p>\(word(&random)) \(rtlWord(&random)) [[private]]\(rtlWord(&random)) \(secret)[[/private]] \(rtlWord(&random))</p>")
        case .rtlOneSpan:
            var line = "\(rtlWord(&random)) [[private]]\(rtlWord(&random)) \(secret)[[/private]] \(rtlWord(&random))"
            if Bool.random(using: &random) { line += " \(word(&random)) [[private]]\(word(&random))[[/private]]" }
            if Bool.random(using: &random) { return plain(line + "\n") }
            return html(directions.randomElement(using: &random)!.replacingOccurrences(of: "%@", with: line))
        case .htmlDirectedLatin:
            let inner = "\(word(&random)) [[private]]\(secret)[[/private]] \(word(&random))"
            return html((directions + ["<p dir=ltr>%@</p>"]).randomElement(using: &random)!.replacingOccurrences(of: "%@", with: inner))
        }
    }

    @Test("markers of guillemets (« »), written reversed and mirrored inside <bdo dir=rtl>, which a browser shows as the markers: refused; the same without the override censored")
    func guillemetsUnderOverride() throws {
        let redactor = try Redactor(open: "«private»", close: "«/private»")
        var random = SeededRandom(seed: 2026_11_27_7)
        for round in 0..<12 {
            let secret = "zq" + Self.word(&random) + "x"
            // What a browser shows `«private»SECRET«/private»` from, right to left: the scalars reversed, each mirrored.
            let shown = "«private»" + secret + "«/private»"
            let written = String(String.UnicodeScalarView(shown.unicodeScalars.reversed().map { Redactor.mirror(of: $0) ?? $0 }))
            let overridden = round % 2 == 0
            let body = overridden ? "<p>\(Self.word(&random))<bdo dir=rtl>\(written)</bdo></p>" : "<p>\(Self.word(&random)) \(shown)</p>"
            let mail = "From: a@example.org\nTo: b@example.org\nSubject: s\nMIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n\(body)\n"
            do {
                let out = try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), redactor: redactor).serialize()
                #expect(!overridden, "round \(round): under the override it went out")
                #expect(!String(decoding: out, as: UTF8.self).contains(secret), "round \(round): the span's text went out")
            } catch let error as PolicyError {
                #expect(overridden, "round \(round): refused without an override: \(error)")
            }
        }
    }

    @Test("generated mails: markers in right-to-left paragraphs (plain text, Subject, HTML with a direction set, <bdo>) refused; left-to-right text with Hebrew, and directions without right-to-left text, censored")
    func rightToLeft() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_24)
        var issues = 0
        for round in 0..<320 {
            let kind = Case.allCases[round % Case.allCases.count]
            let refused = [.plainRTLParagraph, .subjectRTL, .htmlDirected, .bdoReversed].contains(kind)
            let secret = "zq" + Self.word(&random) + "x"
            let text = Self.mail(kind, &random, secret: secret)
            let what = "round \(round) (\(kind))"
            do {
                let written = try Postcard.censored(try MIMEMessage.parse(Array(text.utf8))).serialize()
                let shown = try everythingVisible(written)
                if refused {
                    issues += 1
                    Issue.record("\(what): went out\(shown.contains { $0.contains(secret) || $0.contains(String(secret.reversed())) } ? ", secret shown" : "")")
                } else {
                    #expect(!shown.contains { $0.contains(secret) }, "\(what): the span's text went out")
                }
            } catch let error as PolicyError {
                if !refused {
                    issues += 1
                    Issue.record("\(what): refused: \(error)")
                } else {
                    #expect(error.marker?.problem == .rightToLeft, "\(what): \(error)")
                }
            }
        }
        #expect(issues == 0)
    }
}
