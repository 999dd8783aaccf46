internal import CGMime

/// Quoted-printable encoding of text, byte for byte what GMime's encoder
/// writes (`g_mime_encoding_quoted_encode_step` and `_close`, GMime 3.2):
/// the rebuilt postcard's text parts are stored encoded, so that GMime
/// copies them out when it writes the message instead of running its
/// filter over them each time (issue 24, row 5).
enum QuotedPrintable {
    /// GMime's `is_qpsafe`: tab, space and the printable bytes but `=`.
    @inline(__always)
    static func isSafe(_ byte: UInt8) -> Bool {
        byte == 9 || (byte >= 32 && byte <= 126 && byte != 61)
    }

    /// The most bytes encoding `count` bytes can write: three for each, a
    /// soft line break ("=\n") for every 70 bytes written at least, and the
    /// end's "=XX=\n".
    static func maximumLength(_ count: Int) -> Int {
        3 * count + 2 * (3 * count / 70 + 1) + 5
    }

    /// Encodes `input` into `output`, which holds ``maximumLength(_:)`` bytes;
    /// returns the number written. Lines end in LF; CR LF is written as LF,
    /// a CR elsewhere as `=0D` (GMime's encoder does the same).
    static func encode(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) -> Int {
        guard let source = input.baseAddress else { return 0 }
        let count = input.count
        let hex: StaticString = "0123456789ABCDEF"
        let digits = hex.utf8Start
        var out = 0
        var sofar = 0      // bytes on the line written so far
        var last = -1      // a blank or CR held back: its encoding depends on what follows
        var index = 0
        while index < count {
            // The common case first: printable bytes, and blanks before one, none held back, written
            // as they are up to the line's 75th (GMime breaks the line before a byte when more than
            // 74 are written, and a blank held back is written when the next byte comes).
            if last == -1 {
                let room = min(count - index, 75 - sofar)
                var run = 0
                while run < room {
                    let byte = source[index + run]
                    if byte > 32 && byte < 127 && byte != 61 {
                        output[out + run] = byte
                        run += 1
                        continue
                    }
                    guard byte == 32 || byte == 9, run + 1 < room else { break }
                    let next = source[index + run + 1]
                    guard next > 32 && next < 127 && next != 61 else { break }
                    output[out + run] = byte
                    output[out + run + 1] = next
                    run += 2
                }
                if run > 0 {
                    out += run
                    sofar += run
                    index += run
                    continue
                }
            }
            let c = source[index]
            index += 1
            if c == 13 {
                if last != -1 {
                    escape(last, at: output + out, digits)
                    out += 3
                    sofar += 3
                }
                last = 13
            } else if c == 10 {
                if last != -1 && last != 13 {
                    escape(last, at: output + out, digits)
                    out += 3
                }
                output[out] = 10
                out += 1
                sofar = 0
                last = -1
            } else {
                if last != -1 {
                    if isSafe(UInt8(last)) {
                        output[out] = UInt8(last)
                        out += 1
                        sofar += 1
                    } else {
                        escape(last, at: output + out, digits)
                        out += 3
                        sofar += 3
                    }
                }
                if isSafe(c) {
                    if sofar > 74 {
                        output[out] = 61
                        output[out + 1] = 10
                        out += 2
                        sofar = 0
                    }
                    if c == 32 || c == 9 {
                        last = Int(c)  // written when the next byte shows whether it ends a line
                    } else {
                        output[out] = c
                        out += 1
                        sofar += 1
                        last = -1
                    }
                } else {
                    if sofar > 72 {
                        output[out] = 61
                        output[out + 1] = 10
                        out += 2
                        sofar = 3
                    } else {
                        sofar += 3
                    }
                    escape(Int(c), at: output + out, digits)
                    out += 3
                    last = -1
                }
            }
        }
        if last != -1 {
            // A blank or CR at the very end is encoded, and the text ends in a soft line break.
            escape(last, at: output + out, digits)
            output[out + 3] = 61
            output[out + 4] = 10
            out += 5
        }
        return out
    }

    /// Writes `=XX` for `byte` at `at`.
    @inline(__always)
    private static func escape(_ byte: Int, at: UnsafeMutablePointer<UInt8>, _ digits: UnsafePointer<UInt8>) {
        at[0] = 61
        at[1] = digits[(byte >> 4) & 15]
        at[2] = digits[byte & 15]
    }

    /// `text`'s UTF-8 encoded into a new GMime byte array (owned by the caller).
    static func encodedByteArray(_ text: String) -> UnsafeMutablePointer<GByteArray> {
        var text = text
        return text.withUTF8 { utf8 in
            // Reserved for the worst case, which plain text never comes near: pages never written are never resident.
            let array = g_byte_array_sized_new(guint(clamping: maximumLength(utf8.count)))!
            let written = utf8.count == 0 ? 0 : encode(utf8, into: array.pointee.data)
            g_byte_array_set_size(array, guint(written))
            return array
        }
    }

    /// `bytes` encoded, as an array (for tests and small texts).
    static func encoded(_ bytes: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: maximumLength(bytes.count)) { buffer, count in
            count = bytes.withUnsafeBufferPointer { encode($0, into: buffer.baseAddress!) }
        }
    }
}
