import Foundation
import MIME
import Pipeline
import TestSupport
import Testing

/// Compressed files with no strong signature (`.lzma`, zlib) or no end of their own (`.Z`) as
/// members of the containers their tools open: a tar in any format (v7, ustar, GNU, pax), alone or
/// inside a `.tar.gz` or `.tar.xz`; an ar archive; a cpio archive (newc, crc, odc); a `.deb` whose
/// data member is `data.tar.lzma`, or whose `data.tar.gz` holds a `.lzma`; a zip's stored entry that
/// is a tar. A hostile review sent a span in each, and each went out. The real tools (tar, ar, cpio,
/// dpkg-deb, xz, gzip) make the files and, unpacking them, are the oracle that the span is there.
@Suite("Members of tar, ar, cpio and .deb archives, and of unpacked streams, are read as the files they are")
struct ContainerMembersTests {
    /// Makes a file holding `text` (seeded) in `shape`; prints its bytes, and on stderr the shape and
    /// `yes` or `no`: whether the tools, unpacking it, show `text`.
    static let script = #"""
        import io, os, random, subprocess, sys, tarfile, tempfile, zipfile, zlib, gzip
        text, seed, shape = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        rng = random.Random(seed)
        words = lambda n: " ".join(rng.choice(["lorem", "ipsum", "dolor", "[1]", "sit", "amet"]) for _ in range(rng.randrange(0, n)))
        def tool(args, data=b"", cwd=None):
            return subprocess.run(args, input=data, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd).stdout
        content = (words(3000) + " " + text + " " + words(3000)).encode()
        def lzw(data):
            # compress(1): 9 to maxbits bits a code, block mode, a CLEAR now and then (the rest of its group of
            # eight codes is padding, as on a change of width), written as gzip's unlzw reads.
            maxbits = rng.randrange(9, 17)
            codes, table, free, word = [], None, 0, b""
            def reset():
                nonlocal table, free
                table, free = {bytes([i]): i for i in range(256)}, 257
            reset()
            for byte in data:
                longer = word + bytes([byte])
                if longer in table: word = longer; continue
                codes.append(table[word])
                if free < (1 << maxbits): table[longer] = free; free += 1
                word = bytes([byte])
                if rng.random() < 0.002: codes.append(256); reset()
            if word: codes.append(table[word])
            out, acc, count = bytearray(b"\x1f\x9d" + bytes([0x80 | maxbits])), 0, 0
            width, maxcode, dfree, group, first = 9, 511, 257, 0, True
            def put(code, bits):
                nonlocal acc, count
                acc |= code << count; count += bits
                while count >= 8: out.append(acc & 0xFF); acc >>= 8; count -= 8
            for code in codes:
                if dfree > maxcode and width < maxbits:
                    put(0, (8 - group % 8) % 8 * width); group = 0
                    width += 1; maxcode = (1 << maxbits) if width == maxbits else (1 << width) - 1
                put(code, width); group += 1
                if code == 256:
                    put(0, (8 - group % 8) % 8 * width); group = 0
                    width, maxcode, dfree = 9, 511, 256
                    continue
                if first: first = False
                elif dfree < (1 << maxbits): dfree += 1
            if count: out.append(acc & 0xFF)
            return bytes(out)
        unz = lambda data: tool(["gzip", "-dc"], data)
        def inner():
            # The file inside: a .lzma (any options xz takes for the old format), a zlib stream, or a .Z.
            kind = rng.choice(["lzma", "lzma", "zlib", "Z"])
            if kind == "lzma":
                lc = rng.randrange(0, 5); lp = rng.randrange(0, 5 - lc)
                options = "dict=%dKiB,lc=%d,lp=%d,pb=%d" % (rng.choice([4, 64, 1000, 8192]), lc, lp, rng.randrange(0, 5))
                return "notes.txt.lzma", tool(["xz", "-c", "--format=lzma", "--lzma1=" + options], content), lambda d: tool(["xz", "-dc", "--format=lzma"], d)
            if kind == "Z":
                return "notes.txt.Z", lzw(content), unz
            c = zlib.compressobj(rng.randrange(1, 10), zlib.DEFLATED, rng.randrange(9, 16))
            def unzlib(d):
                try: return zlib.decompressobj().decompress(d)
                except zlib.error: return b""
            return "notes.txt.zz", c.compress(content) + c.flush(), unzlib
        work = tempfile.mkdtemp()
        def files(name, body):
            # The member among others, in a random place.
            others = [("readme.txt", words(200).encode()), ("a/b.bin", bytes(rng.randrange(256) for _ in range(rng.randrange(0, 900))))]
            rng.shuffle(others)
            at = rng.randrange(0, len(others) + 1)
            return others[:at] + [(name, body)] + others[at:]
        def tar(members, fmt=None):
            d = tempfile.mkdtemp(dir=work)
            for name, body in members:
                os.makedirs(os.path.dirname(os.path.join(d, name)) or d, exist_ok=True)
                open(os.path.join(d, name), "wb").write(body)
            fmt = fmt or rng.choice(["v7", "ustar", "gnu", "pax", "oldgnu"])
            return tool(["tar", "-c", "--format=" + fmt, "-f", "-"] + [n for n, _ in members], cwd=d)
        def untar(data, name): return tool(["tar", "-xO", "-f", "-", name], data)
        name, body, unpack = inner()
        if shape == "tar":
            data = tar(files(name, body)); shown = unpack(untar(data, name))
        elif shape in ("tar.gz", "tar.xz"):
            data = tar(files(name, body))
            packed = gzip.compress(data) if shape == "tar.gz" else tool(["xz", "-c"], data)
            shown = unpack(untar(gzip.decompress(packed) if shape == "tar.gz" else tool(["xz", "-dc"], packed), name))
            data = packed
        elif shape == "ar":
            d = tempfile.mkdtemp(dir=work)
            members = files(name.replace("/", "_"), body)
            for n, b in members: open(os.path.join(d, n.replace("/", "_")), "wb").write(b)
            tool(["ar", "rc", "x.a"] + [n.replace("/", "_") for n, _ in members], cwd=d)
            data = open(os.path.join(d, "x.a"), "rb").read()
            shown = unpack(tool(["ar", "p", "x.a", name], cwd=d))
        elif shape.startswith("cpio"):
            d = tempfile.mkdtemp(dir=work)
            members = files(name, body)
            for n, b in members:
                os.makedirs(os.path.dirname(os.path.join(d, n)) or d, exist_ok=True)
                open(os.path.join(d, n), "wb").write(b)
            data = tool(["cpio", "-o", "--quiet", "-H", shape.split("-")[1]], "\n".join(n for n, _ in members).encode() + b"\n", cwd=d)
            shown = unpack(tool(["cpio", "-i", "--quiet", "--to-stdout", name], data))
            # A gzipped cpio (an initramfs is one): its members read as it is unpacked.
            if shape.endswith("-gz"): data = gzip.compress(data)
        elif shape == "deb-data-lzma":
            # A .deb written as dpkg-deb wrote them before it dropped lzma: its data member data.tar.lzma.
            d = tempfile.mkdtemp(dir=work)
            open(os.path.join(d, "debian-binary"), "wb").write(b"2.0\n")
            open(os.path.join(d, "control.tar.gz"), "wb").write(gzip.compress(tar([("./control", b"Package: x\nVersion: 1\n")], "gnu")))
            inner_tar = tar([("./usr/share/doc/x/notes.txt", content)], "gnu")
            open(os.path.join(d, "data.tar.lzma"), "wb").write(tool(["xz", "-c", "--format=lzma"], inner_tar))
            tool(["ar", "rc", "x.deb", "debian-binary", "control.tar.gz", "data.tar.lzma"], cwd=d)
            data = open(os.path.join(d, "x.deb"), "rb").read()
            shown = tool(["tar", "-xO", "-f", "-"], tool(["dpkg-deb", "--fsys-tarfile", "x.deb"], cwd=d))
        elif shape == "deb-gz":
            d = tempfile.mkdtemp(dir=work)
            os.makedirs(os.path.join(d, "p/DEBIAN")); os.makedirs(os.path.join(d, "p/usr/share/doc/x"))
            open(os.path.join(d, "p/DEBIAN/control"), "w").write("Package: x\nVersion: 1\nArchitecture: all\nMaintainer: a <a@example.org>\nDescription: x\n")
            open(os.path.join(d, "p/usr/share/doc/x/" + name), "wb").write(body)
            tool(["dpkg-deb", "--root-owner-group", "-Z" + rng.choice(["gzip", "xz", "none"]), "-b", "p", "x.deb"], cwd=d)
            data = open(os.path.join(d, "x.deb"), "rb").read()
            shown = unpack(tool(["tar", "-xO", "-f", "-", "./usr/share/doc/x/" + name], tool(["dpkg-deb", "--fsys-tarfile", "x.deb"], cwd=d)))
        elif shape == "zip-stored-tar":
            t = tar(files(name, body))
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as z:
                z.writestr("a.txt", words(100), compress_type=zipfile.ZIP_DEFLATED)
                z.writestr("bundle.tar", t, compress_type=zipfile.ZIP_STORED)
            data = out.getvalue()
            shown = unpack(untar(zipfile.ZipFile(io.BytesIO(data)).read("bundle.tar"), name))
        elif shape == "Z-last-in-tar.gz":
            name = "notes.txt.Z"
            # The .Z is the tar's last member: the tar's padding and end blocks follow it in the unpacked stream.
            z = lzw(content)
            assert unz(z) == content
            members = files("readme0.txt", words(50).encode()) + [("notes.txt.Z", z)]
            plain = tar(members)
            data = gzip.compress(plain)
            shown = unz(untar(plain, "notes.txt.Z"))
        elif shape == "Z-mid-stream":
            name = "notes.txt.Z"
            # A .Z after a script and before other bytes, inside a gzip file: what gzip -dc shows of the
            # bytes from the .Z on (it complains of the rest, after giving what it decoded).
            z = lzw(content)
            script = b"#!/bin/sh\ntail -c +%d \"$0\" | uncompress\nexit 0\n" % (rng.randrange(40, 90))
            after = rng.choice([bytes(rng.randrange(1, 2000)), words(300).encode(), bytes(rng.randrange(256) for _ in range(500))])
            data = gzip.compress(script + z + after)
            shown = unz(z + after)
        print(shape + " " + name, "yes" if text.encode() in shown else "no", file=sys.stderr)
        sys.stdout.buffer.write(data)
        """#

    /// A file of ``script``'s in `shape` holding `text`, its description, and whether the tools show `text` in it.
    static func file(_ text: String, seed: UInt64, shape: String) throws -> (bytes: [UInt8], what: String, shown: Bool) {
        let made = try run("python3", ["-c", script, text, String(seed), shape])
        try #require(made.status == 0, "python3: \(made.errors)")
        let line = made.errors.trimmingCharacters(in: .whitespacesAndNewlines)
        return (made.stdout, line, line.hasSuffix("yes"))
    }

    static let containerShapes = ["tar", "tar.gz", "tar.xz", "ar", "cpio-newc", "cpio-crc", "cpio-odc", "cpio-newc-gz", "cpio-odc-gz", "deb-data-lzma", "deb-gz", "zip-stored-tar"]

    /// Rounds of `shapes`: the first `marked` with a span (withheld, refused when passed), the rest
    /// without (sent as they came, the text read); the number of issues.
    static func rounds(_ shapes: [String], marked: Int, controls: Int, seed defaultSeed: UInt64) throws -> Int {
        let seed = UInt64(ProcessInfo.processInfo.environment["INFLATE_SEED"] ?? "") ?? defaultSeed
        var random = SeededRandom(seed: seed)
        var issues = 0
        for round in 0..<(marked + controls) {
            let shape = shapes[round % shapes.count]
            let secret = "zq" + String((0..<10).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement(using: &random)! })
            let isMarked = round < marked
            let text = isMarked ? "[[private]]\(secret)[[/private]]" : "see [1] and \(secret) here"
            let made = try file(text, seed: random.next(), shape: shape)
            try #require(made.shown, "seed \(seed) round \(round): \(made.what): the tools do not show the text")
            let name = ["notes.tar", "notes.deb", "notes.a", "notes.cpio", "notes.tar.gz", "data.bin", "notes.zip"].randomElement(using: &random)!
            let result = try InflatedShapesTests.postcard(of: made.bytes, name: name)
            if isMarked {
                if !(result.withheld && !result.unchanged) { issues += 1; Issue.record("seed \(seed) round \(round): \(made.what): not withheld") }
                if !result.refusedWhenPassed { issues += 1; Issue.record("seed \(seed) round \(round): \(made.what): passed") }
            } else {
                var fed: [UInt8] = []
                if Inflation.inflate(made.bytes, { fed += $0 }) != .read { issues += 1; Issue.record("seed \(seed) round \(round): \(made.what): not read") }
                if !String(decoding: fed, as: UTF8.self).contains(secret) { issues += 1; Issue.record("seed \(seed) round \(round): \(made.what): text not unpacked") }
                if !(!result.withheld && result.unchanged && !result.refusedWhenPassed) {
                    issues += 1
                    Issue.record("seed \(seed) round \(round): \(made.what): not sent as it came")
                }
            }
        }
        return issues
    }

    @Test("a .lzma, zlib or .Z file as a member of a tar (v7, ustar, GNU, pax) alone or in a tar.gz or tar.xz, an ar, a cpio (newc, crc, odc; gzipped too), a .deb (data.tar.lzma, or a .lzma in data.tar.gz), a zip's stored tar: withheld, refused when passed; without a span sent as it came and read")
    func membersOfContainers() throws {
        // 36 with a span (each shape three times), 12 without.
        #expect(try Self.rounds(Self.containerShapes, marked: 36, controls: 12, seed: 2026_11_27_21) == 0)
    }

    @Test("a .Z followed by other bytes in an unpacked stream (a tar.gz's last member, before the tar's padding; after a script, before other bytes): gzip -dc the oracle; withheld, refused when passed; without a span sent as it came and read")
    func compressFollowedByOtherBytes() throws {
        #expect(try Self.rounds(["Z-last-in-tar.gz", "Z-mid-stream"], marked: 10, controls: 4, seed: 2026_11_27_22) == 0)
    }
}
