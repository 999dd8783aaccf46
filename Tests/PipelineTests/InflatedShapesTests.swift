import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// The shapes of compressed files the first reading missed (issue 21, the opaque brief):
/// a word processor's text split into runs or written with references, a zip with data
/// before it, and archives inside archives. Python's zipfile, gzip and xml.etree make
/// the files and are the oracle that the span is there as a reader shows it.
@Suite("Compressed attachments: split runs, prefixed zips, archives inside archives")
struct InflatedShapesTests {
    /// Makes a file of `shape` with `text` inside (seeded), and says whether Python, reading it as
    /// its program would, shows `text`: the file's bytes, then a line `yes` or `no` on stderr.
    static let script = #"""
        import sys, io, zipfile, gzip, random, xml.etree.ElementTree as ET
        shape, text, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
        rng = random.Random(seed)
        filler = lambda: " ".join(rng.choice(["lorem", "ipsum", "dolor", "sit", "amet", "[1]", "[link]"]) for _ in range(rng.randrange(5, 200)))
        def zipped(entries):
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as z:
                for name, body in entries:
                    z.writestr(name, body, compress_type=rng.choice([zipfile.ZIP_DEFLATED, zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED]))
            return out.getvalue()
        def runs(text):
            # The text split into runs at random points, its brackets and slash as references at random.
            cuts = sorted(rng.sample(range(1, len(text)), rng.randrange(0, 4)))
            pieces = [text[i:j] for i, j in zip([0] + cuts, cuts + [len(text)])]
            def escaped(piece):
                return "".join(rng.choice([c, "&#%d;" % ord(c), "&#x%X;" % ord(c)]) if c in "[]/" else c for c in piece)
            attr = lambda: rng.choice(['', ' xml:space="preserve"', ' w:rsidR="00A1" w:hint="a>b"', " w:x='1>2'"])
            return "".join('<w:r><w:rPr><w:b/></w:rPr><w:t%s>%s</w:t></w:r>' % (attr(), escaped(p)) for p in pieces)
        def document(text):
            return ('<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="urn:w"><w:body><w:p>' + runs(filler())
                    + '</w:p><w:p>' + runs(text) + '</w:p><w:p>' + runs(filler()) + '</w:p></w:body></w:document>')
        def shown_xml(data):
            return "".join(ET.fromstring(data).itertext())
        def all_shown(data, depth=0):
            # What a reader shows, recursively: zip entries (and their XML's text), gzip members.
            shown = [data]
            if depth > 8: return shown
            try:
                with zipfile.ZipFile(io.BytesIO(data)) as z:
                    for n in z.namelist():
                        body = z.read(n)
                        try: shown.append(shown_xml(body).encode())
                        except Exception: pass
                        shown += all_shown(body, depth + 1)
            except Exception: pass
            try: shown += all_shown(gzip.decompress(data), depth + 1)
            except Exception: pass
            return shown
        if shape == "runs":
            kind = rng.choice(["docx", "xlsx", "odt", "epub", "pptx"])
            name = {"docx": "word/document.xml", "xlsx": "xl/sharedStrings.xml", "odt": "content.xml", "epub": "OEBPS/ch1.xhtml", "pptx": "ppt/slides/slide1.xml"}[kind]
            data = zipped([("[Content_Types].xml", '<?xml version="1.0"?><Types/>'), ("_rels/.rels", "<Relationships/>"), (name, document(text))])
        elif shape == "prefix":
            head = rng.choice([b"", b"%PDF-1.4\n", b"\xff\xd8\xff\xe0", b"MZ\x90\x00"])
            prefix = head + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 70000)))
            data = prefix + zipped([("a.txt", filler() + " " + text + " " + filler()), ("b.txt", filler())])
        else:  # nested, depth given in the shape: "nested3"
            depth = int(shape[6:])
            data = rng.choice([lambda: zipped([("inner.txt", filler() + " " + text + " " + filler())]),
                               lambda: gzip.compress((filler() + " " + text + " " + filler()).encode())])()
            for _ in range(depth - 1):
                data = rng.choice([lambda: zipped([("readme.txt", filler()), ("inner.bin", data)]), lambda: gzip.compress(data)])()
        sys.stdout.buffer.write(data)
        print("yes" if any(text.encode() in s for s in all_shown(data)) else "no", file=sys.stderr)
        """#

    /// The file of `shape` holding `text`, and whether Python shows `text` in it.
    static func file(_ shape: String, _ text: String, seed: UInt64) throws -> (bytes: [UInt8], shown: Bool) {
        let made = try run("python3", ["-c", script, shape, text, String(seed)])
        try #require(made.status == 0, "python3: \(made.errors)")
        return (made.stdout, made.errors.contains("yes"))
    }

    /// The postcard of a mail with `file` attached and no other span: whether the file was withheld
    /// and whether it went out as it came; and whether the mail was refused with `--opaque-parts pass`.
    static func postcard(of file: [UInt8], name: String) throws -> (withheld: Bool, unchanged: Bool, refusedWhenPassed: Bool) {
        let mail = InflatedTests.mail(file, type: "application/octet-stream", name: name)
        let postcard = try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)))
        let leaves = postcard.body?.walk().map(\.entity).filter { $0.kind == .leaf } ?? []
        let refused = (try? Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: .pass)) == nil
        return (leaves.compactMap(\.text).joined().contains("held back"), leaves.contains { $0.content == file }, refused)
    }

    /// Runs `rounds` rounds of `shape(round)`, a span inside (the oracle must show it), expecting it withheld.
    static func spans(_ shape: (Int, inout SeededRandom) -> (shape: String, name: String), rounds: Int) throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["INFLATE_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        for round in 0..<rounds {
            let secret = "zq" + String((0..<10).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement(using: &random)! })
            let marker = ["[[private]]", "[[PRIVATE]]", "[[Private]]"].randomElement(using: &random)!
            let (shape, name) = shape(round, &random)
            let what = "seed \(seed) round \(round): \(shape)"
            let made = try file(shape, "\(marker)\(secret)[[/private]]", seed: random.next())
            try #require(made.shown, "\(what): the oracle does not see the span")
            let result = try postcard(of: made.bytes, name: name)
            #expect(result.withheld && !result.unchanged, "\(what): not withheld")
            #expect(result.refusedWhenPassed, "\(what): passed")
        }
    }

    @Test("a span split into a word processor's runs, or written with character references, in a docx, xlsx, odt, epub or pptx (no other span): withheld, refused when passed")
    func splitRuns() throws {
        try Self.spans({ _, random in ("runs", ["report.docx", "sheet.xlsx", "text.odt", "book.epub", "deck.pptx"].randomElement(using: &random)!) }, rounds: 12)
    }

    @Test("a span in a zip with data before it (0 to 70,000 bytes: random, a PDF's or an image's or a program's start), no other span: withheld, refused when passed")
    func prefixedZip() throws {
        try Self.spans({ _, _ in ("prefix", "setup.exe") }, rounds: 10)
    }

    @Test("a span in an archive inside archives (zip and gzip, depth 1 to 5; past 4 not read): withheld, refused when passed")
    func nestedArchives() throws {
        try Self.spans({ round, random in ("nested\(round < 5 ? round + 1 : Int.random(in: 1...5, using: &random))", "files.zip") }, rounds: 10)
    }

    @Test("controls: office files with [1] and [link] in split runs and references, prefixed zips and archives to depth 4 without a span, a PDF: unchanged; depth 5 is withheld")
    func controls() throws {
        var random = SeededRandom(seed: 2026_11_26)
        for round in 0..<12 {
            let shape = ["runs", "prefix", "nested\(round % 4 + 1)"][round % 3]
            let made = try Self.file(shape, "see [1] and [link] here", seed: random.next())
            let result = try Self.postcard(of: made.bytes, name: "file.bin")
            #expect(!result.withheld && result.unchanged && !result.refusedWhenPassed, "control \(round): \(shape) was not sent as it came")
        }
        let pdf = try InflatedTests.file(kind: "pdf", text: " nothing [private] here [1] ", level: 6, seed: 7)
        let result = try Self.postcard(of: pdf, name: "letter.pdf")
        #expect(!result.withheld && result.unchanged, "the PDF was not sent as it came")
        let deep = try Self.file("nested5", "see [1] here", seed: 5)
        #expect(try Self.postcard(of: deep.bytes, name: "deep.zip").withheld, "an archive at depth 5 was shown clean")
    }
}
