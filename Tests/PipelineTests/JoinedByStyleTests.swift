import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// Issue 21: an HTML part went out unchanged when no reading found a marker, while a
/// browser showed one composed by CSS (`content:` strings, `attr()`, text reordered or
/// hidden by a class) or by alt text (a reader that blocks images). Such a part is now
/// refused (65, ``PolicyError/MarkerProblem/joinable``); friendly styled mail is not.
@Suite("Markers a style sheet or alt text joins")
struct JoinedByStyleTests {
    static var seed: UInt64 {
        UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
    }

    static func mail(html: String, anchor: Bool, _ random: inout SeededRandom) -> String {
        let htmlPart = "Content-Type: text/html; charset=utf-8\n"
            + (Bool.random(using: &random) ? "Content-Transfer-Encoding: 8bit\n\n" + html
                : "Content-Transfer-Encoding: base64\n\n" + Data(html.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n")
        let text = anchor ? "Hi, [[private]]zqanchor[[/private]] here.\n" : "Hi, nothing private here.\n"
        return "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nSubject: notes\nDate: Wed, 25 Nov 2026 10:00:00 +0000\n"
            + "Message-ID: <css.\(random.next())@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"b\"\n\n"
            + "--b\nContent-Type: text/plain; charset=utf-8\n\n\(text)--b\n\(htmlPart)--b--\n"
    }

    @Test("a span composed by CSS (attr(), concatenated or escaped strings, quotes:, flex, order:, bidi-override, hidden by a class) or by alt text: refused (65), never sent")
    func joinedIsRefused() throws {
        let seed = Self.seed
        var random = SeededRandom(seed: seed)
        for round in 0..<80 {
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let (variant, html) = HiddenMarkerMails.styledHTML(&random, secret: secret)
            let mail = Self.mail(html: html, anchor: round % 4 == 3, &random)
            do {
                let postcard = try Postcard.censored(try parse(mail))
                Issue.record("seed \(seed) round \(round) \(variant): not refused\n\(html)\n-- postcard:\n\(String(decoding: postcard.serialize(), as: UTF8.self))")
            } catch let error as PolicyError {
                #expect(error.code == .unbalancedMarkers && [.joinable, .inStyleSheet].contains(error.marker?.problem),
                        "seed \(seed) round \(round) \(variant): \(error)")
                #expect(!error.description.contains(secret))
            }
        }
    }

    @Test("friendly styled HTML (attribute selectors, clearfix, icon fonts, Outlook's conditional comments, a footnote, logos' alt text), random: sent unchanged")
    func friendlyPasses() throws {
        let seed = Self.seed
        var random = SeededRandom(seed: seed)
        for round in 0..<40 {
            let html = HiddenMarkerMails.friendlyStyledHTML(&random)
            let mail = Self.mail(html: html, anchor: false, &random)
            do {
                let postcard = try Postcard.censored(try parse(mail))
                let texts = postcard.body?.walk().compactMap(\.entity.text) ?? []
                #expect(texts.contains { $0.trimmingCharacters(in: .whitespacesAndNewlines) == html.trimmingCharacters(in: .whitespacesAndNewlines) }, "seed \(seed) round \(round): not sent unchanged")
            } catch {
                Issue.record("seed \(seed) round \(round): refused: \(error)\n\(html)")
            }
        }
    }

    @Test("style sheets read as CSS reads them: escapes and line continuations decoded in strings, comments and selectors' brackets not strings")
    func cssAsCSSReadsIt() throws {
        func outcome(_ css: String, _ body: String) -> String {
            var random = SeededRandom(seed: 3)
            let html = "<html><head><style>\(css)</style></head><body>\(body)</body></html>\n"
            do {
                _ = try Postcard.censored(try parse(Self.mail(html: html, anchor: false, &random)))
                return "sent"
            } catch let error as PolicyError {
                return error.marker?.problem.rawValue ?? "\(error)"
            } catch {
                return "\(error)"
            }
        }
        let inSheet = PolicyError.MarkerProblem.inStyleSheet.rawValue, joinable = PolicyError.MarkerProblem.joinable.rawValue
        #expect(outcome(#".a::before{content:"\00005b\[PRIVATE\5d ]"}"#, "<span class=a></span>x") == inSheet)
        #expect(outcome(".a::before{content:'[[pri\\\nvate]]'}", "<span class=a></span>x") == inSheet)
        #expect(outcome(#".a::before{content:"\5b" "\5b"} .b::after{content:'\5d\5d'}"#, "<span class=a></span>private<span class=b></span>") == joinable)
        #expect(outcome("/* content: \"[[\" \"]]\" */ a[href] b[title] u[x]{color:red}", "<p>private</p>") == "sent")
        #expect(outcome(".x{content:\"]\"} a\\\"[b\\\"]{color:red}", "<p>[private</p>") == "sent")
    }

    @Test("styled newsletters full of bracketed words ([View online], [1], (private sale), {name}) and no span: sent unchanged; the same with one marker's pieces left over: refused")
    func bracketedWordsPass() throws {
        var random = SeededRandom(seed: Self.seed)
        let words = ["[View online]", "[Unsubscribe]", "<sup>[1]</sup>", "[2]", "(private sale)", "{first name}", "[ Privacy policy ]",
                     "<a href=\"https://x.example/p\">[Read more]</a>", "[Private offer]", "(see [3])", "[New!]", "[50% off!]", "[Q&amp;A]"]
        for round in 0..<30 {
            var body = "<p style=\"color:#333\">Hello, our private event.</p>"
            for _ in 0..<Int.random(in: 2...8, using: &random) {
                body += "<p style=\"margin:0\">" + words.randomElement(using: &random)! + " text</p>"
            }
            let html = "<html><head><style>a[x-apple-data-detectors]{color:inherit}</style></head><body>\(body)</body></html>\n"
            let mail = Self.mail(html: html, anchor: false, &random)
            #expect(throws: Never.self, "round \(round)\n\(html)") { _ = try Postcard.censored(try parse(mail)) }
            // The pieces of a marker left over beside the bracketed words: refused.
            let joined = html.replacingOccurrences(of: "</body>", with: "<p>[<span class=h>x</span>[private]<span class=h>x</span>]z[<i>[/private]</i><span class=h>x</span>]</p></body>")
            #expect(throws: PolicyError.self, "round \(round)") { _ = try Postcard.censored(try parse(Self.mail(html: joined, anchor: false, &random))) }
        }
    }

    @Test("a styled mail (style attributes, a style sheet) with a real span is rebuilt and censored, not refused")
    func styledWithSpanIsCensored() throws {
        let html = """
            <html><head><style>a[x-apple-data-detectors]{color:inherit} .clearfix::after{content:""}</style></head>\
            <body style="font-family:Arial"><p style="color:#222">Hi Bob [1], the code is [[private]]zqsecret[[/private]] [2].</p>\
            <img alt="[logo]" src="https://x.example/l.png"></body></html>
            """
        var random = SeededRandom(seed: 7)
        let written = String(decoding: try Postcard.censored(try parse(Self.mail(html: html, anchor: true, &random))).serialize(), as: UTF8.self)
        #expect(!written.contains("zqsecret") && !written.contains("zqanchor"))
    }
}
