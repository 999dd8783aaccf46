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

    /// What an encoding carries from one piece of the input to the next (GMime's `save` and `state`).
    struct State {
        /// Bytes on the line written so far.
        var sofar = 0
        /// A blank or CR held back (its encoding depends on what follows), or -1.
        var last = -1
    }

    /// Encodes `input` into `output`, which holds ``maximumLength(_:)`` bytes;
    /// returns the number written. Lines end in LF; CR LF is written as LF,
    /// a CR elsewhere as `=0D` (GMime's encoder does the same).
    static func encode(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) -> Int {
        var state = State()
        return encode(input, into: output, state: &state, last: true)
    }

    /// Encodes `input`, one piece of the text, into `output` (``maximumLength(_:)`` of the piece),
    /// carrying `state` on; `last` ends the text. Returns the number of bytes written.
    static func encode(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>,
                       state: inout State, last isLast: Bool) -> Int {
        let source = input.baseAddress
        let count = input.count
        let hex: StaticString = "0123456789ABCDEF"
        let digits = hex.utf8Start
        var out = 0
        var sofar = state.sofar
        var last = state.last
        var index = 0
        defer { state = State(sofar: sofar, last: last) }
        while index < count {
            // The common case first: printable bytes, and blanks before one, none held back, written
            // as they are up to the line's 75th (GMime breaks the line before a byte when more than
            // 74 are written, and a blank held back is written when the next byte comes).
            if last == -1 {
                let room = min(count - index, 75 - sofar)
                var run = 0
                while run < room {
                    let byte = source![index + run]
                    if byte > 32 && byte < 127 && byte != 61 {
                        output[out + run] = byte
                        run += 1
                        continue
                    }
                    guard byte == 32 || byte == 9, run + 1 < room else { break }
                    let next = source![index + run + 1]
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
            let c = source![index]
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
        if isLast && last != -1 {
            // A blank or CR at the very end is encoded, and the text ends in a soft line break.
            escape(last, at: output + out, digits)
            output[out + 3] = 61
            output[out + 4] = 10
            out += 5
            last = -1
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

    /// `text`'s UTF-8 encoded into a new GMime byte array (owned by the caller). It is encoded a
    /// megabyte at a time, the array grown for each piece's worst case as it goes: plain text
    /// comes to some 3% more, and three times the text reserved at once could fail where memory
    /// is short. GMime's arrays grow to the next power of two; pages never written are never resident.
    static func encodedByteArray(_ text: String) -> UnsafeMutablePointer<GByteArray> {
        var text = text
        return text.withUTF8 { utf8 in
            let array = g_byte_array_sized_new(guint(clamping: utf8.count + utf8.count / 16 + 4096))!
            var state = State()
            var written = 0
            var index = 0
            repeat {
                let end = min(utf8.count, index + (1 << 20))
                // The piece's worst case, and room for what the last one held back and a break it brought on.
                g_byte_array_set_size(array, guint(written + maximumLength(end - index) + 8))
                written += encode(UnsafeBufferPointer(rebasing: utf8[index..<end]), into: array.pointee.data + written,
                                  state: &state, last: end == utf8.count)
                index = end
            } while index < utf8.count
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
