import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// A red team of the gzipped-page and saved-page readings (27 November, second round):
/// a gzip file whose header names a page (FNAME `index.html`, what `gunzip -N` and archive
/// tools save it as) under a name that is not one, names with trailing dots or blanks (which
/// Windows drops: `page.html.gz.` is saved as `page.html.gz`), a saved message attached as
/// `.eml` or declared `application/x-mimearchive` without a name, and `.mht` or `.eml` files
/// inside a zip all went out unread with a span their reader shows.
@Suite("Pages: saved names and gzip header names")
struct SavedNamesTests {
    /// A page whose only marker a browser joins across a tag; `marked` false: a near miss.
    static func page(_ random: inout SeededRandom, marked: Bool, svg: Bool) -> String {
        let word = marked ? "private" : "privote"
        let cut = Int.random(in: 1..<(word.count), using: &random)
        let tag = ["b", "i", "span", "em"].randomElement(using: &random)!
        let split = "[[" + word.prefix(cut) + "<\(tag)>" + word.dropFirst(cut) + "]]secret[[/</\(tag)>" + word + "]]"
        return svg ? "<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"1\" y=\"9\">\(split)</text></svg>\n"
            : "<html><body><p>Hello.</p><p>\(split)</p></body></html>\n"
    }

    /// Python writes the file: `script` reads the page from standard input, writes the file.
    static func made(_ script: String, _ page: String) throws -> [UInt8] {
        let made = try run("/usr/bin/python3", ["-c", script], input: Array(page.utf8))
        try #require(made.status == 0, "\(made.errors)")
        return made.stdout
    }

    @Test("a gzip file whose header names a page, under a name that is not one, alone or in a zip: read as the page")
    func gzipHeaderNames() throws {
        var random = SeededRandom(seed: 2026_11_27_21)
        for round in 0..<10 {
            let marked = round % 4 != 3
            let inner = ["index.html", "map.svg", "a.xhtml", "p.htm", "b.svgz"].randomElement(using: &random)!
            let outer = ["archive.gz", "page.gz", "data.bin", "x"].randomElement(using: &random)!
            let inZip = round % 3 == 2
            let file = try Self.made("""
                import gzip, io, sys, zipfile
                out = io.BytesIO()
                with gzip.GzipFile(filename="\(inner)", mode="wb", fileobj=out) as g: g.write(sys.stdin.buffer.read())
                data = out.getvalue()
                if \(inZip ? "True" : "False"):
                    z = io.BytesIO()
                    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zz: zz.writestr("d/\(outer)", data)
                    data = z.getvalue()
                sys.stdout.buffer.write(data)
                """, Self.page(&random, marked: marked, svg: inner.contains("svg")))
            let bytes = PageReviewTests.mail(type: inZip ? "application/zip" : "application/gzip", name: inZip ? "site.zip" : outer, content: file)
            try PageReviewTests.expectRead(bytes, file: file, marked: marked, "round \(round): \(inner) as \(outer)\(inZip ? " in a zip" : ""), marked \(marked)")
        }
    }

    @Test("a gzipped page or saved page named with trailing dots or blanks: read as the name Windows saves it under")
    func trailingDotsAndBlanks() throws {
        var random = SeededRandom(seed: 2026_11_27_22)
        for round in 0..<8 {
            let marked = round % 4 != 3
            let base = ["p.html.gz", "m.svgz", "P.XHTML.GZ"].randomElement(using: &random)!
            let name = base + String((0..<Int.random(in: 1...3, using: &random)).map { _ in Bool.random(using: &random) ? "." : " " })
            let file = try Self.made("import gzip, sys; sys.stdout.buffer.write(gzip.compress(sys.stdin.buffer.read()))",
                                     Self.page(&random, marked: marked, svg: base.lowercased().contains("svg")))
            let bytes = PageReviewTests.mail(type: "application/octet-stream", name: name, content: file)
            try PageReviewTests.expectRead(bytes, file: file, marked: marked, "round \(round): \(name.debugDescription), marked \(marked)")
        }
    }

    /// A saved page (multipart/related, its HTML in base64), as Python's email writes it.
    static let savedPage = """
        import base64, sys
        from email.mime.multipart import MIMEMultipart
        from email.mime.text import MIMEText
        from email import charset
        html = sys.stdin.read()
        outer = MIMEMultipart("related", type="text/html")
        outer["Subject"] = "saved page"
        part = MIMEText(html, "html", "utf-8")
        del part["Content-Transfer-Encoding"]
        cs = charset.Charset("utf-8")
        cs.body_encoding = charset.BASE64
        part.set_payload(html, cs)
        outer.attach(part)
        data = outer.as_bytes()
        """

    @Test("a saved message as .eml, a web archive without a name, a name with a trailing dot: read as a message")
    func savedMessages() throws {
        var random = SeededRandom(seed: 2026_11_27_23)
        for round in 0..<8 {
            let marked = round % 4 != 3
            let (type, name): (String, String?) = [("application/octet-stream", "fwd.eml"), ("application/x-mimearchive", nil),
                                                   ("application/octet-stream", "Saved.MHT."), ("application/octet-stream", "s.mhtml ")]
                .randomElement(using: &random)!
            let span = marked ? "[[private]]secret words[[/private]]" : "no span here"
            let file = try Self.made(Self.savedPage + "\n" + "sys.stdout.buffer.write(data)\n", "<html><body><p>\(round): \(span)</p></body></html>\n")
            let bytes = PageReviewTests.mail(type: type, name: name, content: file)
            try PageReviewTests.expectRead(bytes, file: file, marked: marked, "round \(round): \(type) \(name ?? "(no name)"), marked \(marked)")
        }
    }

    @Test("a zip holding a saved page or message (.mht, .mhtml, .eml), its HTML in base64: not read, so withheld, refused under pass")
    func savedMessagesInZips() throws {
        var random = SeededRandom(seed: 2026_11_27_24)
        for round in 0..<4 {
            let entry = ["saved/page.mht", "a/b.MHTML", "fwd.eml", "x.mht."].randomElement(using: &random)!
            let file = try Self.made(Self.savedPage + "\n" + """
                import io, zipfile
                z = io.BytesIO()
                with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zz: zz.writestr("\(entry)", data)
                sys.stdout.buffer.write(z.getvalue())
                """, "<html><body><p>\(round): [[private]]secret words[[/private]]</p></body></html>\n")
            let bytes = PageReviewTests.mail(type: "application/zip", name: "site.zip", content: file)
            let written = String(decoding: try Postcard.censored(try MIMEMessage.parse(bytes)).serialize(), as: UTF8.self)
            #expect(!written.contains(Data(file).base64EncodedString().prefix(40)), "round \(round): \(entry) went out unchanged")
            #expect(throws: PipelineError.self, "pass: \(entry)") { try Postcard.censored(try MIMEMessage.parse(bytes), opaque: .pass) }
        }
    }
}
