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

    /// A real span in the styled HTML itself, maybe written across formatting as composers do
    /// (`[[<b>private</b>]]`, Outlook's spelling marks), and a second as the secret.
    static func withRealSpan(_ html: String, _ random: inout SeededRandom, secret: String) -> String {
        // Each marker starts in the paragraph: markers starting in different elements of a styled part
        // are refused on their own (otherOrder), which is not what this test is about.
        let open = ["[[private]]", "[[<b>private</b>]]", "[[<span class=SpellE>private</span>]]", "[<i>[private]]</i>"].randomElement(using: &random)!
        let close = ["[[/private]]", "[[/<b>private</b>]]", "[[/<span class=SpellE>private</span>]]", "[<i>[/private]]</i>"].randomElement(using: &random)!
        let span = "<p>Code: \(open)\(secret)\(close) thanks.</p>"
        if let body = html.range(of: "</body>") { return html.replacingCharacters(in: body, with: span + "</body>") }
        return Bool.random(using: &random) ? span + html : html + span
    }

    @Test("a span composed by CSS or alt text in a styled part that also has a real span (maybe written across formatting): refused; friendly styled parts with real spans: censored, not refused")
    func joinedBesideRealSpan() throws {
        let seed = Self.seed
        var random = SeededRandom(seed: seed)
        var issues = 0
        for round in 0..<160 {
            let hostile = round % 2 == 0
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let real = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let base: (variant: String, html: String) = hostile ? HiddenMarkerMails.styledHTML(&random, secret: secret) : ("friendly", HiddenMarkerMails.friendlyStyledHTML(&random))
            let html = Self.withRealSpan(base.html, &random, secret: real)
            let mail = Self.mail(html: html, anchor: Bool.random(using: &random), &random)
            let what = "seed \(seed) round \(round) \(base.variant)"
            do {
                let written = String(decoding: try Postcard.censored(try parse(mail)).serialize(), as: UTF8.self)
                if hostile {
                    issues += 1
                    Issue.record("\(what): not refused\n\(html)")
                }
                #expect(!written.contains(real), "\(what): the real span's text went out")
            } catch let error as PolicyError {
                if !hostile {
                    issues += 1
                    Issue.record("\(what): refused: \(error)\n\(html)")
                }
                #expect(error.marker != nil && !error.description.contains(secret), "\(what): \(error)")
            }
        }
        #expect(issues == 0)
    }
}
