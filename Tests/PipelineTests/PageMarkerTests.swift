import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21, class a of the red team of 27 November: a file a browser opens as a
/// page (HTML, SVG, XML declared `application/octet-stream` and the like, named so
/// or starting with a tag) whose markers are cut by tags and comments, line ends
/// inside them too, or reversed under an override across such a cut. Its source
/// lines hold no marker, so the byte search passed it: a mail whose only span
/// stood there went out unchanged, and with `pass` the file went out with a span.
@Suite("Spans only a page shows, in files declared as something else")
struct PageMarkerTests {
    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27 }

    /// Every decoded leaf of `message` as text (bytes as Latin-1, and as UTF-8), with its subject.
    static func reading(_ message: MIMEMessage) -> String {
        var pieces = [message.subject ?? ""]
        for (_, entity) in message.body?.walk() ?? [] where entity.kind == .leaf {
            let bytes = entity.content ?? []
            pieces.append(String(decoding: bytes, as: UTF8.self))
            pieces.append(String(bytes.map { Character(Unicode.Scalar($0)) }))
        }
        return pieces.joined(separator: "\n----\n")
    }

    @Test("generated page files (HTML, SVG, XML; markers cut by tags and comments, reversed by an override, a reference, bdo or dir=rtl across a cut): withheld, never sent unchanged; pass refuses")
    func pageFiles() throws {
        var random = SeededRandom(seed: Self.seed)
        var withheld = 0
        for round in 0..<80 {
            let (generated, _, _) = HiddenMarkerMails.pageMail(&random, anchor: round % 3 == 2)
            let what = "round \(round): \(generated.variant)\n\(generated.mail)"
            do {
                let postcard = try Postcard.censored(try parse(generated.mail))
                let written = String(decoding: postcard.serialize(), as: UTF8.self)
                if written.contains("held back") { withheld += 1 }
                let reading = Self.reading(try MIMEMessage.parse(Array(written.utf8)))
                #expect(!HiddenMarkerMails.leaks(generated, in: reading) && !reading.lowercased().contains(generated.shown),
                        "the span shows: \(what)\n-- postcard:\n\(written)")
            } catch let error as PipelineError {
                #expect(!error.description.contains(generated.secret), "\(what)")
            }
            #expect(throws: PipelineError.self, "pass: \(what)") { try Postcard.censored(try parse(generated.mail), opaque: .pass) }
        }
        #expect(withheld > 60, "most postcards are made, the file withheld: \(withheld)")
    }

    @Test("generated pages whose span only CSS composes (content: strings escaped and cut, attr() joined, @counter-style with an escaped name), declared octet-stream: withheld, never sent unchanged; pass refuses")
    func styledPages() throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<40 {
            let (generated, _) = HiddenMarkerMails.styledPageMail(&random, anchor: round % 3 == 2)
            let what = "round \(round): \(generated.variant)\n\(generated.mail)"
            do {
                let written = String(decoding: try Postcard.censored(try parse(generated.mail)).serialize(), as: UTF8.self)
                let reading = Self.reading(try MIMEMessage.parse(Array(written.utf8)))
                #expect(!reading.lowercased().contains(generated.secret), "the span shows: \(what)\n-- postcard:\n\(written)")
            } catch let error as PipelineError {
                #expect(!error.description.contains(generated.secret), "\(what)")
            }
            #expect(throws: PipelineError.self, "pass: \(what)") { try Postcard.censored(try parse(generated.mail), opaque: .pass) }
        }
        // Friendly styled pages (empty and icon strings, [1] and [link]) in a mail without spans go as they came.
        for round in 0..<10 {
            let page = "<style>p::before { content: \"\"; } .i::after { content: \"\\f101\"; } a[x-apple-data-detectors] { color: inherit }</style>"
                + "<p>See [1] and [link] (round \(round))</p>"
            let written = String(decoding: try Postcard.censored(try parse(HiddenMarkerMails.pageFileMail(page, name: "news.html", &random))).serialize(), as: UTF8.self)
            #expect(!written.contains("held back"), "friendly styled page \(round)")
        }
    }

    static func pick(_ choices: [String], _ random: inout SeededRandom) -> String { choices.randomElement(using: &random)! }

    @Test("friendly pages declared as octet-stream (tags, comments, line ends in tags, dir=rtl, [1] and [link]) in a mail without spans go out unchanged")
    func friendlyPages() throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<20 {
            var page = "<!DOCTYPE html><html dir=\"" + Self.pick(["rtl", "ltr"], &random) + "\"><body>\n"
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                page += Self.pick(["<p>See [1] and [link]</p>\n", "<p>pri<b\n>vate</b> notes</p>\n", "<!-- [[ -->\n",
                                                "<bdo dir=rtl>olleh</bdo>\n", "<p>[x]<i\n></i>[y]</p>\n"], &random)
            }
            page += "</body></html>\n"
            let mail = HiddenMarkerMails.pageFileMail(page, name: "page.html", &random)
            let postcard = try Postcard.censored(try parse(mail))
            let written = String(decoding: postcard.serialize(), as: UTF8.self)
            #expect(!written.contains("held back"), "round \(round): \(page)")
        }
    }

    static var chromium: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
            && (try? run("python3", ["-c", "import selenium"]))?.status == 0
    }

    @Test("the generated HTML pages as headless Chromium shows them (innerText, scripts off): each shows its span joined, so each generated mail means something",
          .enabled(if: chromium, "needs chromium, chromedriver and selenium (scripts/bootstrap --browser)"))
    func chromiumShowsTheSpans() throws {
        let folder = try makePrivateDirectory(prefix: "ms-pages")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var random = SeededRandom(seed: Self.seed)
        var pages: [(mail: HiddenMarkerMails.Mail, path: String)] = []
        for round in 0..<80 {
            let (generated, page, kind) = HiddenMarkerMails.pageMail(&random, anchor: round % 3 == 2)
            guard kind == "html" else { continue }
            let path = folder + "/\(round).html"
            FileManager.default.createFile(atPath: path, contents: Data(page.utf8), attributes: [.posixPermissions: 0o600])
            pages.append((generated, path))
        }
        let script = Paths.root.appendingPathComponent("Tests/HTMLRebuildTests/chromium_text.py").path
        let result = try run("python3", [script] + pages.map(\.path))
        try #require(result.status == 0, "\(result.errors)")
        let texts = result.output.split(separator: "\n").map { line in (try? JSONDecoder().decode(String?.self, from: Data(line.utf8))) ?? nil }
        try #require(texts.count == pages.count && pages.count > 30)
        for (index, (mail, _)) in pages.enumerated() {
            let shown = (texts[index] ?? "").lowercased()
            if mail.reversed {
                // Logical order: the reversed span, its markers joined (a browser shows it forwards).
                #expect(shown.contains(mail.shown) && shown.contains("etavirp/"), "\(mail.variant): \(shown.debugDescription)")
            } else {
                #expect(shown.contains(mail.secret), "\(mail.variant): \(shown.debugDescription)")
                #expect(!(try Redactor.standard.redact(shown, mode: .censor)).contains(mail.secret), "\(mail.variant): the secret is in a span: \(shown.debugDescription)")
            }
        }
    }
}
