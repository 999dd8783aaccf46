import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// A hostile review of the page readings (27 November): pages declared as text
/// (text/plain or JSON named .html, octet-stream with a charset, text/xml,
/// image/svg+xml, XHTML) skipped the check of what CSS composes; friendly XML and
/// SVG files of more than 1,024 self-closing elements counted as marked (read as
/// HTML they nest too deep); a small zip of a large page cost 17 s and 1.3 GB.
@Suite("Pages: the review's shapes")
struct PageReviewTests {
    static func mail(type: String, name: String?, content: [UInt8], text: String = "Hello.\n") -> [UInt8] {
        let disposition = name.map { "\nContent-Disposition: attachment; filename=\"\($0)\"" } ?? ""
        let head = """
            From: a@example.org\nTo: b@example.org\nSubject: files\nMIME-Version: 1.0
            Content-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: text/plain; charset=utf-8\n\n\(text)
            --B\nContent-Type: \(type)\(disposition)\nContent-Transfer-Encoding: base64\n\n
            """
        return Array(head.utf8) + Array(Data(content).base64EncodedString(options: .lineLength76Characters).utf8)
            + Array("\n--B--\n".utf8)
    }

    @Test("a page declared as text, JSON, XML, SVG or XHTML whose CSS composes a marker: withheld, never unchanged; pass refuses")
    func declaredPages() throws {
        var random = SeededRandom(seed: 2026_11_27)
        let declared = [("text/plain; charset=utf-8", "p.html"), ("application/json", "p.html"),
                        ("application/octet-stream; charset=utf-8", "p.html"), ("text/xml", "p.xml"),
                        ("image/svg+xml", "p.svg"), ("application/xhtml+xml", "p.xhtml")]
        for round in 0..<24 {
            let (type, name) = declared[round % declared.count]
            let secret = "zq" + String((0..<8).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement(using: &random)! })
            let cut = Int.random(in: 1...8, using: &random)
            let open = Array("[[private]]"), close = Array("[[/private]]")
            let style = "p::before { content: \"\(String(open[..<cut]))\" \"\(String(open[cut...]))\" } "
                + "p::after { content: \"\(String(close[..<min(cut, 11)]))\" \"\(String(close[min(cut, 11)...]))\" }"
            let page = "<html><head><style>\(style)</style></head><body><p>\(secret)</p></body></html>\n"
            let bytes = Self.mail(type: type, name: Bool.random(using: &random) ? name : name.uppercased(), content: Array(page.utf8))
            let what = "round \(round): \(type) \(name)"
            let written = String(decoding: try Postcard.censored(try MIMEMessage.parse(bytes)).serialize(), as: UTF8.self)
            #expect(written.contains("held back") && !written.contains(Data(page.utf8).base64EncodedString().prefix(40)),
                    "\(what): went out unchanged\n\(written)")
            #expect(throws: PipelineError.self, "pass: \(what)") { try Postcard.censored(try MIMEMessage.parse(bytes), opaque: .pass) }
        }
    }

    @Test("friendly XML and SVG files of 1,025 to 3,000 self-closing elements, declared octet-stream or as themselves, in a mail without spans: unchanged")
    func deepFriendlyXML() throws {
        var random = SeededRandom(seed: 2026_11_28)
        for round in 0..<12 {
            let count = Int.random(in: 1_025...3_000, using: &random)
            let svg = round % 2 == 0
            let body = (0..<count).map { svg ? "<path d=\"M\($0) 0L0 \($0)\"/>" : "<row id=\"\($0)\" value=\"[\($0)]\"/>" }.joined(separator: "\n")
            let file = svg ? "<svg xmlns=\"http://www.w3.org/2000/svg\">\n\(body)\n</svg>\n" : "<?xml version=\"1.0\"?>\n<rows>\n\(body)\n</rows>\n"
            let type = [svg ? "image/svg+xml" : "text/xml", "application/octet-stream"].randomElement(using: &random)!
            let bytes = Self.mail(type: type, name: svg ? "map.svg" : "export.xml", content: Array(file.utf8))
            let written = String(decoding: try Postcard.censored(try MIMEMessage.parse(bytes), opaque: .pass).serialize(), as: UTF8.self)
            #expect(!written.contains("held back") && written.contains(Data(file.utf8).base64EncodedString().prefix(60)),
                    "round \(round): \(count) elements, \(type): not sent as it came")
        }
    }

    @Test("pages inside a mail's zips beyond 4 MiB together: the zip is not clean (withheld), read without holding the pages as HTML")
    func zipPagesBeyondAllowance() throws {
        // Python's zipfile makes the archive: one page of 5 MiB (compresses to little), one of 1 KiB.
        let made = try run("/usr/bin/python3", ["-c", """
            import io, sys, zipfile
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("site/index.html", "<p>" + "hello world " * (5 * 1024 * 1024 // 12) + "</p>")
                z.writestr("site/a.html", "<p>small</p>")
            sys.stdout.buffer.write(out.getvalue())
            """])
        #expect(made.status == 0)
        let bytes = Self.mail(type: "application/zip", name: "site.zip", content: made.stdout)
        let finding = Redactor.standard.readings(of: try MIMEMessage.parse(bytes))
        #expect(finding.marker?.contains("pages beyond") == true, "\(String(describing: finding.marker))")
        // The same archive with a page under the allowance is clean.
        let small = try run("/usr/bin/python3", ["-c", """
            import io, sys, zipfile
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("site/index.html", "<p>" + "hello world " * 1000 + "</p>")
            sys.stdout.buffer.write(out.getvalue())
            """])
        #expect(Redactor.standard.readings(of: try MIMEMessage.parse(Self.mail(type: "application/zip", name: "site.zip", content: small.stdout))).marker == nil)
    }
}
