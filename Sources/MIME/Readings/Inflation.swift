/// The compressed text inside files a reader unpacks when it opens them: the
/// entries of a zip archive (docx, xlsx, pptx, odt, epub are zip archives),
/// the members of a gzip file, the Flate streams of a PDF, and bzip2, xz, lzma,
/// zstd, lzip and zlib files (``CompressedFormat``; a red team sent a span in
/// each, which went out unread). A marker there is shown by the program that
/// opens the file, though no byte of the file holds it; so a search of such a
/// part reads it inflated too.
///
/// Debian's libraries do the unpacking (``Decompressor``); the containers around them are
/// walked here, by hand, because only the few fields that locate the
/// compressed streams are read: no archive is unpacked to files, no name is
/// used. A zip is read both ways a reader may read it: its local headers in
/// order, and the entries its central directory lists (which may point
/// anywhere, overlapping); an entry is inflated once.
///
/// Hostile input costs work linear in its size: the bytes inflated from and
/// the bytes inflated to, across every attempt, are each limited to a multiple
/// of the file's size (``budget(for:)``). A file that would take more is not
/// read to its end, and the search counts it as not readable (`.unreadable`),
/// so it cannot be shown clean.
package enum Inflation {
    /// What ``inflate(_:_:)`` made of a file.
    package enum Outcome: Equatable, Sendable {
        /// No zip, PDF or compressed file: nothing to inflate.
        case notCompressed
        /// Every stream found was inflated and fed.
        case read
        /// A stream could not be read to its end within the budget.
        case unreadable
    }

    /// How many of a file's first bytes ``mayHold(_:)`` looks at.
    package static let headSize = 1024

    /// True when a file starting with `head` is a zip archive, a compressed file
    /// (``CompressedFormat``), a tar, ar or cpio archive (its members may be: ``Container``) or a PDF
    /// (`%PDF-` within its first ``headSize`` bytes, where readers look for it).
    package static func mayHold(_ head: [UInt8]) -> Bool {
        head.withUnsafeBytes { opensAsArchive($0) || CompressedFormat.isTar($0) || Container.opens($0) }
            || head.withUnsafeBufferPointer { Walk.find(Array("%PDF-".utf8), in: $0, from: 0, below: $0.count) != nil }
    }

    /// True when `bytes` start as a zip archive or a compressed file: what a reader
    /// opens as one, at the start of a file or of an entry or member inside one.
    static func opensAsArchive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) || bytes.starts(with: [0x50, 0x4B, 0x05, 0x06]) || CompressedFormat.of(bytes) != nil
            || OtherArchive.opens(bytes)
    }

    /// True when `content` may hold compressed streams: ``mayHold(_:)`` of its head, or a zip's
    /// local header or end record anywhere (a zip with data before it: self-extracting, or
    /// appended to a PDF or an image, which zip readers open from its end).
    package static func mayHold(content: [UInt8]) -> Bool {
        var signs = Signs()
        content.withUnsafeBytes { signs.feed($0) }
        return signs.mayHold
    }

    /// What ``mayHold(content:)`` looks for, fed a file in pieces.
    package struct Signs: Sendable {
        /// The file's first ``Inflation/headSize`` bytes.
        package private(set) var head: [UInt8] = []
        private var found = false
        private var scan = SignatureScan()

        /// Signs of nothing yet.
        package init() {}

        /// Takes the next piece of the file.
        package mutating func feed(_ piece: UnsafeRawBufferPointer) {
            if head.count < Inflation.headSize { head += piece.prefix(Inflation.headSize - head.count) }
            guard !found else { return }
            for byte in piece {
                // A zip's end record (`PK\5\6`), or a signature ``SignatureScan`` finds anywhere.
                if scan.take(byte) != nil || scan.last4 == 0x504B_0506 { found = true; return }
            }
        }

        /// True when the pieces fed may hold compressed streams.
        package var mayHold: Bool { found || Inflation.mayHold(head) }
    }

    /// The signatures by which a compressed file or a zip is found anywhere in a file, not only
    /// at its start: a zip's local header (`PK\3\4`), gzip (`1F 8B 08` and flags with no reserved
    /// bit), bzip2 (`BZh1` to `BZh9` and its first block's `1AY&SY`), xz, 7z, RAR, zstd (a frame's magic
    /// number) and lzip (`LZIP`, version 1). A plain tar, a `.deb` (an ar archive), a shell
    /// script with an archive after it, a PDF's unfiltered stream or the unpacked content of
    /// members split anywhere hold such files whole, which their tools open (`tar -x` then
    /// `gunzip`, `dpkg-deb`, the script itself). Every signature is four bytes or more, so chance
    /// bytes make few; each place found is tried as that format, at a cost (``Inflation/attemptCost``).
    /// `.lzma` and zlib files have no signature that strong (their first bytes are a
    /// properties byte or two header bytes): found only at the start of a file, stream,
    /// stored entry or tar member. Followed byte by byte, across pieces.
    struct SignatureScan: Sendable {
        /// The last eight bytes taken, the latest lowest, and the two before them.
        private var recent: UInt64 = 0
        private var older: UInt16 = 0

        /// The last four bytes taken.
        var last4: UInt32 { UInt32(truncatingIfNeeded: recent) }

        /// A signature found: its bytes (the ones that ended at the byte just taken), and whether it is a zip's.
        struct Found {
            let bytes: [UInt8]
            let isZip: Bool
        }

        /// Takes the next byte; the signature that ends with it, if one does.
        mutating func take(_ byte: UInt8) -> Found? {
            older = older << 8 | UInt16(recent >> 56)
            recent = recent << 8 | UInt64(byte)
            let four = UInt32(truncatingIfNeeded: recent)
            if four == 0x504B_0304 { return Found(bytes: bytes(4), isZip: true) }
            if four & 0xFFFF_FF00 == 0x1F8B_0800 && byte & 0xE0 == 0 { return Found(bytes: bytes(4), isZip: false) }
            // `compress`: 1F 9D and a flags byte of 9 to 16 bits a code.
            if four & 0xFFFF00 == 0x1F9D00, byte & 0x60 == 0, (9...16).contains(byte & 0x1F) { return Found(bytes: bytes(3), isZip: false) }
            if four == 0x28B5_2FFD { return Found(bytes: bytes(4), isZip: false) }
            if recent & 0xFF_FFFF_FFFF == 0x4C_5A49_5001 { return Found(bytes: bytes(5), isZip: false) }
            let six = recent & 0xFFFF_FFFF_FFFF
            // xz; 7z and RAR (``OtherArchive``).
            if six == 0xFD37_7A58_5A00 || six == 0x377A_BCAF_271C || six == 0x5261_7221_1A07 { return Found(bytes: bytes(6), isZip: false) }
            if recent & 0xFF00_FFFF_FFFF_FFFF == 0x6800_3141_5926_5359, older == 0x425A, (0x31...0x39).contains(UInt8(truncatingIfNeeded: recent >> 48)) {
                return Found(bytes: [0x42, 0x5A] + bytes(8), isZip: false)
            }
            return nil
        }

        /// The last `count` bytes taken (at most eight), in order.
        private func bytes(_ count: Int) -> [UInt8] {
            (0..<count).map { UInt8(truncatingIfNeeded: recent >> (8 * UInt64(count - 1 - $0))) }
        }

        /// Where the first signature in `bytes` (from the start, nothing taken before) begins, and whether it is a zip's.
        static func first(in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> (at: Int, isZip: Bool)? {
            var scan = SignatureScan()
            var index = start
            while index < bytes.count {
                if let found = scan.take(bytes[index]) { return (index + 1 - found.bytes.count, found.isZip) }
                index += 1
            }
            return nil
        }
    }

    /// The most an archive inside a stream (kept whole to be walked after it) may hold: 64 MiB,
    /// the largest mail mailsec reads by default. A larger one is not read, so not clean.
    static let nestedLimit = 64 << 20

    /// What trying a place as a compressed file costs from the input budget, whatever it gives:
    /// chance signatures in hostile bytes (a file of nothing but gzip headers) cost work linear in
    /// the file's size, and a file that holds more than its budget allows is not read to its end.
    static let attemptCost = 4096

    /// What a mail's compressed files may cost together beyond 32 times their
    /// own sizes: 16 MiB, inflated to and (separately) inflated from. Ordinary
    /// office files expand 5 to 20 times; a compression bomb stops here, and
    /// many small ones share this one allowance, so a mail costs work linear in its size.
    package static let mailAllowance = 16 << 20

    /// How deep archives inside archives are read: a zip or gzip file inside an entry
    /// or member is inflated in turn, to this depth (the file itself is depth 1); one
    /// deeper cannot be shown clean, like a bomb.
    package static let maxDepth = 4

    /// Feeds `body` the inflated content of every compressed stream in `bytes`,
    /// in pieces (and of the archives inside, to ``maxDepth``; a zip entry that is
    /// XML or HTML is fed again without its markup, after its end: see ``Markup``); says whether `bytes` is such a file and was read whole within
    /// 32 times its size plus `allowance`, and takes from `allowance` what it used beyond that.
    /// `page`, when given, is handed the whole content of each zip entry a browser opens as a
    /// page (named `.html`, `.htm`, `.shtml`, `.xht`, `.xhtml` or `.svg`), at its end, so that it
    /// can be read as HTML is read (a parser's text, not the markup reading's: `<bdo dir=rtl>`,
    /// `<!-->`, raw text elements). It answers whether it wants more pages: once it says no, no
    /// page is kept or handed over again. A page entry is handed over early, as soon as it holds
    /// more than `pageLimit` bytes, and not kept on: a page beyond what the caller may read is
    /// not held whole (a zip of one 26 MB page held all of it before its size was looked at).
    ///
    /// With `membersArePages` (a file named `.svgz` or `.html.gz`), the members of a gzip file
    /// are one page, handed over at their end; so are those of a gzip file inside a zip entry
    /// named so, whatever `membersArePages` says.
    package static func inflate(_ bytes: [UInt8], allowance: inout Int, pageLimit: Int = .max, membersArePages: Bool = false,
                                page: (([UInt8]) -> Bool)? = nil, _ body: (UnsafeRawBufferPointer) -> Void) -> Outcome {
        let own = 32 * bytes.count
        let budget = own + max(0, allowance)
        let (outcome, output, input) = withoutActuallyEscaping(body) { body in
            bytes.withUnsafeBufferPointer { buffer in
                var walk = Walk(bytes: buffer, output: budget, input: budget, depth: 1, body: body, page: page, pageLimit: pageLimit)
                walk.membersArePages = membersArePages
                return (walk.run(), walk.output, walk.input)
            }
        }
        allowance -= max(0, max(budget - output, budget - input) - own)
        return outcome
    }

    /// ``inflate(_:allowance:_:)`` with a mail's whole allowance.
    package static func inflate(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) -> Void) -> Outcome {
        var allowance = mailAllowance
        return inflate(bytes, allowance: &allowance, body)
    }

    /// True for a file name a browser opens as a gzipped page: `.svgz`, or a page's name
    /// (`.html`, `.htm`, `.shtml`, `.xht`, `.xhtml`, `.svg`) and `.gz`.
    package static func isGzippedPageName(_ name: String) -> Bool {
        let lowered = savedName(name)
        return lowered.hasSuffix(".svgz")
            || [".html.gz", ".htm.gz", ".shtml.gz", ".xht.gz", ".xhtml.gz", ".svg.gz"].contains(where: lowered.hasSuffix)
    }

    /// `name` as a file system saves it, in lower case: trailing dots and blanks dropped, as
    /// Windows does (`page.html.` is saved, and opened, as `page.html`).
    package static func savedName(_ name: String) -> String {
        var lowered = name.lowercased()
        while let last = lowered.last, last == "." || last == " " { lowered.removeLast() }
        return lowered
    }

    /// True for a file name a mail program or browser opens as a message, decoding its parts:
    /// `.eml`, `.mht` or `.mhtml` (a saved web page).
    package static func isSavedMessageName(_ name: String) -> Bool {
        [".eml", ".mht", ".mhtml"].contains(where: savedName(name).hasSuffix)
    }

    /// True for a file name a browser opens as a page: `.html`, `.htm`, `.shtml`, `.xht`, `.xhtml` or `.svg`.
    static func isPageName(_ name: String) -> Bool {
        [".html", ".htm", ".shtml", ".xht", ".xhtml", ".svg"].contains(where: savedName(name).hasSuffix)
    }

    private struct Walk {
        let bytes: UnsafeBufferPointer<UInt8>
        /// What may still be inflated to, and inflated from.
        var output: Int
        var input: Int
        /// 1 for the file itself, 2 for an archive inside one of its entries or members, …
        let depth: Int
        let body: (UnsafeRawBufferPointer) -> Void
        /// Given each page entry's content whole (``Inflation/inflate(_:allowance:pageLimit:page:_:)``);
        /// nil once it wants no more.
        var page: (([UInt8]) -> Bool)? = nil
        /// How large a page entry is kept before it is handed over and let go.
        var pageLimit: Int = .max
        /// This walk's gzip members are one page (``Inflation/inflate(_:allowance:pageLimit:membersArePages:page:_:)``).
        var membersArePages = false
        /// The archive kept in ``nested`` came from a zip entry named as a gzipped page (`.svgz`, `.html.gz`).
        var nestedPages = false
        /// Inside ``members(_:)``'s members, whose page is handed over after the last of them.
        var inMembers = false
        /// The content of the page entry being inflated.
        var pageBytes: [UInt8]?
        var exhausted = false
        /// A zip entry compressed otherwise than deflate (bzip2, LZMA …), which readers open and this walk does not.
        var unknownMethod = false
        /// What the stream being inflated is fed to beside `body` (``stream(from:format:role:)``).
        var markup: Markup?
        var pdfStrings: PDFStrings?
        /// The first bytes of the stream being unpacked, while fewer than ``Container/headSize`` (``deliver(_:first:role:)``).
        var head: [UInt8]?
        /// The role of the stream ``head`` is of.
        var headRole = Role.member
        /// The tar, ar or cpio archive the stream being unpacked is, read as it comes.
        var unpacking: Container.Stream?
        var nested: [UInt8]?
        /// ``nested`` holds an archive found after other data in its stream (kept from its first
        /// signature): walked as a zip with data before it, so that chance bytes that look
        /// like a local header by an unknown method do not count as an entry.
        var nestedAfterData = false
        /// The stream's signatures so far, to find an archive after other data in it.
        var scan = SignatureScan()
        /// The lzip headers of ``bytes`` were looked at before this walk (``carve(from:)``).
        var lzipLimitChecked = false
        /// ``carve(from:)``'s one look at the lzip headers: where the last that asks for more memory than the limit is.
        var lzipBeyondLimit: Int??

        /// What an inflated stream is: a zip entry (and its name), a gzip member or a PDF stream.
        enum Role {
            case entry(name: Range<Int>?)
            case member
            case pdfStream
        }

        mutating func run(afterData: Bool = false) -> Outcome {
            var kind = Outcome.notCompressed
            // A zip by its first bytes, or with data before it: its end record in the last 65,557
            // bytes (what zip readers open from), or a local header anywhere (what a streaming reader finds).
            let zipAtStart = !afterData && (starts(with: [0x50, 0x4B, 0x03, 0x04], at: 0) || starts(with: [0x50, 0x4B, 0x05, 0x06], at: 0))
            if zipAtStart || centralDirectoryEnd() != nil || find([0x50, 0x4B, 0x03, 0x04], from: 0) != nil {
                kind = zip(strict: zipAtStart)
            }
            var carveFrom = 0
            if !exhausted, let format = CompressedFormat.of(UnsafeRawBufferPointer(bytes)) {
                kind = .read
                carveFrom = members(format)
            }
            // A file may be both (`%PDF-` within the first KiB of a compressed file): each reader opens its own.
            if !exhausted, pdfStart() {
                kind = pdf()
            }
            // 7z and RAR, read by libarchive.
            if !exhausted, OtherArchive.opens(UnsafeRawBufferPointer(bytes)) { kind = otherArchive() }
            // Compressed files inside other data: a tar's, ar's (a `.deb`) or cpio's members, after a script.
            if !exhausted, containerMembers() { kind = .read }
            if !exhausted, !zipAtStart, carve(from: carveFrom) { kind = .read }
            return exhausted || unknownMethod ? .unreadable : kind
        }

        func starts(with prefix: [UInt8], at offset: Int) -> Bool {
            guard offset >= 0, offset + prefix.count <= bytes.count else { return false }
            for index in prefix.indices where bytes[offset + index] != prefix[index] { return false }
            return true
        }

        func le16(_ offset: Int) -> Int? {
            guard offset >= 0, offset + 2 <= bytes.count else { return nil }
            return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        }

        func le32(_ offset: Int) -> Int? {
            guard let low = le16(offset), let high = le16(offset + 2) else { return nil }
            return low | high << 16
        }

        // MARK: zip

        /// `strict`: the file starts as a zip, so every local header counts; else (data before
        /// the archive) a local header found in the data that is not deflate is taken for chance
        /// bytes, not for an entry by a method not read here.
        mutating func zip(strict: Bool) -> Outcome {
            // Each entry read once per way it is described (its place, method and encryption flag).
            var read: Set<[Int]> = []
            // The local headers in order, as a reader that streams the archive finds them.
            var offset = 0
            while !exhausted, let at = find([0x50, 0x4B, 0x03, 0x04], from: offset) {
                if let flags = le16(at + 6), let method = le16(at + 8) { read.insert([at, method, flags & 1]) }
                offset = max(at + 4, entry(at: at, strict: strict) ?? 0)
            }
            // The central directory's entries, as a reader that opens the archive finds them: with the
            // directory's method and flags, which such a reader takes over the local header's. Data
            // before the archive shifts every offset by its length: the end record's place less the
            // directory's size and offset (as Python's zipfile and unzip take it).
            if let end = centralDirectoryEnd(), let count = le16(end + 10), let size = le32(end + 12), let start = le32(end + 16) {
                let prefix = max(0, end - size - start)
                var record = start + prefix
                for _ in 0..<count where !exhausted {
                    guard starts(with: [0x50, 0x4B, 0x01, 0x02], at: record), let flags = le16(record + 8), let method = le16(record + 10),
                          let local = le32(record + 42), let name = le16(record + 28), let extra = le16(record + 30),
                          let comment = le16(record + 32), let compressed = le32(record + 20) else { break }
                    // The directory is no chance bytes: an entry it lists by a method not read here (LZMA,
                    // bzip2 …) is not read, though a local header pass after data took it for chance.
                    if method != 0 && method != 8 && flags & 1 == 0 { unknownMethod = true }
                    if read.insert([local + prefix, method, flags & 1]).inserted {
                        _ = entry(at: local + prefix, method: method, flags: flags, storedSize: compressed, strict: true)
                    }
                    record += 46 + name + extra + comment
                }
            }
            return .read
        }

        /// Inflates the entry whose local header is at `at` when it is deflated and
        /// not encrypted (an encrypted entry is read by no one without its password);
        /// returns where its compressed data ended, when it was inflated.
        /// `method` and `flags` as the central directory gives them, else the local header's.
        /// An entry compressed by another method than deflate cannot be read here (``unknownMethod``).
        mutating func entry(at: Int, method given: Int? = nil, flags givenFlags: Int? = nil, storedSize: Int? = nil, strict: Bool) -> Int? {
            guard starts(with: [0x50, 0x4B, 0x03, 0x04], at: at), let localFlags = le16(at + 6), let localMethod = le16(at + 8),
                  let name = le16(at + 26), let extra = le16(at + 28) else { return nil }
            let method = given ?? localMethod, flags = givenFlags ?? localFlags
            let data = at + 30 + name + extra
            guard flags & 1 == 0, data <= bytes.count else { return nil }
            if method != 0 && method != 8 && strict { unknownMethod = true }
            let nameRange = (at + 30)..<min(at + 30 + name, bytes.count)
            let role = Role.entry(name: nameRange)
            // A saved message or web page (`.eml`, `.mht`, `.mhtml`): its reader decodes the base64
            // and quoted-printable inside, which the walk does not; not read here (withheld, or refused).
            if Inflation.isSavedMessageName(String(decoding: bytes[nameRange], as: UTF8.self)) { unknownMethod = true }
            if method == 0 {
                // Stored: its size as the directory gives it, else the local header's (unknown with a data descriptor).
                if let count = storedSize ?? (localFlags & 8 == 0 ? le32(at + 18) : nil) { stored(from: data, count: count, role: role) }
                return nil
            }
            guard method == 8 else { return nil }
            let (used, ended) = stream(from: data, format: .deflate, role: role)
            return ended ? data + used : nil
        }

        /// The end of central directory record, searched back from the end (its comment is at most 65,535 bytes).
        func centralDirectoryEnd() -> Int? {
            var at = bytes.count - 22
            let lowest = max(0, bytes.count - 22 - 65_535)
            while at >= lowest {
                if starts(with: [0x50, 0x4B, 0x05, 0x06], at: at) { return at }
                at -= 1
            }
            return nil
        }

        // MARK: compressed files and PDF

        /// Each member (or stream) of a compressed file, one after the other, as its tool
        /// unpacks them (`gunzip`, `bunzip2`; the xz, zstd and lzip decoders go on to the
        /// next themselves).
        /// Their content is one stream, as the tool writes it out: an archive inside may begin in
        /// one member and end in the next (a zip or a `.gz` split across gzip members is what
        /// `gunzip` writes whole). Returns where the last member read ended (past the signature of
        /// one not read to its end).
        mutating func members(_ format: CompressedFormat) -> Int {
            var offset = 0
            var first = true
            inMembers = true
            while !exhausted, offset < bytes.count,
                  CompressedFormat.of(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[offset...])) == format {
                // A gzip member whose header names a page (FNAME `index.html`, what `gunzip -N` and
                // archive tools save it as) is a page whatever the file is called.
                if format == .gzip, let name = memberName(at: offset), Inflation.isPageName(name) || Inflation.isGzippedPageName(name) {
                    membersArePages = true
                }
                let (used, ended) = inflated(from: offset, format: format, role: .member, first: &first)
                // A member not read to its end: what is after its signature may be searched on.
                guard ended, used > 0 else { offset += 1; break }
                offset += used
            }
            inMembers = false
            // The members, one after the other, are the page a browser shows, and the stream an archive inside is kept from.
            finish()
            return offset
        }

        /// Each entry of a 7z or RAR archive (``OtherArchive``), fed as a zip entry is (its markup
        /// read, an archive inside walked), its output from the budget. An entry whose data is
        /// encrypted is passed over, as a zip's is; an archive libarchive cannot read to its end
        /// (damaged, an unknown method, encrypted headers) is not clean.
        mutating func otherArchive() -> Outcome {
            input -= bytes.count
            guard let reader = OtherArchive(UnsafeRawBufferPointer(bytes)) else { unknownMethod = true; return .read }
            let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 1)
            defer { out.deallocate() }
            while !exhausted {
                switch reader.next() {
                case .end: return .read
                case .failed: unknownMethod = true; return .read
                case .entry(let encrypted):
                    if encrypted { continue }
                    var first = true
                    while !exhausted {
                        guard let count = reader.read(into: out) else { unknownMethod = true; break }
                        if count == 0 { break }
                        output -= count
                        if output < 0 { exhausted = true; break }
                        guard deliver(UnsafeRawBufferPointer(rebasing: out[..<count]), first: &first, role: .entry(name: nil)) else { break }
                    }
                    finish()
                    if unknownMethod { return .read }
                }
            }
            return .read
        }

        /// Each member of a tar, ar or cpio archive (``Container``) read as the file it is, as their tools
        /// write it out: one that starts as a `.lzma`, zlib or `.Z` file walked as one (the first two have
        /// no signature ``carve(from:)`` finds; LZW has no end of its own, so it is read to the member's
        /// end, not into the next), a zip as a zip, an archive of these kinds in turn; the others
        /// ``carve(from:)`` finds by their signatures. True when the file is such an archive.
        mutating func containerMembers() -> Bool {
            let all = UnsafeRawBufferPointer(bytes)
            guard Container.opens(all) else { return false }
            Container.forEachMember(all) { data, count in
                guard !exhausted, count > 0 else { return !exhausted }
                // A zip member is read as the file it is (its directory at its own end, its methods strict), not
                // only as a zip after other data in the archive; a tar in an ar (a `.deb`'s `data.tar`) in turn.
                if let reading = Container.reading(of: UnsafeRawBufferPointer(rebasing: all[data..<(data + count)])) {
                    walkInside(from: data, count: count, Inside(reading))
                }
                return !exhausted
            }
            return true
        }

        /// A member of an archive being unpacked (``Container/Stream``), held whole, read as the file it is,
        /// as ``containerMembers()`` reads one; false once the walk is exhausted.
        mutating func walkMember(_ member: [UInt8], _ reading: Container.Reading) -> Bool {
            member.withUnsafeBufferPointer { buffer in
                var walk = Walk(bytes: buffer, output: output, input: input, depth: depth + 1, body: body, page: page, pageLimit: pageLimit)
                walk.walkInside(from: 0, count: buffer.count, Inside(reading))
                output = walk.output
                input = walk.input
                if walk.exhausted { exhausted = true }
                if walk.unknownMethod { unknownMethod = true }
            }
            return !exhausted
        }

        /// Feeds the archive being unpacked, if any, a piece of its stream (nil: the stream's end).
        mutating func feedUnpacking(_ piece: UnsafeRawBufferPointer?) {
            guard var stream = unpacking else { return }
            unpacking = nil
            if let piece {
                if !stream.feed(piece, limit: Inflation.nestedLimit, { walkMember($0, $1) }) { exhausted = true }
                unpacking = stream
            } else {
                stream.finish { walkMember($0, $1) }
            }
        }

        /// Every strong signature (``SignatureScan``, but a zip's, which ``zip(strict:)`` reads)
        /// from `start` on, each tried as its format: its members read as a file of their own,
        /// one level deeper, and the search goes on after them. True when one was read.
        mutating func carve(from start: Int) -> Bool {
            var scan = SignatureScan()
            var at = start
            var found = false
            while at < bytes.count, !exhausted {
                guard let signature = scan.take(bytes[at]), !signature.isZip else {
                    at += 1
                    continue
                }
                let begin = at + 1 - signature.bytes.count
                let rest = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[begin...])
                let format = CompressedFormat.of(rest)
                guard format != nil || OtherArchive.opens(rest) else {
                    at += 1
                    continue
                }
                found = true
                let used = walkInside(from: begin, count: bytes.count - begin, format.map { .members($0) } ?? .otherArchive)
                at = max(at + 1, begin + used)
                scan = SignatureScan()
            }
            return found
        }

        /// What ``walkInside(from:count:_:)`` reads at a place.
        enum Inside {
            /// A compressed file's members (``members(_:)``).
            case members(CompressedFormat)
            /// A zip, strictly (a tar's member: its directory at its own end).
            case zip
            /// A 7z or RAR archive (``otherArchive()``).
            case otherArchive
            /// A tar, ar or cpio archive's members (``containerMembers()``).
            case container

            init(_ reading: Container.Reading) {
                switch reading {
                case .members(let format): self = .members(format)
                case .zip: self = .zip
                case .container: self = .container
                }
            }
        }

        /// What is at `from` (`count` bytes at most) read as a file of its own, one level deeper,
        /// from this walk's budget less ``Inflation/attemptCost``; returns the bytes a compressed
        /// file's members took (a zip or other archive: all `count`).
        @discardableResult
        mutating func walkInside(from: Int, count: Int, _ inside: Inside) -> Int {
            input -= Inflation.attemptCost
            if input <= 0 || depth >= Inflation.maxDepth { exhausted = true; return 0 }
            guard let base = bytes.baseAddress else { return 0 }
            let lzip = if case .members(.lzip) = inside { true } else { false }
            if lzip {
                // Every header from here on is read by lzlib: looked at once for the whole file, not at each try.
                if lzipBeyondLimit == nil { lzipBeyondLimit = .some(Self.lastHeaderBeyondLimit(in: UnsafeRawBufferPointer(bytes))) }
                if let beyond = lzipBeyondLimit!, beyond >= from { exhausted = true; return 0 }
            }
            var walk = Walk(bytes: UnsafeBufferPointer(start: base + from, count: count), output: output, input: input, depth: depth + 1,
                            body: body, page: page, pageLimit: pageLimit)
            walk.lzipLimitChecked = lzip
            let used: Int
            switch inside {
            case .members(let format): used = walk.members(format)
            case .zip: _ = walk.zip(strict: true); used = count
            case .otherArchive: _ = walk.otherArchive(); used = count
            case .container: _ = walk.containerMembers(); used = count
            }
            output = walk.output
            input = walk.input
            if walk.exhausted { exhausted = true }
            if walk.unknownMethod { unknownMethod = true }
            return used
        }

        /// `%PDF-` within the first ``headSize`` bytes.
        func pdfStart() -> Bool {
            find(Array("%PDF-".utf8), from: 0, below: min(bytes.count, headSize)) != nil
        }

        /// Every `stream` keyword and its line end: the stream decoded as its `/Filter` says
        /// (`/ASCIIHexDecode` or `/ASCII85Decode`, alone or before `/FlateDecode`; no filter:
        /// as it is), else inflated as zlib data (FlateDecode) where it is; the strings of
        /// each stream's content fed again after it, joined (``PDFStrings``).
        mutating func pdf() -> Outcome {
            var offset = 0
            // The next `endstream` at or after a place, found once for every place after it (linear
            // however many `stream` keywords lack one).
            // (The places asked for only grow.)
            var searched = false
            var nextEnd: Int?
            func end(from data: Int) -> Int {
                if !searched || (nextEnd.map { $0 < data } ?? false) {
                    searched = true
                    nextEnd = find(Array("endstream".utf8), from: data)
                }
                return nextEnd ?? bytes.count
            }
            while !exhausted, let at = find(Array("stream".utf8), from: offset) {
                var data = at + 6
                if starts(with: [0x0D, 0x0A], at: data) { data += 2 } else if starts(with: [0x0A], at: data) || starts(with: [0x0D], at: data) { data += 1 } else {
                    offset = data
                    continue
                }
                if starts(with: Array("end".utf8), at: at - 3) {
                    offset = data
                    continue
                }
                let end = end(from: data)
                let filters = filterNames(after: offset, before: at)
                guard let first = filters.first, first != "FlateDecode" && first != "Fl" else {
                    if filters.isEmpty, let base = bytes.baseAddress {
                        // Unfiltered content: its strings, escapes decoded.
                        output -= end - data
                        if output < 0 { exhausted = true; break }
                        var strings = PDFStrings()
                        strings.feed(UnsafeRawBufferPointer(start: base + data, count: end - data))
                        pdfStrings = strings
                        finish()
                    }
                    let (used, ended) = stream(from: data, format: .zlib, role: .pdfStream)
                    offset = ended ? data + used : data
                    continue
                }
                let hex = first == "ASCIIHexDecode" || first == "AHx"
                guard hex || first == "ASCII85Decode" || first == "A85", let base = bytes.baseAddress else {
                    // Another filter: inflated where it is, as before (a reader may take it for Flate data).
                    let (used, ended) = stream(from: data, format: .zlib, role: .pdfStream)
                    offset = ended ? data + used : data
                    continue
                }
                offset = end
                let encoded = UnsafeRawBufferPointer(start: base + data, count: end - data)
                let decoded = hex ? PDFStrings.hexDecoded(encoded) : PDFStrings.ascii85Decoded(encoded)
                output -= decoded.count
                if output < 0 { exhausted = true; break }
                if filters.count > 1 && (filters[1] == "FlateDecode" || filters[1] == "Fl") {
                    decoded.withUnsafeBufferPointer { buffer in
                        var walk = Walk(bytes: buffer, output: output, input: input, depth: depth, body: body, page: page, pageLimit: pageLimit)
                        _ = walk.stream(from: 0, format: .zlib, role: .pdfStream)
                        output = walk.output
                        input = walk.input
                        if walk.exhausted { exhausted = true }
                    }
                } else {
                    var started = true
                    _ = decoded.withUnsafeBytes { deliver($0, first: &started, role: .pdfStream) }
                    finish()
                }
            }
            return .read
        }

        /// The names of the `/Filter` entry of the stream dictionary before `at` (within its
        /// object, 4 KiB and after `low`, the stream before): `/FlateDecode` or
        /// `[/ASCII85Decode /FlateDecode]`, without slashes.
        func filterNames(after low: Int, before at: Int) -> [String] {
            let low = max(low, at - 4096)
            var start = low
            while let found = find(Array("obj".utf8), from: start, below: at) { start = found + 3 }
            var filter: Int?
            var from = start
            while let found = find(Array("/Filter".utf8), from: from, below: at) { filter = found + 7; from = found + 7 }
            guard var index = filter else { return [] }
            func isDelimiter(_ byte: UInt8) -> Bool { " \t\r\n\u{0C}/[]<>()%".utf8.contains(byte) || byte == 0 }
            while index < at, " \t\r\n\u{0C}".utf8.contains(bytes[index]) { index += 1 }
            let array = index < at && bytes[index] == UInt8(ascii: "[")
            var names: [String] = []
            while index < at {
                let byte = bytes[index]
                if byte == UInt8(ascii: "/") {
                    var stop = index + 1
                    while stop < at, !isDelimiter(bytes[stop]) { stop += 1 }
                    names.append(String(decoding: bytes[(index + 1)..<stop], as: UTF8.self))
                    index = stop
                    if !array { break }
                } else if byte == UInt8(ascii: "]") || (!array && !" \t\r\n\u{0C}".utf8.contains(byte)) {
                    break
                } else {
                    index += 1
                }
            }
            return names
        }

        /// The first place of `needle` at or after `from` (and below `below`).
        func find(_ needle: [UInt8], from: Int, below: Int? = nil) -> Int? {
            Self.find(needle, in: bytes, from: from, below: below ?? bytes.count)
        }

        /// The first place of `needle` in `bytes[from..<below]`.
        static func find(_ needle: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, from: Int, below: Int) -> Int? {
            let end = below - needle.count
            guard from <= end, let first = needle.first else { return nil }
            var at = from
            while at <= end {
                if bytes[at] == first {
                    var index = 1
                    while index < needle.count && bytes[at + index] == needle[index] { index += 1 }
                    if index == needle.count { return at }
                }
                at += 1
            }
            return nil
        }

        // MARK: zlib

        /// Unpacks one stream of `format` starting at `from` (a zip entry's raw deflate, a
        /// PDF's zlib, a member of a compressed file) and feeds what it gives; returns the bytes it used and
        /// whether the stream ended. A stream that stops early (damaged, cut off) feeds
        /// what it gave, as a reader shows it. Exhausts the walk past the budget.
        ///
        /// A zip entry that is markup (``isMarkup(name:first:)``) is fed again after its end, its
        /// markup taken out (``Markup``). A zip entry or gzip member that is itself a zip or gzip
        /// file is kept and walked in turn, one level deeper, from the same budget; past ``Inflation/maxDepth``
        /// it exhausts the walk.
        mutating func stream(from: Int, format: CompressedFormat, role: Role) -> (used: Int, ended: Bool) {
            var first = true
            let result = inflated(from: from, format: format, role: role, first: &first)
            finish()
            return result
        }

        /// After a stream: its text without markup fed, the archive inside walked.
        mutating func finish() {
            // A stream shorter than a tar's header: its head is all of it.
            if let short = head {
                head = nil
                _ = short.withUnsafeBytes { keep($0, opening: true) }
            }
            feedUnpacking(nil)
            // An entity the document declares itself (`<!ENTITY a "[[pri">`) is expanded by its
            // reader wherever `&a;` stands: not read here, so the file cannot be shown clean.
            if markup?.declaresEntities == true { unknownMethod = true }
            if let stripped = markup?.text, !stripped.isEmpty, !exhausted {
                [UInt8(ascii: "\n")].withUnsafeBytes(body)
                stripped.withUnsafeBytes(body)
            }
            markup = nil
            if !(membersArePages && inMembers) {
                if let content = pageBytes, !exhausted { handOver(content) }
                pageBytes = nil
            }
            if let strings = pdfStrings?.text, !strings.isEmpty, !exhausted {
                [UInt8(ascii: "\n")].withUnsafeBytes(body)
                strings.withUnsafeBytes(body)
            }
            pdfStrings = nil
            if let inner = nested {
                nested = nil
                let afterData = nestedAfterData
                nestedAfterData = false
                let pages = nestedPages
                nestedPages = false
                inner.withUnsafeBufferPointer { buffer in
                    var walk = Walk(bytes: buffer, output: output, input: input, depth: depth + 1, body: body, page: page, pageLimit: pageLimit)
                    walk.membersArePages = pages
                    _ = walk.run(afterData: afterData)
                    output = walk.output
                    input = walk.input
                    if walk.exhausted { exhausted = true }
                    if walk.unknownMethod { unknownMethod = true }
                }
            }
        }

        /// A page handed to ``page``, which is let go when it wants no more.
        mutating func handOver(_ content: [UInt8]) {
            if page?(content) == false { page = nil }
        }

        /// The file name a gzip member's header gives (FNAME, RFC 1952), if any.
        func memberName(at offset: Int) -> String? {
            guard offset + 10 <= bytes.count, bytes[offset + 3] & 0x08 != 0 else { return nil }
            var at = offset + 10
            if bytes[offset + 3] & 0x04 != 0 {
                guard at + 2 <= bytes.count else { return nil }
                at += 2 + Int(bytes[at]) + Int(bytes[at + 1]) << 8
            }
            guard at < bytes.count, let end = bytes[at...].firstIndex(of: 0) else { return nil }
            return String(decoding: bytes[at..<end], as: UTF8.self)
        }

        /// True for a zip entry a browser opens as a page: named `.html`, `.htm`, `.shtml`, `.xht`, `.xhtml` or `.svg`.
        func isPage(name: Range<Int>?) -> Bool {
            guard let name, !name.isEmpty else { return false }
            return Inflation.isPageName(String(decoding: bytes[name], as: UTF8.self))
        }

        /// True for a zip entry a browser opens as a gzipped page: named `.svgz`, or a page's name and `.gz`.
        func isGzippedPage(name: Range<Int>?) -> Bool {
            guard let name, !name.isEmpty else { return false }
            return Inflation.isGzippedPageName(String(decoding: bytes[name], as: UTF8.self))
        }

        /// True for a zip entry a reader parses as markup: named `.xml`, `.rels`, `.opf`, `.xhtml`,
        /// `.html`, `.htm` or `.svg`, or starting (blanks and a byte order mark aside) with `<`.
        func isMarkup(name: Range<Int>?, first: UnsafeRawBufferPointer) -> Bool {
            if let name, !name.isEmpty {
                let lowered = String(decoding: bytes[name], as: UTF8.self).lowercased()
                if [".xml", ".rels", ".opf", ".xhtml", ".html", ".htm", ".svg"].contains(where: lowered.hasSuffix) { return true }
            }
            var index = first.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            while index < first.count, [0x20, 0x09, 0x0A, 0x0D].contains(first[index]) { index += 1 }
            return index < first.count && first[index] == UInt8(ascii: "<")
        }

        /// Feeds `body` a piece of a stream's content, and the markup reader and the archive kept
        /// when the stream is such (decided at its `first` piece); false when the walk is exhausted
        /// (an archive past ``Inflation/maxDepth``).
        mutating func deliver(_ piece: UnsafeRawBufferPointer, first: inout Bool, role: Role) -> Bool {
            if first {
                first = false
                scan = SignatureScan()
                // What the stream is, archive or not, is told by its first ``Container/headSize`` bytes.
                head = []
                headRole = role
                if case .entry(let name) = role, isMarkup(name: name, first: piece) { markup = Markup() }
                if page != nil, case .entry(let name) = role, isPage(name: name) { pageBytes = [] }
                if page != nil, case .member = role, membersArePages, pageBytes == nil { pageBytes = [] }
                if case .pdfStream = role { pdfStrings = PDFStrings() }
            }
            body(piece)
            markup?.feed(piece)
            pdfStrings?.feed(piece)
            pageBytes?.append(contentsOf: piece)
            if let held = pageBytes, held.count > pageLimit {
                // Beyond what the caller may read: handed over now (it counts it and says no), not held on.
                handOver(held)
                pageBytes = nil
            }
            if let begun = head {
                // A decoder may give a few bytes at a time (a zstd frame of one-byte blocks): the stream's
                // head is gathered before it is looked at, its bytes then kept as one piece.
                let gathered = begun + piece
                guard gathered.count >= Container.headSize else { head = gathered; return true }
                head = nil
                return gathered.withUnsafeBytes { keep($0, opening: true) }
            }
            return keep(piece, opening: false)
        }

        /// Keeps a piece of the stream for the archive inside, when there is one: from its start when
        /// the stream `opening` with this piece opens as one, else from a signature found after other data.
        mutating func keep(_ piece: UnsafeRawBufferPointer, opening: Bool) -> Bool {
            if opening, Inflation.opensAsArchive(piece) {
                // An archive inside: kept to be walked after this stream, or past the depth, not read.
                // A PDF's stream too: an embedded file (`/EmbeddedFile`) that is a zip, which its reader opens.
                if depth >= Inflation.maxDepth { exhausted = true; return false }
                nested = []
                if case .entry(let name) = headRole { nestedPages = isGzippedPage(name: name) }
            } else if opening {
                // A tar, ar or cpio archive: its members read as it is unpacked, not held whole.
                unpacking = Container.Stream(head: piece)
            }
            feedUnpacking(piece)
            if exhausted { return false }
            if nested != nil {
                // Held whole to be walked after the stream (a zip's directory is at its end): at most
                // ``Inflation/nestedLimit``; one larger is not read (a 34 MB attachment held 664 MB).
                guard nested!.count + piece.count <= Inflation.nestedLimit else { exhausted = true; nested = nil; return false }
                nested!.append(contentsOf: piece)
            } else if let (at, signature) = signatureEnd(in: piece) {
                // An archive after other data in the stream (a self-extracting program in an entry, an
                // archive appended to a file, a tar's member), which its reader opens: kept from its signature.
                if depth >= Inflation.maxDepth { exhausted = true; return false }
                nested = signature + piece[(at + 1)...]
                nestedAfterData = true
            }
            return true
        }

        /// Where the first signature (``SignatureScan``) in the stream so far ends in `piece` (its
        /// last byte's index), and its bytes, perhaps begun in the piece before; nil when none does.
        mutating func signatureEnd(in piece: UnsafeRawBufferPointer) -> (Int, [UInt8])? {
            var index = 0
            while index < piece.count {
                if let found = scan.take(piece[index]) { return (index, found.bytes) }
                index += 1
            }
            return nil
        }

        /// A zip entry stored (not compressed) at `from`, `count` bytes: fed as an inflated one is
        /// after its markup or the archive inside, as the stored bytes were searched already; it
        /// costs its size from the output budget.
        mutating func stored(from: Int, count: Int, role: Role) {
            guard count > 0, from + count <= bytes.count, !exhausted, let base = bytes.baseAddress else { return }
            output -= count
            if output < 0 { exhausted = true; return }
            let piece = UnsafeRawBufferPointer(start: base + from, count: count)
            if Inflation.opensAsArchive(piece) || Container.opens(piece) {
                if depth >= Inflation.maxDepth { exhausted = true; return }
                nested = Array(piece)
                if case .entry(let name) = role { nestedPages = isGzippedPage(name: name) }
            } else if let (at, _) = SignatureScan.first(in: piece) {
                // An archive after other data in the entry (a tar stored in the zip holding a `.gz`).
                if depth >= Inflation.maxDepth { exhausted = true; return }
                nested = Array(piece[at...])
                nestedAfterData = true
            }
            if case .entry(let name) = role, isMarkup(name: name, first: piece) {
                markup = Markup()
                markup?.feed(piece)
            }
            if page != nil, case .entry(let name) = role, isPage(name: name) { pageBytes = Array(piece) }
            finish()
        }

        /// Where the last lzip header in `bytes` that asks for more memory than the limit is (``LzipDecompressor/withinLimit(_:)``).
        static func lastHeaderBeyondLimit(in bytes: UnsafeRawBufferPointer) -> Int? {
            var at = bytes.count - 6
            while at >= 0 {
                if bytes[at] == 0x4C, !LzipDecompressor.withinLimit(UnsafeRawBufferPointer(rebasing: bytes[at..<(at + 6)])) { return at }
                at -= 1
            }
            return nil
        }

        /// ``stream(from:format:role:)`` but for what it does after the stream; `first` is true
        /// before the stream's first piece (members go on one stream: it stays false after the first).
        mutating func inflated(from: Int, format: CompressedFormat, role: Role, first: inout Bool) -> (used: Int, ended: Bool) {
            guard from < bytes.count, !exhausted, let base = bytes.baseAddress else { return (0, false) }
            let decoder = format.decoder(limitChecked: lzipLimitChecked)
            let available = min(bytes.count - from, input)
            let chunk = 64 << 10
            let out = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 1)
            defer { out.deallocate() }
            var used = 0
            var state = DecodeStep.State.going
            while state == .going {
                let step = decoder.step(UnsafeRawBufferPointer(start: base + from + used, count: available - used), out)
                used += step.taken
                state = step.state
                output -= step.given
                if output < 0 { exhausted = true; break }
                // Asked for more memory than a reader of mail should give it, or damaged where a
                // recovery tool reads on: not read, so not clean.
                if state == .unreadable { exhausted = true; break }
                // No progress: it wants input that is not there.
                if step.taken == 0 && step.given == 0 && state == .going { break }
                guard step.given > 0 else { continue }
                guard deliver(UnsafeRawBufferPointer(rebasing: out[..<step.given]), first: &first, role: role) else { break }
            }
            input -= used
            // Stopped for want of input the budget held back: the rest is not read.
            if state != .ended && used == available && available < bytes.count - from { exhausted = true }
            if input <= 0 { exhausted = true }
            return (used, state == .ended)
        }
    }

    /// The text of XML or HTML as a reader shows it, for the search: tags taken out (a `>`
    /// inside a quoted attribute value does not end one; a quote counts only after `=`),
    /// comments taken out, CDATA sections' text kept, the five XML entities and numeric
    /// character references decoded (`&#91;` is `[`). A word processor splits a paragraph's
    /// text into runs (`<w:t>[[pri</w:t></w:r><w:r><w:t>vate]]</w:t>`) that its reader joins.
    /// Fed in pieces; time linear in the bytes fed.
    package struct Markup: Sendable {
        /// The text so far, UTF-8.
        package private(set) var text: [UInt8] = []
        private enum State: Sendable { case text, tag, quoted, comment, cdata, instruction }
        /// True once the document declares an entity (`<!ENTITY`): its reader expands it
        /// where it is referred to, with text this reading does not know.
        package private(set) var declaresEntities = false
        private var state = State.text
        private var quote: UInt8 = 0
        private var afterEquals = false
        /// A tag's first bytes, to tell `<!--` and `<![CDATA[` (at most 8).
        private var opening: [UInt8] = []
        /// The last two bytes of a comment or CDATA section, to find its end.
        private var recent: UInt16 = 0
        /// `]` held back in a CDATA section: they may be its end's.
        private var brackets = 0
        /// A reference being read, `&` first; nil outside one.
        private var reference: [UInt8]?
        /// Blanks of the text not yet taken: a run of them between two tags that holds a line
        /// end is the indentation of pretty-printed XML, which an office reader does not show
        /// (`<w:t>[[pri</w:t>(line end and indentation)</w:r><w:r><w:t>vate]]` shows a marker);
        /// dropped there, else taken.
        private var blanks: [UInt8] = []
        /// Whether ``blanks`` follow a tag directly.
        private var blanksAfterTag = false

        /// Nothing read yet.
        package init() {}

        /// Takes the next piece of the document.
        package mutating func feed(_ piece: UnsafeRawBufferPointer) {
            for byte in piece { take(byte) }
        }

        /// The last eight bytes, to find `<!ENTITY` wherever it stands (in a DOCTYPE's subset too).
        private var last8: UInt64 = 0
        private static let entityDeclaration = "<!ENTITY".utf8.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }

        private mutating func take(_ byte: UInt8) {
            last8 = last8 << 8 | UInt64(byte)
            if last8 == Self.entityDeclaration { declaresEntities = true }
            switch state {
            case .tag:
                if opening.count < 8 {
                    opening.append(byte)
                    if opening == Array("!--".utf8) { state = .comment; recent = 0; return }
                    if opening == Array("![CDATA[".utf8) { state = .cdata; brackets = 0; return }
                    // A processing instruction ends at `?>`, not at a `>` inside it.
                    if opening == [UInt8(ascii: "?")] { state = .instruction; recent = 0; return }
                }
                if byte == UInt8(ascii: ">") {
                    state = .text
                    blanksAfterTag = true
                } else if byte == UInt8(ascii: "=") {
                    afterEquals = true
                } else if afterEquals && (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")) {
                    state = .quoted
                    quote = byte
                } else if ![0x20, 0x09, 0x0A, 0x0D].contains(byte) {
                    afterEquals = false
                }
                return
            case .quoted:
                if byte == quote { state = .tag; afterEquals = false }
                return
            case .comment:
                if byte == UInt8(ascii: ">") && recent == 0x2D2D { state = .text; blanksAfterTag = true }
                recent = recent << 8 | UInt16(byte)
                return
            case .instruction:
                if byte == UInt8(ascii: ">") && recent & 0xFF == UInt16(UInt8(ascii: "?")) { state = .text; blanksAfterTag = true }
                recent = recent << 8 | UInt16(byte)
                return
            case .cdata:
                if byte == UInt8(ascii: "]") {
                    brackets += 1
                } else if byte == UInt8(ascii: ">") && brackets >= 2 {
                    text += repeatElement(UInt8(ascii: "]"), count: brackets - 2)
                    state = .text
                } else {
                    text += repeatElement(UInt8(ascii: "]"), count: brackets)
                    brackets = 0
                    text.append(byte)
                }
                return
            case .text:
                break
            }
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D, reference == nil {
                blanks.append(byte)
                return
            }
            if !blanks.isEmpty {
                // Between two tags, with a line end: indentation, not text.
                let indentation = byte == UInt8(ascii: "<") && blanksAfterTag && blanks.contains { $0 == 0x0A || $0 == 0x0D }
                if !indentation { text += blanks }
                blanks.removeAll(keepingCapacity: true)
            }
            blanksAfterTag = false
            if reference != nil {
                if byte == UInt8(ascii: ";") {
                    resolve()
                    return
                }
                let isName = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "#")
                if isName && reference!.count < 12 {
                    reference!.append(byte)
                    return
                }
                text += reference!
                reference = nil
            }
            if byte == UInt8(ascii: "<") {
                state = .tag
                opening.removeAll(keepingCapacity: true)
                afterEquals = false
            } else if byte == UInt8(ascii: "&") {
                reference = [byte]
            } else {
                text.append(byte)
            }
        }

        /// Decodes the reference read (`&` and what follows, without its `;`), or keeps it as
        /// written. From its bytes, by index: made anew at each reference, a table of XML's five
        /// names and the Strings were a quarter of reading a random-byte HTML part's text (issue 24).
        private mutating func resolve() {
            guard let written = reference else { return }
            reference = nil
            let count = written.count
            func at(_ index: Int) -> UInt8 { index < count ? written[index] : 0 }
            var scalar: Unicode.Scalar?
            if at(1) == UInt8(ascii: "#") {
                let hex = at(2) | 0x20 == UInt8(ascii: "x")
                let radix: UInt32 = hex ? 16 : 10
                var index = hex ? 3 : 2, value: UInt32? = index < count ? 0 : nil
                while index < count, let sum = value {
                    let byte = written[index], lower = byte | 0x20
                    let digit: UInt32 = byte >= 0x30 && byte <= 0x39 ? UInt32(byte - 0x30)
                        : hex && lower >= 0x61 && lower <= 0x66 ? UInt32(lower - 0x61) + 10 : radix
                    // At most 10 digits (a reference is 12 bytes at most), each step at most U+10FFFF times 16: no overflow.
                    value = digit < radix && sum * radix + digit <= 0x10FFFF ? sum * radix + digit : nil
                    index += 1
                }
                scalar = value.flatMap(Unicode.Scalar.init)
            } else {
                // XML's five names: amp, lt, gt, quot, apos.
                switch (count, at(1), at(2), at(3), at(4)) {
                case (4, 0x61, 0x6D, 0x70, _): scalar = "&"
                case (3, 0x6C, 0x74, _, _): scalar = "<"
                case (3, 0x67, 0x74, _, _): scalar = ">"
                case (5, 0x71, 0x75, 0x6F, 0x74): scalar = "\""
                case (5, 0x61, 0x70, 0x6F, 0x73): scalar = "'"
                default: scalar = nil
                }
            }
            if let scalar { text += UTF8.encode(scalar)! } else { text += written + [UInt8(ascii: ";")] }
        }
    }

    /// The strings of a PDF content stream as its reader assembles the text: literal strings
    /// with their escapes decoded (`\133` octal, `\(`, a line continuation), hex strings
    /// (`<5b5b70>`) decoded, all joined in order, so the pieces of one `TJ` array and
    /// consecutive `Tj`s are one text. Glyphs a font remaps are not undone. Fed in pieces;
    /// time linear in the bytes fed.
    package struct PDFStrings: Sendable {
        /// The strings so far, joined.
        package private(set) var text: [UInt8] = []
        private enum State: Sendable { case outside, comment, afterLess, literal, escape, octal, hex }
        private var state = State.outside
        private var depth = 0
        private var value = 0
        private var digits = 0
        private var nibble: Int?

        /// Nothing read yet.
        package init() {}

        /// Takes the next piece of the content.
        package mutating func feed(_ piece: UnsafeRawBufferPointer) {
            for byte in piece { take(byte) }
        }

        private static func hexValue(_ byte: UInt8) -> Int? {
            switch byte {
            case 0x30...0x39: return Int(byte - 0x30)
            case 0x41...0x46: return Int(byte - 0x41 + 10)
            case 0x61...0x66: return Int(byte - 0x61 + 10)
            default: return nil
            }
        }

        private mutating func take(_ byte: UInt8) {
            switch state {
            case .outside:
                if byte == UInt8(ascii: "(") {
                    state = .literal
                    depth = 1
                } else if byte == UInt8(ascii: "<") {
                    state = .afterLess
                } else if byte == UInt8(ascii: "%") {
                    state = .comment
                }
            case .comment:
                // A comment runs to the line's end: a `(` or `<` in it opens nothing.
                if byte == 0x0A || byte == 0x0D { state = .outside }
            case .afterLess:
                // `<<` opens a dictionary; anything else starts a hex string.
                if byte == UInt8(ascii: "<") { state = .outside } else { state = .hex; nibble = nil; take(byte) }
            case .hex:
                if byte == UInt8(ascii: ">") {
                    if let high = nibble { text.append(UInt8(high << 4)) }
                    nibble = nil
                    state = .outside
                } else if let digit = Self.hexValue(byte) {
                    if let high = nibble { text.append(UInt8(high << 4 | digit)); nibble = nil } else { nibble = digit }
                }
            case .literal:
                if byte == UInt8(ascii: "\\") {
                    state = .escape
                } else if byte == UInt8(ascii: "(") {
                    depth += 1
                    text.append(byte)
                } else if byte == UInt8(ascii: ")") {
                    depth -= 1
                    if depth == 0 { state = .outside } else { text.append(byte) }
                } else {
                    text.append(byte)
                }
            case .escape:
                state = .literal
                switch byte {
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case 0x30...0x37:
                    state = .octal
                    value = Int(byte - 0x30)
                    digits = 1
                case 0x0A, 0x0D: break  // a line continuation
                default: text.append(byte)  // `\(`, `\)`, `\\`, and a backslash before any other byte is dropped
                }
            case .octal:
                if (0x30...0x37).contains(byte) && digits < 3 {
                    value = value << 3 | Int(byte - 0x30)
                    digits += 1
                    if digits == 3 { text.append(UInt8(value & 0xFF)); state = .literal }
                } else {
                    text.append(UInt8(value & 0xFF))
                    state = .literal
                    take(byte)
                }
            }
        }

        /// `/ASCIIHexDecode`: pairs of hex digits, white space skipped, to `>`.
        static func hexDecoded(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
            var out: [UInt8] = []
            var high: Int?
            for byte in bytes {
                if byte == UInt8(ascii: ">") { break }
                guard let digit = hexValue(byte) else { continue }
                if let first = high { out.append(UInt8(first << 4 | digit)); high = nil } else { high = digit }
            }
            if let first = high { out.append(UInt8(first << 4)) }
            return out
        }

        /// `/ASCII85Decode`: groups of five of `!`…`u` to four bytes, `z` four zeros, white space
        /// skipped, to `~>`; a last short group padded with `u`.
        static func ascii85Decoded(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
            var out: [UInt8] = []
            var group: [UInt32] = []
            func flush(_ count: Int) {
                var value: UInt64 = 0
                for index in 0..<5 { value = value * 85 + UInt64(index < group.count ? group[index] : 84) }
                let word = UInt32(truncatingIfNeeded: value)
                let all: [UInt8] = [UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)]
                out += all.prefix(count)
                group.removeAll(keepingCapacity: true)
            }
            var index = bytes.startIndex
            if bytes.starts(with: Array("<~".utf8)) { index += 2 }
            while index < bytes.endIndex {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "~") { break }
                if byte == UInt8(ascii: "z") && group.isEmpty { out += [0, 0, 0, 0]; continue }
                guard (0x21...0x75).contains(byte) else { continue }
                group.append(UInt32(byte - 0x21))
                if group.count == 5 { flush(4) }
            }
            if group.count > 1 { flush(group.count - 1) }
            return out
        }
    }
}
