import Foundation
import Glibc
import TestSupport

/// The encoders the hostile mails are written with. Where a decoder has a
/// choice (how to split a base64 run, where to put a soft break) the encoder
/// takes it at random, so that the same text comes out in many spellings.
enum Encode {
    static func base64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed])
    }

    static func hex(_ byte: UInt8) -> String { String(format: "%%%02X", byte) }

    /// `text` in `charset` through glibc's iconv (what mailsec's stack decodes with); nil when iconv cannot.
    static func iconv(_ text: String, to charset: String) -> [UInt8]? {
        let handle = iconv_open(charset, "UTF-8")
        guard handle != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(handle) }
        var input = Array(text.utf8).map { CChar(bitPattern: $0) }
        var output = [CChar](repeating: 0, count: input.count * 8 + 16)
        let inCount = input.count, outCapacity = output.count
        let written: Int? = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                var inPointer: UnsafeMutablePointer<CChar>? = inBuffer.baseAddress
                var outPointer: UnsafeMutablePointer<CChar>? = outBuffer.baseAddress
                var inLeft = inCount, outLeft = outCapacity
                guard Glibc.iconv(handle, &inPointer, &inLeft, &outPointer, &outLeft) != -1,
                      Glibc.iconv(handle, nil, nil, &outPointer, &outLeft) != -1 else { return nil }
                return outCapacity - outLeft
            }
        }
        return written.map { output[..<$0].map { UInt8(bitPattern: $0) } }
    }

    /// UTF-7 (RFC 2152), written by hand: every character that may be direct
    /// is direct or shifted at random, so a marker comes out as `[[pri+AHY-ate]]`
    /// one time and `+AFsAWw-private]]` the next.
    static func utf7(_ text: String, using random: inout SeededRandom) -> [UInt8] {
        let direct = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'(),-./:? \n".unicodeScalars)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = [], run: [UInt16] = []
        func flush(before next: Unicode.Scalar?) {
            guard !run.isEmpty else { return }
            var bits: UInt32 = 0, count = 0
            out.append(UInt8(ascii: "+"))
            for unit in run {
                bits = (bits << 16) | UInt32(unit); count += 16
                while count >= 6 { count -= 6; out.append(alphabet[Int((bits >> UInt32(count)) & 63)]) }
            }
            if count > 0 { out.append(alphabet[Int((bits << UInt32(6 - count)) & 63)]) }
            // The closing '-' may be left out when what follows cannot be read as base64.
            let needsDash = next.map { alphabet.contains(UInt8(truncatingIfNeeded: $0.value)) && $0.isASCII || $0 == "-" } ?? false
            if needsDash || Bool.random(using: &random) { out.append(UInt8(ascii: "-")) }
            run = []
        }
        for scalar in text.unicodeScalars {
            if direct.contains(scalar) && (scalar == "\n" || Int.random(in: 0..<3, using: &random) > 0) {
                flush(before: scalar)
                out += Array(String(scalar).utf8)
            } else if scalar == "+" && run.isEmpty && Bool.random(using: &random) {
                out += Array("+-".utf8)
            } else {
                run += Array(String(scalar).utf16)
            }
        }
        flush(before: nil)
        return out
    }

    /// HZ (RFC 1843) for ASCII text, with the no-ops a decoder removes put
    /// inside at random: empty GB sections `~{~}` and line continuations `~` LF.
    static func hz(_ text: String, using random: inout SeededRandom) -> [UInt8] {
        var out: [UInt8] = []
        for byte in text.utf8 {
            if byte == UInt8(ascii: "~") { out += Array("~~".utf8); continue }
            out.append(byte)
            switch Int.random(in: 0..<8, using: &random) {
            case 0: out += Array("~{~}".utf8)
            case 1: out += Array("~\n".utf8)
            default: break
            }
        }
        return out
    }

    /// ISO-2022-JP for ASCII text, with redundant "switch to ASCII" escapes inside.
    static func iso2022jp(_ text: String, using random: inout SeededRandom) -> [UInt8] {
        var out: [UInt8] = []
        for byte in text.utf8 {
            out.append(byte)
            if Int.random(in: 0..<5, using: &random) == 0 && byte != 10 { out += [0x1B, UInt8(ascii: "("), UInt8(ascii: "B")] }
        }
        return out
    }

    /// An RFC 2047 encoded-word (or several, split at random byte positions).
    static func encodedWords(_ bytes: [UInt8], charset: String, using random: inout SeededRandom) -> String {
        var words: [String] = [], rest = bytes[...]
        while !rest.isEmpty {
            let take = Bool.random(using: &random) ? rest.count : Int.random(in: 1...max(1, rest.count), using: &random)
            let chunk = Array(rest.prefix(take)); rest = rest.dropFirst(take)
            if Bool.random(using: &random) {
                words.append("=?\(charset)?B?\(Data(chunk).base64EncodedString())?=")
            } else {
                let q = chunk.map { byte -> String in
                    if byte == 32 { return "_" }
                    if (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) { return String(UnicodeScalar(byte)) }
                    return String(format: "=%02X", byte)
                }.joined()
                words.append("=?\(charset)?\(Bool.random(using: &random) ? "Q" : "q")?\(q)?=")
            }
        }
        return words.joined(separator: Bool.random(using: &random) ? " " : "\n ")
    }

    /// An RFC 2231 parameter `name*…` for `bytes` in `charset`, split into a
    /// random number of continuations, each percent-encoded or (where it can be) plain.
    static func rfc2231(name: String, bytes: [UInt8], charset: String, using random: inout SeededRandom) -> String {
        let pieces = Int.random(in: 1...4, using: &random)
        if pieces == 1 { return "\(name)*=\(charset)''" + bytes.map(hex).joined() }
        var segments: [String] = [], rest = bytes[...], index = 0
        while !rest.isEmpty {
            let take = index == pieces - 1 ? rest.count : max(1, min(rest.count, Int.random(in: 1...max(1, bytes.count / pieces + 1), using: &random)))
            let chunk = Array(rest.prefix(take)); rest = rest.dropFirst(take)
            let plainOK = chunk.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 32 || $0 == 46 }
            if index > 0 && plainOK && Bool.random(using: &random) {
                segments.append("\(name)*\(index)=\"\(String(decoding: chunk, as: UTF8.self))\"")
            } else {
                segments.append("\(name)*\(index)*=" + (index == 0 ? "\(charset)''" : "") + chunk.map(hex).joined())
            }
            index += 1
        }
        return segments.joined(separator: ";\n ")
    }
}
