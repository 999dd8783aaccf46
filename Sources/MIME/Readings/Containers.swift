/// The archives that hold files one after the other, uncompressed, each behind a header that
/// gives its size: tar (v7, ustar, GNU and pax alike, known by its header's checksum), ar (a
/// `.deb` is one) and cpio (newc, crc and odc, the ASCII headers). Their tools (`tar -x`, `ar x`,
/// `dpkg-deb`, `cpio -i`) write each member out as the file it is, which its own tool then opens:
/// a `.lzma` or zlib file, with no signature strong enough to search for (``Inflation``'s
/// `SignatureScan`), is found only so, at a member's start. Only the fields that locate the
/// members are read (no name is used); each header is read once, so a file costs time linear
/// in its size.
enum Container {
    /// How many of a file's first bytes ``opens(_:)`` needs: a tar's first header.
    static let headSize = 512

    /// True when `bytes` start as a tar (a header whose checksum is right), an ar archive or a cpio archive.
    static func opens(_ bytes: UnsafeRawBufferPointer) -> Bool {
        isTarHeader(bytes, at: 0) || isAr(bytes) || cpioFormat(bytes, at: 0) != nil
    }

    /// Calls `member` with the place and length of each member's content, in order, while it says
    /// true; nothing when `bytes` is no such archive. A member cut short by the file's end is given to there.
    static func forEachMember(_ bytes: UnsafeRawBufferPointer, _ member: (_ from: Int, _ count: Int) -> Bool) {
        if isTarHeader(bytes, at: 0) {
            var header = 0
            while isTarHeader(bytes, at: header) {
                let size = tarSize(bytes, at: header, cap: bytes.count + 1)
                let data = header + 512
                guard member(data, min(size, bytes.count - data)), size <= bytes.count - data else { return }
                header = data + (size + 511) / 512 * 512
            }
        } else if isAr(bytes) {
            // `!<arch>\n`, then 60-byte headers: a name (16), dates and ids, the size (10 decimal digits at 48), "`\n".
            var header = 8
            while header + 60 <= bytes.count, bytes[header + 58] == 0x60, bytes[header + 59] == 0x0A {
                guard let size = number(bytes, header + 48, 10, radix: 10) else { return }
                var data = header + 60
                var count = min(size, bytes.count - data)
                // BSD ar: `#1/N` names, the name's N bytes first in the data.
                if bytes[header] == 0x23, bytes[header + 1] == 0x31, bytes[header + 2] == 0x2F, let name = number(bytes, header + 3, 13, radix: 10) {
                    let skipped = min(name, count)
                    data += skipped
                    count -= skipped
                }
                guard member(data, count), size <= bytes.count - header - 60 else { return }
                header += 60 + size + size % 2
            }
        } else if cpioFormat(bytes, at: 0) != nil {
            var header = 0
            while let format = cpioFormat(bytes, at: header) {
                let ascii: Bool = format == .odc
                let fields = ascii ? (name: number(bytes, header + 59, 6, radix: 8), size: number(bytes, header + 65, 11, radix: 8))
                    : (name: number(bytes, header + 94, 8, radix: 16), size: number(bytes, header + 54, 8, radix: 16))
                guard let name = fields.name, let size = fields.size else { return }
                let headerSize = ascii ? 76 : 110
                // newc and crc pad the header and name, and the data, to four bytes; odc does not.
                let align = { (offset: Int) in ascii ? offset : (offset + 3) / 4 * 4 }
                let data = align(header + headerSize + name)
                guard data <= bytes.count else { return }
                // The last entry is `TRAILER!!!`, of no data.
                guard member(data, min(size, bytes.count - data)), size <= bytes.count - data else { return }
                header = align(data + size)
            }
        }
    }

    /// True when a tar header is at `at`: its checksum (8 octal digits at 148) is the sum of its 512
    /// bytes with the checksum's own counted as blanks, unsigned or signed (old tars summed signed
    /// bytes). A block of zeros (a tar's end) is none.
    static func isTarHeader(_ bytes: UnsafeRawBufferPointer, at: Int) -> Bool {
        guard at >= 0, at + 512 <= bytes.count, let stored = number(bytes, at + 148, 8, radix: 8) else { return false }
        var unsigned = 0, signed = 0
        for index in at..<(at + 512) {
            let byte = (at + 148..<at + 156).contains(index) ? 0x20 : bytes[index]
            unsigned += Int(byte)
            signed += Int(Int8(bitPattern: byte))
        }
        return stored == unsigned || stored == signed
    }

    /// A tar member's size: octal digits (12 bytes at 124), or GNU's base-256 (the first byte's high bit set);
    /// one beyond `cap` is `cap`.
    static func tarSize(_ bytes: UnsafeRawBufferPointer, at header: Int, cap: Int) -> Int {
        if bytes[header + 124] & 0x80 != 0 {
            var size = 0
            for index in (header + 125)..<(header + 136) {
                size = size << 8 | Int(bytes[index])
                if size > cap { return cap }
            }
            return size
        }
        return number(bytes, header + 124, 12, radix: 8).map { min($0, cap) } ?? 0
    }

    static func isAr(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 8 && Array("!<arch>\n".utf8).withUnsafeBytes { bytes.prefix(8).elementsEqual($0) }
    }

    enum CpioFormat { case newc, odc }

    /// `070701` (newc), `070702` (newc with a checksum) or `070707` (odc) at `at`, its header whole.
    static func cpioFormat(_ bytes: UnsafeRawBufferPointer, at: Int) -> CpioFormat? {
        guard at >= 0, at + 76 <= bytes.count, Array("07070".utf8).withUnsafeBytes({ bytes[at..<(at + 5)].elementsEqual($0) }) else { return nil }
        switch bytes[at + 5] {
        case 0x31, 0x32: return at + 110 <= bytes.count ? .newc : nil
        case 0x37: return .odc
        default: return nil
        }
    }

    /// The number written in `count` bytes at `at` in `radix`: digits, with blanks or NULs before or
    /// after them; nil when another byte stands there or no digit does. Capped past any file's size.
    static func number(_ bytes: UnsafeRawBufferPointer, _ at: Int, _ count: Int, radix: Int) -> Int? {
        guard at >= 0, at + count <= bytes.count else { return nil }
        var value = 0, digits = 0, ended = false
        for index in at..<(at + count) {
            let byte = bytes[index]
            let digit: Int? = switch byte {
            case 0x30...0x39: Int(byte - 0x30)
            case 0x41...0x46: Int(byte - 0x41 + 10)
            case 0x61...0x66: Int(byte - 0x61 + 10)
            default: nil
            }
            if let digit, digit < radix, !ended {
                value = min(value * radix + digit, Int(UInt32.max) * 16)
                digits += 1
            } else if byte == 0x20 || byte == 0 {
                if digits > 0 { ended = true }
            } else {
                return nil
            }
        }
        return digits > 0 ? value : nil
    }
}

extension Container {
    /// What a member that starts so is read as: a `.lzma`, zlib or `.Z` file (which no signature
    /// finds), a zip, or an archive of these kinds in turn; nil for any other (a compressed file
    /// with a strong signature is found by that).
    enum Reading { case members(CompressedFormat), zip, container }

    /// ``Reading`` of a member starting with `bytes` (its first ``headSize`` bytes, or all of a shorter one).
    static func reading(of bytes: UnsafeRawBufferPointer) -> Reading? {
        if let format = CompressedFormat.of(bytes), format == .lzma || format == .zlib || format == .compress { return .members(format) }
        if bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return .zip }
        return opens(bytes) ? .container : nil
    }

    /// A tar, ar or cpio archive read as it is unpacked, piece by piece: an unpacked `.tar.gz` is not
    /// held whole to find its members (a 95 MB tar was, and went past the 64 MiB a nested archive may
    /// hold). Only a member worth reading (``reading(of:)``) is held, to its end, and handed over.
    struct Stream {
        private enum Kind { case tar, ar, cpio }
        private let kind: Kind
        /// The header being gathered, and how many bytes it needs (cpio: its fixed part, then with the name).
        private var header: [UInt8] = []
        private var need: Int
        /// Bytes to pass over (ar's magic, a BSD name, padding after a member).
        private var skip = 0
        /// The current member's bytes still to come, and the padding after it.
        private var remaining = 0
        private var padding = 0
        private var inMember = false
        /// The current member's first bytes while its reading is not known, then all of it when it is worth one.
        private var held: [UInt8]?
        private var reading: Reading?
        private var ended = false

        /// A reader of the archive whose stream starts with `head` (at least ``headSize`` bytes, or the whole stream); nil when it is none.
        init?(head: UnsafeRawBufferPointer) {
            if Container.isTarHeader(head, at: 0) {
                kind = .tar; need = 512
            } else if Container.isAr(head) {
                kind = .ar; need = 60; skip = 8
            } else if Container.cpioFormat(head, at: 0) != nil {
                kind = .cpio; need = 6
            } else {
                return nil
            }
        }

        /// Takes the next piece of the stream; `found` is handed each member worth reading, whole, and
        /// says whether to go on. False when a member held is beyond `limit` (not read, so not clean).
        mutating func feed(_ piece: UnsafeRawBufferPointer, limit: Int, _ found: ([UInt8], Reading) -> Bool) -> Bool {
            var index = 0
            while index < piece.count, !ended {
                let rest = piece.count - index
                if skip > 0 {
                    let count = min(skip, rest)
                    skip -= count
                    index += count
                    continue
                }
                if !inMember {
                    let count = min(need - header.count, rest)
                    header += piece[index..<(index + count)]
                    index += count
                    if header.count == need { startMember() }
                    continue
                }
                let count = min(remaining, rest)
                if held != nil {
                    held! += piece[index..<(index + count)]
                    if reading == nil, held!.count >= Container.headSize { decide() }
                    if held != nil, held!.count > limit { ended = true; return false }
                }
                remaining -= count
                index += count
                if remaining == 0, !endMember(found) { return true }
            }
            return true
        }

        /// At the stream's end: a member cut short is handed over as far as it came (as its tool gives it).
        mutating func finish(_ found: ([UInt8], Reading) -> Bool) {
            if inMember, !ended { remaining = 0; _ = endMember(found) }
            ended = true
        }

        /// The header gathered: the member it announces, or the archive's end.
        private mutating func startMember() {
            let size: Int
            var nameSkip = 0
            let parsed: Int? = header.withUnsafeBytes { bytes in
                switch kind {
                case .tar:
                    guard Container.isTarHeader(bytes, at: 0) else { return nil }
                    return Container.tarSize(bytes, at: 0, cap: Int(UInt32.max) * 16)
                case .ar:
                    guard bytes[58] == 0x60, bytes[59] == 0x0A, let size = Container.number(bytes, 48, 10, radix: 10) else { return nil }
                    if bytes[0] == 0x23, bytes[1] == 0x31, bytes[2] == 0x2F, let name = Container.number(bytes, 3, 13, radix: 10) { nameSkip = min(name, size) }
                    return size
                case .cpio:
                    return nil
                }
            }
            if kind == .cpio {
                // The magic, then the fixed part, then the name (and padding to four bytes, newc and crc).
                guard header.starts(with: Array("07070".utf8)), [0x31, 0x32, 0x37].contains(header[5]) else { ended = true; return }
                let format: CpioFormat = header[5] == 0x37 ? .odc : .newc
                let fixed = format == .odc ? 76 : 110
                if need < fixed { need = fixed; return }
                let fields: (name: Int?, size: Int?) = header.withUnsafeBytes { bytes in
                    format == .odc ? (Container.number(bytes, 59, 6, radix: 8), Container.number(bytes, 65, 11, radix: 8))
                        : (Container.number(bytes, 94, 8, radix: 16), Container.number(bytes, 54, 8, radix: 16))
                }
                guard let name = fields.name, let fileSize = fields.size, name <= 1 << 20 else { ended = true; return }
                let whole = format == .odc ? fixed + name : (fixed + name + 3) / 4 * 4
                if need < whole { need = whole; return }
                size = fileSize
                padding = format == .odc ? 0 : (size + 3) / 4 * 4 - size
            } else {
                guard let parsed else { ended = true; return }
                size = parsed
                padding = kind == .tar ? (size + 511) / 512 * 512 - size : size % 2
            }
            header.removeAll(keepingCapacity: true)
            need = kind == .tar ? 512 : kind == .ar ? 60 : 6
            skip = nameSkip
            remaining = size - nameSkip
            inMember = true
            held = []
            reading = nil
        }

        /// Whether the member held is worth reading, on its first bytes; let go when not.
        private mutating func decide() {
            reading = held!.withUnsafeBytes { Container.reading(of: $0) }
            if reading == nil { held = nil }
        }

        /// The member's end: handed over when worth reading; the padding after it passed over.
        private mutating func endMember(_ found: ([UInt8], Reading) -> Bool) -> Bool {
            inMember = false
            skip = padding
            if held != nil, reading == nil { decide() }
            defer { held = nil; reading = nil }
            if let member = held, !member.isEmpty, let reading, !found(member, reading) { ended = true; return false }
            return true
        }
    }
}
