internal import CCompression
internal import CZlib

/// The compressed formats a reader unpacks when it opens a file, besides
/// zip and PDF: each is one stream (or members one after the other) that
/// unpacks to a file's content. The libraries are Debian's (zlib, libbz2,
/// liblzma, libzstd, lzlib); only the step that feeds them is ours
/// (``Inflation``'s walk), so that every format is read under the same
/// budget and handed to the same search.
enum CompressedFormat: Sendable {
    /// gzip (RFC 1952): members one after the other.
    case gzip
    /// A zlib stream (RFC 1950), as a `.z` or `.zz` file or a PDF's Flate stream holds it.
    case zlib
    /// Raw deflate (RFC 1951), as a zip entry holds it: no signature of its own.
    case deflate
    /// bzip2 (`BZh1` to `BZh9`): streams one after the other, as `bunzip2` reads them.
    case bzip2
    /// xz, streams one after the other, as `unxz` reads them.
    case xz
    /// The older `.lzma` format (LZMA alone), with the usual properties byte.
    case lzma
    /// zstd frames (RFC 8878).
    case zstd
    /// lzip members.
    case lzip
    /// Unix `compress` (LZW, `.Z`), which `gunzip` and `uncompress` read, and `tar` opens as a `.tar.Z`.
    case compress

    /// The format whose signature `bytes` start with, if any. A zlib stream is
    /// taken only with the header checksum right and no preset dictionary.
    static func of(_ bytes: UnsafeRawBufferPointer) -> CompressedFormat? {
        func starts(_ prefix: [UInt8]) -> Bool { bytes.count >= prefix.count && zip(prefix, bytes).allSatisfy { $0 == $1 } }
        if starts([0x1F, 0x8B]) { return .gzip }
        if starts([0x42, 0x5A, 0x68]), bytes.count > 3, (0x31...0x39).contains(bytes[3]) { return .bzip2 }
        if starts([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) { return .xz }
        // A zstd frame, or a skippable frame (`pzstd` writes one first), which zstd's tools pass over.
        if starts([0x28, 0xB5, 0x2F, 0xFD]) || (bytes.count >= 4 && bytes[0] & 0xF0 == 0x50 && starts([bytes[0], 0x2A, 0x4D, 0x18])) {
            return .zstd
        }
        if starts([0x4C, 0x5A, 0x49, 0x50]) { return .lzip }
        // `compress`: 1F 9D, then 9 to 16 bits a code and no reserved bit.
        if starts([0x1F, 0x9D]), bytes.count > 2, bytes[2] & 0x60 == 0, (9...16).contains(bytes[2] & 0x1F) { return .compress }
        // LZMA alone: a properties byte (lc + lp * 9 + pb * 45, each within its range), a
        // dictionary, and an uncompressed size that is unknown (all ones) or
        // below 2^48: what `xz --format=lzma` writes with any options. Text never starts so (the
        // size's high bytes would be letters); other bytes that do are tried, and give nothing.
        // liblzma takes only lc + lp <= 4, and no tool writes a dictionary beyond 1.5 GiB (xz's and
        // the LZMA SDK's largest): a tar's first header (`notes.txt` and NULs) would pass the rest, and
        // a tar of a gzip file was withheld as a `.lzma` asking 1.9 GB. A tar (`ustar` at 257) is not one.
        let properties = Int(bytes.first ?? 255)
        if bytes.count >= 13, properties < 225, properties % 45 % 9 + properties % 45 / 9 <= 4 {
            let dictionary = Int(bytes[1]) | Int(bytes[2]) << 8 | Int(bytes[3]) << 16 | Int(bytes[4]) << 24
            let unknownSize = bytes[5...12].allSatisfy { $0 == 0xFF }
            // Any dictionary: liblzma takes one below 4 KiB as 4 KiB (a review: `xz -dc` read a .lzma whose header said 2048).
            // (The tar check last: it sums a header's 512 bytes.)
            if dictionary <= 3 << 29, unknownSize || (bytes[11] == 0 && bytes[12] == 0), !isTar(bytes) { return .lzma }
        }
        // zlib (RFC 1950): deflate, a window of at most 32 KiB, the header check right, no preset dictionary.
        if bytes.count >= 2, bytes[0] & 0x0F == 8, bytes[0] >> 4 <= 7, (Int(bytes[0]) << 8 | Int(bytes[1])) % 31 == 0,
           bytes[1] & 0x20 == 0, !isTar(bytes) {
            return .zlib
        }
        return nil
    }

    /// True when `bytes` start as a tar (`ustar` at 257, POSIX and GNU alike, or a header whose checksum
    /// is right, as a v7 tar's is: ``Container``): its first bytes are a member's name, which may look
    /// like a `.lzma` or zlib header.
    static func isTar(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 262 && bytes[257] == 0x75 && bytes[258] == 0x73 && bytes[259] == 0x74 && bytes[260] == 0x61 && bytes[261] == 0x72
            || Container.isTarHeader(bytes, at: 0)
    }

    /// ``of(_:)`` for an array's first bytes.
    static func of(_ bytes: [UInt8]) -> CompressedFormat? {
        bytes.withUnsafeBytes { of($0) }
    }

    /// A new decoder for one stream (or member) of this format. `limitChecked`: the lzip
    /// headers in its input were looked at already (``LzipDecompressor/withinLimit(_:)``).
    func decoder(limitChecked: Bool = false) -> any Decompressor {
        switch self {
        case .gzip: ZlibDecompressor(windowBits: 31)
        case .zlib: ZlibDecompressor(windowBits: 15)
        case .deflate: ZlibDecompressor(windowBits: -15)
        case .bzip2: Bzip2Decompressor()
        case .xz: LzmaDecompressor(xz: true)
        case .lzma: LzmaDecompressor(xz: false)
        case .zstd: ZstdDecompressor()
        case .lzip: LzipDecompressor(limitChecked: limitChecked)
        case .compress: CompressDecompressor()
        }
    }

    /// Memory a decoder may take for one stream: 72 MiB, what `xz -9` needs to unpack
    /// (a 64 MiB dictionary) and more than `lzip -9` (32 MiB) or zstd's levels up to 19
    /// (8 MiB; zstd's window follows its tool's default, 128 MiB). A header asking for more is a file not read (``DecodeStep/State-swift.enum/unreadable``):
    /// without this, 6 bytes of a hostile lzip header make lzlib take 512 MiB.
    static let memoryLimit = 72 << 20
}

/// What one step of a decoder did.
struct DecodeStep {
    /// What it took of the input and gave of output. `taken` is below zero when a decoder that
    /// took input ahead finds its stream ended before it (lzip's members, then other bytes).
    var taken: Int, given: Int
    var state: State

    enum State {
        /// More may follow (with more input, or more room for output).
        case going
        /// The stream ended.
        case ended
        /// The data is damaged: what was given is what a reader shows.
        case failed
        /// Not read, so not clean: the stream asks for more memory than
        /// ``CompressedFormat/memoryLimit``, or a bzip2 or lzip stream is damaged, where
        /// `bzip2recover` and `lziprecover` read on past the damage (a review: a flipped byte
        /// in bzip2's first block hid a span in its second).
        case unreadable
    }
}

/// A decoder of one compressed stream, stepped over the input (all of what is left,
/// each time) into a buffer of output.
protocol Decompressor: AnyObject {
    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> DecodeStep
}

/// zlib's inflate: gzip (`windowBits` 31), zlib (15) or raw deflate (-15).
/// The `z_stream` is on the heap: zlib checks that it has not moved between calls.
final class ZlibDecompressor: Decompressor {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let ready: Bool

    init(windowBits: Int32) {
        stream.initialize(to: z_stream())
        ready = inflateInit2_(stream, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
    }

    deinit {
        if ready { inflateEnd(stream) }
        stream.deallocate()
    }

    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> DecodeStep {
        guard ready else { return DecodeStep(taken: 0, given: 0, state: .failed) }
        let inCount = min(input.count, Int(UInt32.max)), outCount = min(output.count, Int(UInt32.max))
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(inCount)
        stream.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        stream.pointee.avail_out = UInt32(outCount)
        let status = inflate(stream, Z_NO_FLUSH)
        let step = DecodeStep(taken: inCount - Int(stream.pointee.avail_in), given: outCount - Int(stream.pointee.avail_out), state: .going)
        switch status {
        case Z_OK, Z_BUF_ERROR: return step  // Z_BUF_ERROR: no progress was possible
        case Z_STREAM_END: return DecodeStep(taken: step.taken, given: step.given, state: .ended)
        default: return DecodeStep(taken: step.taken, given: step.given, state: .failed)
        }
    }
}

/// libbz2. Its `bz_stream` is on the heap for the same reason as zlib's.
final class Bzip2Decompressor: Decompressor {
    private let stream = UnsafeMutablePointer<bz_stream>.allocate(capacity: 1)
    private let ready: Bool

    init() {
        stream.initialize(to: bz_stream())
        ready = BZ2_bzDecompressInit(stream, 0, 0) == BZ_OK  // at most 900 kB blocks: about 3.7 MB
    }

    deinit {
        if ready { BZ2_bzDecompressEnd(stream) }
        stream.deallocate()
    }

    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> DecodeStep {
        guard ready else { return DecodeStep(taken: 0, given: 0, state: .failed) }
        let inCount = min(input.count, Int(UInt32.max)), outCount = min(output.count, Int(UInt32.max))
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: CChar.self))
        stream.pointee.avail_in = UInt32(inCount)
        stream.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: CChar.self)
        stream.pointee.avail_out = UInt32(outCount)
        let status = BZ2_bzDecompress(stream)
        let taken = inCount - Int(stream.pointee.avail_in), given = outCount - Int(stream.pointee.avail_out)
        switch status {
        case BZ_OK: return DecodeStep(taken: taken, given: given, state: .going)
        case BZ_STREAM_END: return DecodeStep(taken: taken, given: given, state: .ended)
        default: return DecodeStep(taken: taken, given: given, state: .unreadable)  // damaged, or out of memory
        }
    }
}

/// liblzma: xz streams one after the other, or LZMA alone, within ``CompressedFormat/memoryLimit``.
final class LzmaDecompressor: Decompressor {
    private let stream = UnsafeMutablePointer<lzma_stream>.allocate(capacity: 1)
    private let ready: Bool

    init(xz: Bool) {
        stream.initialize(to: lzma_stream())  // LZMA_STREAM_INIT: all zero
        let limit = UInt64(CompressedFormat.memoryLimit)
        ready = (xz ? lzma_stream_decoder(stream, limit, 0x08 /* LZMA_CONCATENATED, a macro Swift does not import */) : lzma_alone_decoder(stream, limit)) == LZMA_OK
    }

    deinit {
        lzma_end(stream)
        stream.deallocate()
    }

    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> DecodeStep {
        guard ready else { return DecodeStep(taken: 0, given: 0, state: .failed) }
        stream.pointee.next_in = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        stream.pointee.avail_in = input.count
        stream.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        stream.pointee.avail_out = output.count
        // All that is left is given at each step: the input ends where it ends.
        let status = lzma_code(stream, LZMA_FINISH)
        let taken = input.count - stream.pointee.avail_in, given = output.count - stream.pointee.avail_out
        switch status {
        case LZMA_OK, LZMA_BUF_ERROR: return DecodeStep(taken: taken, given: given, state: .going)
        case LZMA_STREAM_END: return DecodeStep(taken: taken, given: given, state: .ended)
        case LZMA_MEMLIMIT_ERROR, LZMA_MEM_ERROR: return DecodeStep(taken: taken, given: given, state: .unreadable)
        default: return DecodeStep(taken: taken, given: given, state: .failed)
        }
    }
}

/// libzstd's streaming decoder: frames one after the other, a window of at most
/// ``CompressedFormat/memoryLimit``'s power of two below.
final class ZstdDecompressor: Decompressor {
    private let stream: OpaquePointer?

    init() {
        stream = ZSTD_createDStream()
        if let stream {
            // 2^27 = 128 MiB, the zstd tool's own default limit (a file `zstd -d` reads is read; what is
            // touched of it is bounded by the output budget); a frame asking for more is refused by zstd.
            _ = ZSTD_DCtx_setParameter(stream, ZSTD_d_windowLogMax, 27)
        }
    }

    deinit { ZSTD_freeDStream(stream) }

    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> DecodeStep {
        guard let stream else { return DecodeStep(taken: 0, given: 0, state: .failed) }
        var from = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        var to = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
        let result = ZSTD_decompressStream(stream, &to, &from)
        if ZSTD_isError(result) != 0 {
            let tooLarge = ZSTD_getErrorCode(result) == ZSTD_error_frameParameter_windowTooLarge
                || ZSTD_getErrorCode(result) == ZSTD_error_memory_allocation
            return DecodeStep(taken: from.pos, given: to.pos, state: tooLarge ? .unreadable : .failed)
        }
        // 0: a frame ended; it is the stream's end when no input follows it.
        let ended = result == 0 && from.pos == from.size
        return DecodeStep(taken: from.pos, given: to.pos, state: ended ? .ended : .going)
    }
}

/// lzlib: lzip members one after the other. lzlib takes the dictionary size a
/// member's header asks for (up to 512 MiB), so each place in the input that may be
/// a member's header is looked at first (``withinLimit(_:)``).
final class LzipDecompressor: Decompressor {
    private let decoder: OpaquePointer?
    private var finishedInput = false
    private var checked = false
    /// What ``step(_:_:)`` said it took so far, and whether a member ended.
    private var written = 0
    private var memberEnded = false

    /// `limitChecked`: the caller looked at the headers in the input already (a file searched for
    /// compressed files inside it looks once, not at each place it tries).
    init(limitChecked: Bool = false) {
        decoder = LZ_decompress_open()
        checked = limitChecked
    }

    deinit { LZ_decompress_close(decoder) }

    /// False when a member header in `bytes` (`LZIP`, version 1) asks for a dictionary
    /// beyond ``CompressedFormat/memoryLimit``. Every `LZIP` counts, also by chance in a
    /// member's data: such a file is not read, rather than read with lzlib's 512 MiB.
    static func withinLimit(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 6 else { return true }
        for at in 0...(bytes.count - 6) where bytes[at] == 0x4C && bytes[at + 1] == 0x5A && bytes[at + 2] == 0x49 && bytes[at + 3] == 0x50 {
            let coded = Int(bytes[at + 5])
            let base = 1 << (coded & 0x1F)
            if base - (base / 16) * (coded >> 5) > CompressedFormat.memoryLimit { return false }
        }
        return true
    }

    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> DecodeStep {
        guard let decoder else { return DecodeStep(taken: 0, given: 0, state: .failed) }
        if !checked {
            checked = true
            guard Self.withinLimit(input) else { return DecodeStep(taken: 0, given: 0, state: .unreadable) }
        }
        var taken = 0
        if !finishedInput {
            let offered = Int32(min(input.count, Int(Int32.max)))
            let written = offered > 0 ? LZ_decompress_write(decoder, input.baseAddress?.assumingMemoryBound(to: UInt8.self), offered) : 0
            guard written >= 0 else { return DecodeStep(taken: 0, given: 0, state: .failed) }
            taken = Int(written)
            if taken == input.count {
                _ = LZ_decompress_finish(decoder)
                finishedInput = true
            }
        }
        let into = output.baseAddress?.assumingMemoryBound(to: UInt8.self), room = Int32(min(output.count, Int(Int32.max)))
        var read = LZ_decompress_read(decoder, into, room)
        if read == 0 && finishedInput && LZ_decompress_finished(decoder) != 1 {
            // lzlib reports damage only on the read after the last bytes it could decode (so
            // that a tool recovers all it can): asked again, it says so, or that the input was cut.
            read = LZ_decompress_read(decoder, into, room)
        }
        if LZ_decompress_member_finished(decoder) == 1 { memberEnded = true }
        if read < 0, memberEnded, LZ_decompress_errno(decoder) == LZ_header_error {
            // Bytes after the last member that are no member (a tar's padding, the rest of a PDF), which
            // the lzip tool passes over: the file ended where the members did (taken: back to there).
            let end = Int(clamping: LZ_decompress_total_in_size(decoder))
            defer { written = end }
            return DecodeStep(taken: end - written, given: 0, state: .ended)
        }
        guard read >= 0, LZ_decompress_errno(decoder) == LZ_ok else {
            return DecodeStep(taken: taken, given: 0, state: .unreadable)  // damaged, or out of memory
        }
        written += taken
        return DecodeStep(taken: taken, given: Int(read), state: LZ_decompress_finished(decoder) == 1 ? .ended : .going)
    }
}

/// Unix `compress` (LZW, `.Z`), decoded here as `gzip -d` and `uncompress` decode it (gzip's
/// `unlzw.c`): 9 to 16 bits a code, codes in groups of eight, the rest of a group passed over when
/// the width grows or, in block mode, a CLEAR (256) empties the table. Ours, not a library's:
/// libarchive's filter (the one Debian library that reads LZW) gives nothing of a `.Z` followed by
/// other bytes (a tar's padding, the next member of an unpacked tar), where `gzip -dc` shows all it
/// decoded before the first code that cannot be. LZW has no end of its own: the file ends where its
/// input does, so a step that has used all its input and holds nothing more says `going`, with
/// nothing taken or given (the walk then stops: what is after a `.Z` is searched on). A code beyond
/// the table is damage: what was decoded before it is given, then `failed`. The tables are at most
/// 64 Ki codes: no memory to limit; what a code expands to is counted by the walk's output budget.
final class CompressDecompressor: Decompressor {
    private var headerRead = 0
    private var maxBits = 16
    private var blockMode = true
    private var width = 9
    private var maxCode = 511
    private var free = 257
    /// Codes read since the last change of width or CLEAR: a group of eight ends at a multiple of eight.
    private var codesInGroup = 0
    /// Bits still to pass over to a group's end.
    private var skip = 0
    private var bits: UInt32 = 0
    private var count = 0
    private var old = -1
    private var last: UInt8 = 0
    /// The table's strings past the 256 bytes (and 256 itself): each the code before its last byte, and that byte. Grown
    /// as codes are defined, so that a try of chance bytes costs no 192 KiB of table.
    private var prefix = [UInt16](repeating: 0, count: 257)
    private var suffix = [UInt8](repeating: 0, count: 257)
    /// A code's string, last byte first, not yet all given.
    private var pending: [UInt8] = []
    private var failed = false

    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) -> DecodeStep {
        var taken = 0, given = 0
        while given < output.count {
            if let byte = pending.popLast() {
                output[given] = byte
                given += 1
                continue
            }
            if failed { return DecodeStep(taken: taken, given: given, state: .failed) }
            if headerRead < 3 {
                guard taken < input.count else { break }
                let byte = input[taken]
                taken += 1
                headerRead += 1
                if headerRead == 3 {
                    maxBits = Int(byte & 0x1F)
                    blockMode = byte & 0x80 != 0
                    free = blockMode ? 257 : 256
                    if !(9...16).contains(maxBits) || byte & 0x60 != 0 { failed = true }
                }
                continue
            }
            if skip == 0, free > maxCode, width < maxBits {
                passGroup()
                width += 1
                maxCode = width == maxBits ? 1 << maxBits : (1 << width) - 1
            }
            // Fill the bits for the next code (or the bits to pass over).
            while skip > 0 || count < width {
                if skip > 0, count > 0 {
                    let dropped = min(skip, count)
                    bits >>= UInt32(dropped)
                    count -= dropped
                    skip -= dropped
                    continue
                }
                guard taken < input.count else { return DecodeStep(taken: taken, given: given, state: .going) }
                bits |= UInt32(input[taken]) << UInt32(count)
                count += 8
                taken += 1
            }
            let code = Int(bits & ((1 << UInt32(width)) - 1))
            bits >>= UInt32(width)
            count -= width
            codesInGroup += 1
            decode(code)
        }
        return DecodeStep(taken: taken, given: given, state: .going)
    }

    /// Passes over the rest of the group of eight codes being read.
    private func passGroup() {
        skip = (8 - codesInGroup % 8) % 8 * width
        codesInGroup = 0
    }

    /// One code: its string onto ``pending``, and the table's next entry.
    private func decode(_ code: Int) {
        if old == -1 {
            guard code < 256 else { failed = true; return }
            old = code
            last = UInt8(code)
            pending.append(last)
            return
        }
        if code == 256 && blockMode {
            passGroup()
            free = 256
            width = 9
            maxCode = 511
            return
        }
        var current = code
        if code >= free {
            // The string being defined (KwKwK): the previous one and its own first byte.
            guard code == free else { failed = true; return }
            pending.append(last)
            current = old
        }
        while current >= 256 {
            pending.append(suffix[current])
            current = Int(prefix[current])
        }
        last = UInt8(current)
        pending.append(last)
        if free < 1 << maxBits {
            if free < prefix.count {
                prefix[free] = UInt16(old)
                suffix[free] = last
            } else {
                prefix.append(UInt16(old))
                suffix.append(last)
            }
            free += 1
        }
        old = code
    }
}
