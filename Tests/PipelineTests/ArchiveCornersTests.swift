import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// Issue 21, class c of the red team of 27 November: archives and pages where the
/// compressed-file reading did not look. A zip after other data inside a zip entry (a
/// self-extracting program, a picture with an archive appended), a zip inside a PDF
/// stream (an embedded file), and an HTML page inside a zip whose span only a browser's
/// parser shows (`<bdo dir=rtl>` across a tag, `<!-->`, a comment opened inside `<style>`,
/// a bogus comment `<!x=">`): each went out unchanged from a mail with no other span.
/// Python's zipfile and zlib make the files and, for the archives, are the oracle.
@Suite("Archives after data, zips in PDFs, pages in zips")
struct ArchiveCornersTests {
    static let script = #"""
        import sys, io, zipfile, zlib, random
        shape, text, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
        rng = random.Random(seed)
        filler = lambda: " ".join(rng.choice(["lorem", "ipsum", "dolor", "[1]", "[link]"]) for _ in range(rng.randrange(5, 100)))
        def zipped(entries, method=None):
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as z:
                for name, body in entries:
                    z.writestr(name, body, compress_type=method or rng.choice([zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED]))
            return out.getvalue()
        def prefix():
            return rng.choice([b"MZ\x90\x00", b"\xff\xd8\xff\xe0\x00\x10JFIF", b"%PDF-1.4\n", b""]) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 5000)))
        def shown_in_zip(data):
            z = zipfile.ZipFile(io.BytesIO(data))
            return any(text.encode() in z.read(n) for n in z.namelist())
        inner = zipped([("notes.txt", filler() + " " + text + " " + filler())], zipfile.ZIP_DEFLATED)
        if shape == "afterdata":
            carrier = prefix() + inner
            data = zipped([("readme.txt", filler()), (rng.choice(["setup.exe", "photo.jpg", "data.bin"]), carrier)], zipfile.ZIP_DEFLATED)
            outer = zipfile.ZipFile(io.BytesIO(data))
            shown = any(shown_in_zip(outer.read(n)) for n in outer.namelist() if n != "readme.txt")
        elif shape == "pdfzip":
            body = inner if rng.random() < 0.5 else prefix() + inner
            stream = zlib.compress(body)
            data = (b"%PDF-1.7\n1 0 obj\n<< /Type /EmbeddedFile /Filter /FlateDecode /Length " + str(len(stream)).encode()
                    + b" >>\nstream\n" + stream + b"\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
            shown = shown_in_zip(zlib.decompress(stream))
        elif shape in ("pretty", "prettybidi"):
            # A word processor's document written indented, the span split into runs; Word shows
            # the runs' text (w:t) joined, the indentation between elements not at all.
            shown_text = text if shape == "pretty" else "\u202e" + text[::-1]
            written = text if shape == "pretty" else text[::-1]
            cuts = sorted(rng.sample(range(1, len(written)), rng.randrange(2, 5)))
            pieces = [written[i:j] for i, j in zip([0] + cuts, cuts + [len(written)])]
            if shape == "prettybidi": pieces[0] = rng.choice(["&#x202E;", "&#8238;", "\u202e"]) + pieces[0]
            ind = rng.choice(["\n", "\r\n", "\n  ", "\n\t\t"])
            runs = ind.join("<w:r>" + ind + "<w:t>" + p + "</w:t>" + ind + "</w:r>" for p in pieces)
            doc = ('<?xml version="1.0" encoding="UTF-8"?>' + ind + '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
                   + ind + "<w:body>" + ind + "<w:p>" + ind + runs + ind + "</w:p>" + ind + "</w:body>" + ind + "</w:document>")
            data = zipped([("[Content_Types].xml", "<Types/>"), ("word/document.xml", doc)], zipfile.ZIP_DEFLATED)
            import xml.etree.ElementTree as ET
            root = ET.fromstring(zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml"))
            shown = shown_text in "".join(t.text or "" for t in root.iter("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}t"))
        else:  # page: the HTML, its file name and the zip
            data = zipped([("index.html", text), ("style.css", "p { color: red }")])
            shown = True
        print("yes" if shown else "no", file=sys.stderr)
        sys.stdout.buffer.write(data)
        """#

    static func file(_ shape: String, _ text: String, seed: UInt64) throws -> (bytes: [UInt8], shown: Bool) {
        let made = try run("python3", ["-c", script, shape, text, String(seed)])
        try #require(made.status == 0, "python3: \(made.errors)")
        return (made.stdout, made.errors.contains("yes"))
    }

    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["INFLATE_SEED"] ?? "") ?? 2026_11_27 }

    static func secret(_ random: inout SeededRandom) -> String {
        "zq" + String((0..<10).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
    }

    /// `rounds` files of `shape(round)` with a span inside (the oracle must show it), each expected
    /// withheld and refused when passed; then one file of each control shape without a span, sent as it came.
    static func spansAndControls(rounds: Int, _ shape: (Int) -> (shape: String, name: String), controls: [String]) throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<rounds {
            let (kind, name) = shape(round)
            let made = try Self.file(kind, "[[private]]\(Self.secret(&random))[[/private]]", seed: random.next())
            let what = "seed \(Self.seed) round \(round): \(kind)"
            try #require(made.shown, "\(what): the oracle does not see the span")
            let result = try InflatedShapesTests.postcard(of: made.bytes, name: name)
            #expect(result.withheld && !result.unchanged, "\(what): not withheld")
            #expect(result.refusedWhenPassed, "\(what): passed")
        }
        for kind in controls {
            let made = try Self.file(kind, "see [1] and [link]", seed: 7)
            let result = try InflatedShapesTests.postcard(of: made.bytes, name: "file.bin")
            #expect(!result.withheld && result.unchanged && !result.refusedWhenPassed, "control \(kind)")
        }
    }

    @Test("a span in a zip after other data inside a zip entry, or in a zip (after data or not) in a PDF's FlateDecode stream, no other span: withheld, refused when passed")
    func archivesAfterData() throws {
        try Self.spansAndControls(rounds: 16, { $0 % 2 == 0 ? ("afterdata", "bundle.zip") : ("pdfzip", "letter.pdf") }, controls: ["afterdata", "pdfzip"])
    }

    @Test("a span split into runs of a pretty-printed docx (line ends and indentation between the runs), or reversed after an override written as a reference, no other span: withheld, refused when passed")
    func prettyPrintedRuns() throws {
        try Self.spansAndControls(rounds: 12, { ($0 % 2 == 0 ? "pretty" : "prettybidi", "memo.docx") }, controls: ["pretty"])
    }

    /// An HTML page whose span a browser's parser shows and a markup reading that takes
    /// every `<` for a tag and ends comments only at `-->` does not, with `secret` inside.
    static func page(_ secret: String, _ random: inout SeededRandom) -> (html: String, shape: String) {
        func cut(_ marker: String) -> String {
            let at = Int.random(in: 1..<marker.count, using: &random)
            return String(marker.prefix(at)) + ["<b\n></b>", "<i></i>", "<!---->"].randomElement(using: &random)! + String(marker.dropFirst(at))
        }
        let span = cut("[[private]]") + secret + cut("[[/private]]")
        switch Int.random(in: 0..<5, using: &random) {
        case 0:
            let mirrored = String(("[[private]]" + secret + "[[/private]]").reversed().map { $0 == "[" ? "]" : $0 == "]" ? "[" : $0 })
            return ("<p>Code: <bdo dir=\"rtl\">" + cut(String(mirrored.prefix(12))) + mirrored.dropFirst(12).dropLast(11) + cut(String(mirrored.suffix(11))) + "</bdo></p>", "bdo")
        case 1: return ("<p>a<!-->" + span.replacingOccurrences(of: "<!---->", with: "<!-->") + "</p>", "<!-->")
        case 2: return ("<style><!--</style><p>" + span + "</p>", "comment opened in style")
        case 3: return ("<p><!x=\">" + span + "\"></p>", "bogus comment")
        default: return ("<title><!--</title><p>" + span + "</p><!-- -->", "comment opened in title")
        }
    }

    @Test("an HTML page in a zip whose span only a browser's parser shows (bdo across a tag, <!-->, a comment opened in style or title, a bogus comment), no other span: withheld, refused when passed")
    func pagesInZips() throws {
        var random = SeededRandom(seed: Self.seed)
        for round in 0..<15 {
            let secret = Self.secret(&random)
            let (html, shape) = Self.page(secret, &random)
            let made = try Self.file("page", html, seed: random.next())
            let result = try InflatedShapesTests.postcard(of: made.bytes, name: "site.zip")
            #expect(result.withheld && !result.unchanged, "round \(round): \(shape): not withheld\n\(html)")
            #expect(result.refusedWhenPassed, "round \(round): \(shape): passed\n\(html)")
        }
        let friendly = try Self.file("page", "<p>See [1] and <bdo dir=rtl>[link]</bdo><!-->[x]<b\n>y</b></p>", seed: 3)
        let result = try InflatedShapesTests.postcard(of: friendly.bytes, name: "site.zip")
        #expect(!result.withheld && result.unchanged && !result.refusedWhenPassed, "a friendly page in a zip")
    }

    @Test("the pages of pagesInZips as headless Chromium shows them: each shows its span (logical order for bdo)",
          .enabled(if: PageMarkerTests.chromium, "needs chromium, chromedriver and selenium (scripts/bootstrap --browser)"))
    func chromiumShowsThePages() throws {
        let folder = try makePrivateDirectory(prefix: "ms-zip-pages")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var random = SeededRandom(seed: Self.seed)
        var pages: [(secret: String, shape: String, path: String)] = []
        for round in 0..<15 {
            let secret = Self.secret(&random)
            let (html, shape) = Self.page(secret, &random)
            _ = random.next()
            let path = folder + "/\(round).html"
            FileManager.default.createFile(atPath: path, contents: Data(html.utf8), attributes: [.posixPermissions: 0o600])
            pages.append((secret, shape, path))
        }
        let script = Paths.root.appendingPathComponent("Tests/HTMLRebuildTests/chromium_text.py").path
        let result = try run("python3", [script] + pages.map(\.path))
        try #require(result.status == 0, "\(result.errors)")
        let texts = result.output.split(separator: "\n").map { line in (try? JSONDecoder().decode(String?.self, from: Data(line.utf8))) ?? nil }
        try #require(texts.count == pages.count)
        for (index, page) in pages.enumerated() {
            let shown = (texts[index] ?? "").lowercased()
            let expected = page.shape == "bdo" ? String(page.secret.reversed()) : "[[private]]" + page.secret + "[[/private]]"
            #expect(shown.contains(expected), "\(page.shape): \(shown.debugDescription)")
        }
    }
}
