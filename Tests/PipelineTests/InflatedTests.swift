import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// A span inside a compressed file (an office document, a zip, a gzip file, a PDF's streams)
/// is shown by the program that opens it, though no byte of the mail holds a marker. The red
/// team of 26 November sent such mails with no other span: they went out unchanged. Now the
/// readings inflate such files (``Inflation``), so the mail counts as marked and the file is
/// withheld from the postcard. Python's zipfile, gzip and zlib make the files and are the
/// oracle: every file left in the postcard is opened with them and searched.
@Suite("Compressed attachments read inflated")
struct InflatedTests {
    /// Makes the file of `kind` with `text` inside, compressed at `level`, with Python's own writers.
    static func file(kind: String, text: String, level: Int, seed: UInt64) throws -> [UInt8] {
        let script = #"""
            import sys, io, zipfile, gzip, zlib, random
            kind, text, level, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
            rng = random.Random(seed)
            filler = lambda: " ".join(rng.choice(["lorem", "ipsum", "dolor", "sit", "amet"]) for _ in range(rng.randrange(5, 400)))
            out = io.BytesIO()
            if kind in ("docx", "zip"):
                with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as z:
                    names = ["[Content_Types].xml", "word/document.xml", "docProps/core.xml"] if kind == "docx" else ["a.txt", "notes/b.txt", "c.csv"]
                    target = rng.randrange(len(names))
                    for i, name in enumerate(names):
                        body = "<w:t>" + filler() + "</w:t>"
                        if i == target:
                            body += "<w:t>" + text + "</w:t>" if kind == "docx" else text
                        z.writestr(name, body + filler())
                    if rng.random() < 0.3:
                        z.writestr("stored.txt", filler(), compress_type=zipfile.ZIP_STORED)
            elif kind == "gzip":
                members = rng.randrange(1, 4)
                target = rng.randrange(members)
                for i in range(members):
                    out.write(gzip.compress((filler() + (text if i == target else "") + filler()).encode(), compresslevel=level))
            else:  # a PDF with Flate streams
                out.write(b"%PDF-1.4\n")
                streams = rng.randrange(1, 4)
                target = rng.randrange(streams)
                for i in range(streams):
                    content = ("BT /F1 12 Tf 72 712 Td (" + filler() + (text if i == target else "") + ") Tj ET").encode()
                    data = zlib.compress(content, level)
                    eol = rng.choice([b"\n", b"\r\n"])
                    out.write(b"%d 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream" % (i + 4, len(data)) + eol + data + b"\nendstream\nendobj\n")
                out.write(b"trailer\n<< /Root 1 0 R >>\n%%EOF\n")
            sys.stdout.buffer.write(out.getvalue())
            """#
        let made = try run("python3", ["-c", script, kind, text, String(level), String(seed)])
        try #require(made.status == 0, "python3: \(made.errors)")
        return made.stdout
    }

    /// True when Python, opening `bytes` as a zip, gzip or PDF would, finds `secret` in it.
    static func opens(_ bytes: [UInt8], toShow secret: String) throws -> Bool {
        let script = #"""
            import sys, io, zipfile, gzip, zlib, re
            data, secret = sys.stdin.buffer.read(), sys.argv[1].encode()
            shown = [data]
            try:
                with zipfile.ZipFile(io.BytesIO(data)) as z:
                    shown += [z.read(n) for n in z.namelist()]
            except Exception: pass
            try: shown.append(gzip.decompress(data))
            except Exception: pass
            for m in re.finditer(rb"stream\r?\n", data):
                try: shown.append(zlib.decompressobj().decompress(data[m.end():]))
                except Exception: pass
            print("yes" if any(secret in s for s in shown) else "no")
            """#
        let result = try run("python3", ["-c", script, secret], input: bytes)
        return result.output.contains("yes")
    }

    static func mail(_ file: [UInt8], type: String, name: String) -> String {
        let body = Data(file).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed])
        return """
            From: alice@example.org
            To: bob@example.org
            Subject: the file
            MIME-Version: 1.0
            Content-Type: multipart/mixed; boundary=b

            --b
            Content-Type: text/plain; charset=utf-8

            The file is attached.
            --b
            Content-Type: \(type); name="\(name)"
            Content-Disposition: attachment; filename="\(name)"
            Content-Transfer-Encoding: base64

            \(body)
            --b--

            """
    }

    static let kinds: [(kind: String, types: [String], name: String)] = [
        ("docx", ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/octet-stream"], "report.docx"),
        ("zip", ["application/zip", "application/octet-stream", "application/x-zip-compressed"], "files.zip"),
        ("gzip", ["application/gzip", "application/octet-stream"], "log.gz"),
        ("pdf", ["application/pdf", "application/octet-stream"], "letter.pdf"),
    ]

    @Test("a span only inside a zip, docx, gzip or PDF stream (no other span): the file is withheld, refused when passed; Python opens no span in the postcard")
    func spanInsideCompressedFile() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["INFLATE_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        for round in 0..<12 {
            let secret = "zq" + String((0..<10).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement(using: &random)! })
            let marker = ["[[private]]", "[[PRIVATE]]", "[[Private]]"].randomElement(using: &random)!
            let (kind, types, name) = Self.kinds.randomElement(using: &random)!
            let level = Int.random(in: 1...9, using: &random)
            let file = try Self.file(kind: kind, text: " \(marker)\(secret)[[/private]] ", level: level, seed: random.next())
            let what = "seed \(seed) round \(round): \(kind) level \(level)"
            try #require(!String(decoding: file, as: UTF8.self).contains(secret), "\(what): the test's file shows the secret uncompressed")
            try #require(try Self.opens(file, toShow: secret), "\(what): the oracle does not see the secret in the original")
            let mail = Self.mail(file, type: types.randomElement(using: &random)!, name: name)

            let postcard = try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)))
            let leaves = postcard.body?.walk().map(\.entity).filter { $0.kind == .leaf } ?? []
            #expect(leaves.compactMap(\.text).joined().contains("held back"), "\(what): not withheld")
            for leaf in leaves {
                #expect(try !Self.opens(leaf.content ?? [], toShow: secret), "\(what): the postcard's file shows the span")
            }
            #expect(throws: PipelineError.self, "\(what) passed") {
                try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: .pass)
            }
        }
    }

    @Test("zips a reader opens otherwise than their local headers say (the directory's method or flags), or by a method not read here (bzip2, LZMA): a span inside is withheld")
    func zipsReadByTheirDirectory() throws {
        let script = #"""
            import sys, io, zipfile
            shape, text = sys.argv[1], sys.argv[2]
            out = io.BytesIO()
            method = {"bzip2": zipfile.ZIP_BZIP2, "lzma": zipfile.ZIP_LZMA}.get(shape, zipfile.ZIP_DEFLATED)
            with zipfile.ZipFile(out, "w", compression=method) as z:
                z.writestr("a.txt", "hello " + text + " bye " * 50)
            data = bytearray(out.getvalue())
            if shape == "local-encrypted": data[6] |= 1          # the local header says encrypted, the directory not
            if shape == "local-stored": data[8] = 0              # the local header says stored, the directory deflated
            sys.stdout.buffer.write(bytes(data))
            """#
        for shape in ["local-encrypted", "local-stored", "bzip2", "lzma"] {
            let secret = "zq" + shape.filter(\.isLetter)
            let made = try run("python3", ["-c", script, shape, "[[private]]\(secret)[[/private]]"])
            try #require(made.status == 0, "\(made.errors)")
            let postcard = try Postcard.censored(try MIMEMessage.parse(Array(Self.mail(made.stdout, type: "application/zip", name: "a.zip").utf8)))
            let leaves = postcard.body?.walk().map(\.entity).filter { $0.kind == .leaf } ?? []
            #expect(leaves.compactMap(\.text).joined().contains("held back"), "\(shape): not withheld")
            #expect(!leaves.contains { $0.content == made.stdout }, "\(shape): sent as it came")
        }
    }

    @Test("controls: the same files without a marker go out unchanged; a compression bomb is withheld, not read to its end")
    func controlsAndBomb() throws {
        var random = SeededRandom(seed: 2026_11_26)
        for (kind, types, name) in Self.kinds {
            let file = try Self.file(kind: kind, text: " nothing [private] here [[1]] ", level: 6, seed: random.next())
            let postcard = try Postcard.censored(try MIMEMessage.parse(Array(Self.mail(file, type: types[0], name: name).utf8)))
            let leaves = postcard.body?.walk().map(\.entity).filter { $0.kind == .leaf } ?? []
            #expect(leaves.contains { $0.content == file }, "\(kind) was not sent as it came")
            #expect(!leaves.compactMap(\.text).joined().contains("held back"), "\(kind) was withheld")
        }
        // 40 MB of zeros in one entry: about 40 KB compressed, far past the budget (16 MiB + 32 × its size).
        let bomb = try run("python3", ["-c", """
            import sys, io, zipfile
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
                with z.open("zeros.txt", "w") as f:
                    for _ in range(40): f.write(bytes(1 << 20))
            sys.stdout.buffer.write(out.getvalue())
            """])
        try #require(bomb.status == 0 && bomb.stdout.count < 1 << 20, "\(bomb.errors)")
        #expect(Inflation.inflate(bomb.stdout) { _ in } == .unreadable)
        let postcard = try Postcard.censored(try MIMEMessage.parse(Array(Self.mail(bomb.stdout, type: "application/zip", name: "z.zip").utf8)))
        #expect(postcard.body?.walk().map(\.entity).compactMap(\.text).joined().contains("held back") == true, "the bomb was not withheld")
    }
}
