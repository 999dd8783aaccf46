internal import CZlib

/// The compressed text inside files a reader unpacks when it opens them: the
/// entries of a zip archive (docx, xlsx, pptx, odt, epub are zip archives),
/// the members of a gzip file and the Flate streams of a PDF. A marker there
/// is shown by the program that opens the file, though no byte of the file
/// holds it; so a search of such a part reads it inflated too.
///
/// zlib does the inflating (Debian's zlib1g); the containers around it are
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
        /// No zip, gzip or PDF: nothing to inflate.
        case notCompressed
        /// Every stream found was inflated and fed.
        case read
        /// A stream could not be read to its end within the budget.
        case unreadable
    }

    /// How many of a file's first bytes ``mayHold(_:)`` looks at.
    package static let headSize = 1024

    /// True when a file starting with `head` is a zip archive, a gzip file or a
    /// PDF (`%PDF-` within its first ``headSize`` bytes, where readers look for it).
    package static func mayHold(_ head: [UInt8]) -> Bool {
        head.starts(with: [0x50, 0x4B, 0x03, 0x04]) || head.starts(with: [0x50, 0x4B, 0x05, 0x06]) || head.starts(with: [0x1F, 0x8B])
            || head.withUnsafeBufferPointer { Walk.find(Array("%PDF-".utf8), in: $0, from: 0, below: $0.count) != nil }
    }

    /// What a mail's compressed files may cost together beyond 32 times their
    /// own sizes: 16 MiB, inflated to and (separately) inflated from. Ordinary
    /// office files expand 5 to 20 times; a compression bomb stops here, and
    /// many small ones share this one allowance, so a mail costs work linear in its size.
    package static let mailAllowance = 16 << 20

    /// Feeds `body` the inflated content of every compressed stream in `bytes`,
    /// in pieces; says whether `bytes` is such a file and was read whole within
    /// 32 times its size plus `allowance`, and takes from `allowance` what it used beyond that.
    package static func inflate(_ bytes: [UInt8], allowance: inout Int, _ body: (UnsafeRawBufferPointer) -> Void) -> Outcome {
        let own = 32 * bytes.count
        let budget = own + max(0, allowance)
        let (outcome, output, input) = withoutActuallyEscaping(body) { body in
            bytes.withUnsafeBufferPointer { buffer in
                var walk = Walk(bytes: buffer, output: budget, input: budget, body: body)
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

    private struct Walk {
        let bytes: UnsafeBufferPointer<UInt8>
        /// What may still be inflated to, and inflated from.
        var output: Int
        var input: Int
        let body: (UnsafeRawBufferPointer) -> Void
        var exhausted = false
        /// A zip entry compressed otherwise than deflate (bzip2, LZMA …), which readers open and this walk does not.
        var unknownMethod = false

        mutating func run() -> Outcome {
            let kind: Outcome
            if starts(with: [0x50, 0x4B, 0x03, 0x04], at: 0) || starts(with: [0x50, 0x4B, 0x05, 0x06], at: 0) {
                kind = zip()
            } else if starts(with: [0x1F, 0x8B], at: 0) {
                kind = gzip()
            } else if pdfStart() {
                kind = pdf()
            } else {
                kind = .notCompressed
            }
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

        mutating func zip() -> Outcome {
            // Each entry read once per way it is described (its place, method and encryption flag).
            var read: Set<[Int]> = []
            // The local headers in order, as a reader that streams the archive finds them.
            var offset = 0
            while !exhausted, let at = find([0x50, 0x4B, 0x03, 0x04], from: offset) {
                if let flags = le16(at + 6), let method = le16(at + 8) { read.insert([at, method, flags & 1]) }
                offset = max(at + 4, entry(at: at) ?? 0)
            }
            // The central directory's entries, as a reader that opens the archive finds them: with the
            // directory's method and flags, which such a reader takes over the local header's.
            if let end = centralDirectoryEnd(), let count = le16(end + 10), let start = le32(end + 16) {
                var record = start
                for _ in 0..<count where !exhausted {
                    guard starts(with: [0x50, 0x4B, 0x01, 0x02], at: record), let flags = le16(record + 8), let method = le16(record + 10),
                          let local = le32(record + 42), let name = le16(record + 28), let extra = le16(record + 30),
                          let comment = le16(record + 32) else { break }
                    if read.insert([local, method, flags & 1]).inserted { _ = entry(at: local, method: method, flags: flags) }
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
        mutating func entry(at: Int, method given: Int? = nil, flags givenFlags: Int? = nil) -> Int? {
            guard starts(with: [0x50, 0x4B, 0x03, 0x04], at: at), let localFlags = le16(at + 6), let localMethod = le16(at + 8),
                  let name = le16(at + 26), let extra = le16(at + 28) else { return nil }
            let method = given ?? localMethod, flags = givenFlags ?? localFlags
            let data = at + 30 + name + extra
            guard flags & 1 == 0, data <= bytes.count else { return nil }
            if method != 0 && method != 8 { unknownMethod = true }
            guard method == 8 else { return nil }
            let (used, ended) = stream(from: data, windowBits: -15)
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

        // MARK: gzip and PDF

        /// Each member of a gzip file, one after the other.
        mutating func gzip() -> Outcome {
            var offset = 0
            while !exhausted, starts(with: [0x1F, 0x8B], at: offset) {
                let (used, ended) = stream(from: offset, windowBits: 31)
                guard ended, used > 0 else { break }
                offset += used
            }
            return .read
        }

        /// `%PDF-` within the first ``headSize`` bytes.
        func pdfStart() -> Bool {
            find(Array("%PDF-".utf8), from: 0, below: min(bytes.count, headSize)) != nil
        }

        /// Every `stream` keyword and its line end, inflated as zlib data (FlateDecode) where it is.
        mutating func pdf() -> Outcome {
            var offset = 0
            while !exhausted, let at = find(Array("stream".utf8), from: offset) {
                var data = at + 6
                if starts(with: [0x0D, 0x0A], at: data) { data += 2 } else if starts(with: [0x0A], at: data) || starts(with: [0x0D], at: data) { data += 1 } else {
                    offset = data
                    continue
                }
                let (used, ended) = stream(from: data, windowBits: 15)
                offset = ended ? data + used : data
            }
            return .read
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

        /// Inflates one stream starting at `from` (`windowBits` as zlib takes it: -15 raw
        /// deflate, 15 zlib, 31 gzip) and feeds what it gives; returns the bytes it used and
        /// whether the stream ended. A stream that stops early (damaged, cut off) feeds
        /// what it gave, as a reader shows it. Exhausts the walk past the budget.
        mutating func stream(from: Int, windowBits: Int32) -> (used: Int, ended: Bool) {
            guard from < bytes.count, !exhausted, let base = bytes.baseAddress else { return (0, false) }
            var zs = z_stream()
            guard inflateInit2_(&zs, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return (0, false) }
            defer { inflateEnd(&zs) }
            let available = min(bytes.count - from, input, Int(UInt32.max))
            zs.next_in = UnsafeMutablePointer(mutating: base + from)
            zs.avail_in = UInt32(available)
            let chunk = 64 << 10
            let out = UnsafeMutablePointer<UInt8>.allocate(capacity: chunk)
            defer { out.deallocate() }
            var status = Z_OK
            while status == Z_OK {
                zs.next_out = out
                zs.avail_out = UInt32(chunk)
                status = CZlib.inflate(&zs, Z_NO_FLUSH)
                let produced = chunk - Int(zs.avail_out)
                output -= produced
                if output < 0 { exhausted = true; break }
                if produced > 0 { body(UnsafeRawBufferPointer(start: out, count: produced)) }
            }
            let used = available - Int(zs.avail_in)
            input -= used
            // Stopped for want of input the budget held back: the rest is not read.
            if status == Z_BUF_ERROR && available < bytes.count - from { exhausted = true }
            if input <= 0 { exhausted = true }
            return (used, status == Z_STREAM_END)
        }
    }
}
