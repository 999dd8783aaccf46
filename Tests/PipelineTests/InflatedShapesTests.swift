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
                if rng.random() < 0.2 and "]]>" not in piece: return "<![CDATA[" + piece + "]]>"
                return "".join(rng.choice([c, "&#%d;" % ord(c), "&#x%X;" % ord(c)]) if c in "[]/" else c for c in piece)
            attr = lambda: rng.choice(['', ' xml:space="preserve"', ' w:rsidR="00A1" w:hint="a>b"', " w:x='1>2'"])
            return "".join('<w:r><w:rPr><w:b/></w:rPr><w:t%s>%s</w:t></w:r>' % (attr(), escaped(p)) for p in pieces)
        def document(text):
            # A comment with a quote and a `>` in it must not hide what follows.
            comment = rng.choice(["", "<!-- it's a \"draft\" > -->", "<!-- x -->"])
            return ('<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="urn:w"><w:body>' + comment + '<w:p>' + runs(filler())
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
        elif shape == "pdf":
            import zlib, base64, binascii, re
            def literal(piece):
                out = ""
                for c in piece:
                    r = rng.random()
                    if c in "()\\": out += "\\" + c
                    elif r < 0.3: out += "\\%03o" % ord(c)
                    elif r < 0.4 and c in "[]/": out += "\\" + c   # a backslash before another byte is dropped
                    else: out += c
                return "(" + out + ")"
            def pdfstring(piece):
                return literal(piece) if rng.random() < 0.6 else "<" + binascii.hexlify(piece.encode()).decode() + ">"
            def shown(content):
                cuts = sorted(rng.sample(range(1, len(content)), min(len(content) - 1, rng.randrange(0, 4))))
                pieces = [content[i:j] for i, j in zip([0] + cuts, cuts + [len(content)])]
                if rng.random() < 0.5:
                    return "[" + " ".join(pdfstring(p) + " %d" % rng.randrange(-200, 200) for p in pieces) + "] TJ"
                return " ".join(pdfstring(p) + " Tj" for p in pieces)
            out = io.BytesIO()
            out.write(b"%PDF-1.4\n")
            streams = rng.randrange(1, 4)
            target = rng.randrange(streams)
            expected = []
            for i in range(streams):
                content = ("BT /F1 12 Tf 72 712 Td " + shown(filler()) + " 0 -14 Td " + (shown(text) if i == target else "") + " ET").encode()
                chain = rng.choice([[], ["FlateDecode"], ["ASCIIHexDecode"], ["ASCII85Decode"], ["ASCIIHexDecode", "FlateDecode"], ["ASCII85Decode", "FlateDecode"], ["AHx"], ["A85", "Fl"]])
                data = content
                for f in reversed(chain):
                    if f in ("FlateDecode", "Fl"): data = zlib.compress(data)
                    elif f in ("ASCIIHexDecode", "AHx"): data = binascii.hexlify(data) + b">"
                    else: data = base64.a85encode(data, wrapcol=rng.choice([0, 60])) + b"~>"
                filt = "" if not chain else " /Filter /" + chain[0] if len(chain) == 1 else " /Filter [" + " ".join("/" + f for f in chain) + "]"
                out.write(b"%d 0 obj\n<< /Length %d%s >>\nstream\n" % (i + 4, len(data), filt.encode()) + data + b"\nendstream\nendobj\n")
            out.write(b"trailer\n<< /Root 1 0 R >>\n%%EOF\n")
            data = out.getvalue()
            # The oracle, as a reader decodes: each stream by its filters, then its strings joined.
            def decode(body, chain):
                for f in chain:
                    if f in ("FlateDecode", "Fl"): body = zlib.decompress(body)
                    elif f in ("ASCIIHexDecode", "AHx"): body = binascii.unhexlify(re.sub(rb"\s", b"", body.split(b">")[0]))
                    else: body = base64.a85decode(body.split(b"~>")[0], adobe=False, ignorechars=b" \t\r\n")
                return body
            def strings(c):
                got, i = b"", 0
                while i < len(c):
                    if c[i:i+1] == b"(":
                        depth, i = 1, i + 1
                        while depth:
                            ch = c[i:i+1]
                            if ch == b"\\":
                                m = re.match(rb"[0-7]{1,3}", c[i+1:i+4])
                                if m: got += bytes([int(m.group(), 8) & 255]); i += 1 + len(m.group()); continue
                                got += c[i+1:i+2]; i += 2; continue
                            if ch == b"(": depth += 1
                            if ch == b")": depth -= 1
                            if depth: got += ch
                            i += 1
                    elif c[i:i+1] == b"<" and c[i+1:i+2] != b"<":
                        end = c.index(b">", i)
                        got += binascii.unhexlify(c[i+1:end]); i = end + 1
                    else: i += 1
                return got
            seen = []
            for m in re.finditer(rb"<< /Length (\d+)(?: /Filter (/\w+|\[[^\]]*\]))? >>\nstream\n", data):
                chain = re.findall(rb"/(\w+)", m.group(2) or b"")
                body = data[m.end():m.end() + int(m.group(1))]
                seen.append(strings(decode(body, [f.decode() for f in chain])))
            print("yes" if any(text.encode() in s for s in seen) else "no", file=sys.stderr)
            sys.stdout.buffer.write(data)
            sys.exit(0)
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

    @Test("the markup reading shows what an XML parser shows: runs joined, references decoded, CDATA kept, a comment with a quote and a > passed over")
    func markupAsAParserReadsIt() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["INFLATE_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        for round in 0..<16 {
            let text = "[[private]]zq\(round)[[/private]]"
            let made = try Self.file("runs", text, seed: random.next())
            try #require(made.shown, "seed \(seed) round \(round): the oracle does not see the span")
            var fed: [UInt8] = []
            #expect(Inflation.inflate(made.bytes) { fed += $0 } == .read)
            #expect(String(decoding: fed, as: UTF8.self).contains(text), "seed \(seed) round \(round): not in the text read")
        }
    }

    @Test("a span in a zip with data before it (0 to 70,000 bytes: random, a PDF's or an image's or a program's start), no other span: withheld, refused when passed")
    func prefixedZip() throws {
        try Self.spans({ _, _ in ("prefix", "setup.exe") }, rounds: 10)
    }

    @Test("a span in an archive inside archives (zip and gzip, depth 1 to 5; past 4 not read): withheld, refused when passed")
    func nestedArchives() throws {
        try Self.spans({ round, random in ("nested\(round < 5 ? round + 1 : Int.random(in: 1...5, using: &random))", "files.zip") }, rounds: 10)
    }

    @Test("a span in a PDF's text as its reader assembles it: TJ arrays and Tj runs, octal escapes, hex strings, /ASCIIHexDecode and /ASCII85Decode alone or before /FlateDecode (no other span): withheld, refused when passed")
    func pdfText() throws {
        try Self.spans({ _, _ in ("pdf", "letter.pdf") }, rounds: 12)
    }

    @Test("controls: office files with [1] and [link] in split runs and references, prefixed zips and archives to depth 4 without a span, a PDF: unchanged; depth 5 is withheld")
    func controls() throws {
        var random = SeededRandom(seed: 2026_11_26)
        for round in 0..<12 {
            let shape = ["runs", "prefix", "nested\(round % 4 + 1)", "pdf"][round % 4]
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

    /// A hostile review's shapes: a processing instruction holding `>` inside a split run, entities a
    /// document declares itself, a PDF comment holding `(`. Python makes the files; ElementTree, which
    /// ends an instruction at `?>` and expands internal entities, is the oracle for the first two.
    @Test("a processing instruction with a > in it, declared entities, a PDF comment with a ( in it")
    func reviewedShapes() throws {
        for shape in ["instruction", "entities", "pdf"] {
            let file = try run("python3", ["-c", Self.reviewed, shape])
            try #require(file.status == 0, "python3: \(file.errors)")
            var fed: [UInt8] = []
            let outcome = Inflation.inflate(file.stdout) { fed += $0 }
            switch shape {
            case "entities": #expect(outcome == .unreadable, "declared entities were read as clean")
            default:
                #expect(outcome == .read)
                #expect(String(decoding: fed, as: UTF8.self).contains("[[private]]zq"), "\(shape): the span is not in the text read")
            }
        }
    }

    static let reviewed = #"""
        import io, sys, zipfile, zlib, xml.etree.ElementTree as ET
        def zipped(name, text):
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z: z.writestr(name, text)
            return out.getvalue()
        shape = sys.argv[1]
        if shape == "instruction":
            doc = '<?xml version="1.0"?><d><t>[[pri<?x a>b?>vate]]zq[[/pri<?x c>d?>vate]]</t></d>'
            assert "[[private]]zq[[/private]]" in "".join(ET.fromstring(doc).itertext())
            sys.stdout.buffer.write(zipped("word/document.xml", doc))
        elif shape == "entities":
            doc = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "[[pri"><!ENTITY b "vate]]">]><d><p>&a;&b;zq&a;&b;</p></d>'
            assert "[[private]]zq[[private]]" in "".join(ET.fromstring(doc).itertext())
            sys.stdout.buffer.write(zipped("a.xhtml", doc))
        else:
            content = b"BT /F1 12 Tf 72 700 Td % a note (\n(\\[\\[pri) Tj" + b" 0 0 Td" * 40 + b" (vate\\]\\]zq) Tj ET"
            stream = zlib.compress(content)
            sys.stdout.buffer.write(b"%%PDF-1.4\n1 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
                                    + stream + b"\nendstream\nendobj\n%%EOF\n")
        """#
}
