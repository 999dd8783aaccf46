import Foundation
import TestSupport

/// Generated mail content with what the listener must hand over: lines of
/// random octets (8-bit, UTF-8, NUL, bare CR and LF inside lines, lines that
/// start with "." or are "." alone, long lines), joined by CRLF.
struct GeneratedContent {
    /// What the handler must see: the lines joined with CRLF, CRLF at the end.
    let content: [UInt8]
    /// What goes on the wire after 354: dot-stuffed, then "." CRLF.
    let wire: [UInt8]

    init(random: inout SeededRandom, maxLines: Int = 40, maxLineLength: Int = 200) {
        var content: [UInt8] = []
        var wire: [UInt8] = []
        let lineCount = Int.random(in: 0...maxLines, using: &random)
        for _ in 0..<lineCount {
            var line = Self.line(&random, maxLength: maxLineLength)
            // CRLF ends a line; never inside one.
            var i = 1
            while i < line.count {
                if line[i - 1] == 13 && line[i] == 10 { line[i] = UInt8(ascii: "x") }
                i += 1
            }
            if line.last == 13 { line.append(UInt8(ascii: "y")) }
            content += line + [13, 10]
            wire += (line.first == UInt8(ascii: ".") ? [UInt8(ascii: ".")] : []) + line + [13, 10]
        }
        self.content = content
        self.wire = wire + Array(".\r\n".utf8)
    }

    private static func line(_ random: inout SeededRandom, maxLength: Int) -> [UInt8] {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return []
        case 1: return Array(".".utf8)
        case 2: return Array("..".utf8)
        case 3: return Array(".\r".utf8) + Array("x".utf8)
        case 4: return Array("a\n.\nb".utf8)                // bare LF "." bare LF: not an end
        case 5: return Array("Grüße, 日本語 ✉".utf8)
        default:
            let length = Int.random(in: 0...maxLength, using: &random)
            let prefix: [UInt8] = Bool.random(using: &random) ? [UInt8(ascii: ".")] : []
            return prefix + (0..<length).map { _ in
                switch Int.random(in: 0..<20, using: &random) {
                case 0: return 0
                case 1: return 13
                case 2: return 10
                case 3: return UInt8.random(in: 0x80...0xFF, using: &random)
                case 4: return UInt8(ascii: ".")
                default: return UInt8.random(in: 0x20...0x7E, using: &random)
                }
            }
        }
    }
}

/// Sends `bytes` cut at random places, with a pause now and then so the cuts
/// reach the listener as separate reads.
func sendInPieces(_ client: RawClient, _ bytes: [UInt8], _ random: inout SeededRandom, maxPiece: Int = 64) async throws {
    var offset = 0
    while offset < bytes.count {
        let length = min(bytes.count - offset, Int.random(in: 1...maxPiece, using: &random))
        try await client.send(Array(bytes[offset..<(offset + length)]))
        offset += length
        if Int.random(in: 0..<8, using: &random) == 0 { try await sleepMicroseconds(1000) }
    }
}

/// A seed from the clock, or from MAILSEC_TEST_SEED to repeat a run; printed.
func testSeed(_ name: String) -> UInt64 {
    let seed = ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"].flatMap { UInt64($0) }
        ?? UInt64(Date().timeIntervalSince1970 * 1000)
    print("\(name): seed \(seed) (MAILSEC_TEST_SEED=\(seed) repeats it)")
    return seed
}

/// True when every line is an SMTP reply line: three digits 2xx–5xx, then a
/// space or "-", printable ASCII text; a multi-line reply keeps one code.
func wellFormedReplies(_ lines: [String]) -> Bool {
    var continuing: Substring?
    for line in lines {
        let bytes = Array(line.utf8)
        guard bytes.count >= 4, (UInt8(ascii: "2")...UInt8(ascii: "5")).contains(bytes[0]),
              bytes[1...2].allSatisfy({ (48...57).contains($0) }),
              bytes[3] == 32 || bytes[3] == UInt8(ascii: "-"),
              bytes.allSatisfy({ (0x20...0x7E).contains($0) }), bytes.count <= 512 else { return false }
        let code = line.prefix(3)
        if let continuing, continuing != code { return false }
        continuing = bytes[3] == UInt8(ascii: "-") ? code : nil
    }
    return continuing == nil
}
