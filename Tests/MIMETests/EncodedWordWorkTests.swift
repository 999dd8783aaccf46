import Foundation
@testable import MIME
import TestSupport
import Testing

/// GMime looks for each `=?`'s end up to the end of its field: unclosed
/// encoded-words cost it quadratic time. The scan before parsing counts
/// that work and refuses what passes the limit; ordinary mail is never refused.
@Suite("Unclosed encoded-words: counted before GMime decodes them")
struct EncodedWordWorkTests {
    /// A Subject of `count` encoded-words, each unclosed or closed, folded one per line.
    static func mail(words count: Int, closed: Bool, body: String = "text\n") -> [UInt8] {
        let words = (0..<count).map { "=?utf-8?q?w\($0)" + (closed ? "?=" : "") }.joined(separator: "\n ")
        return Array("From: a@example.org\nTo: b@example.org\nSubject: \(words)\n\n\(body)".utf8)
    }

    static func work(_ bytes: [UInt8]) throws -> Int {
        var count = HeaderScan.EncodedWordWork()
        try bytes.withUnsafeBytes { try count.feed($0) }
        return count.work
    }

    @Test("the hostile class (40,000 unclosed words in a Subject) is refused before GMime sees it, through every way in")
    func hostileRefused() throws {
        let bytes = Self.mail(words: 40_000, closed: false)
        #expect(throws: MIMEError(.encodedWordsUnbounded, limit: HeaderScan.encodedWordWorkLimit)) { try MIMEMessage.parse(bytes) }
        #expect(throws: MIMEError(.encodedWordsUnbounded, limit: HeaderScan.encodedWordWorkLimit)) { try MIMEEntity.parse(bytes) }
        #expect(throws: MIMEError(.encodedWordsUnbounded, limit: HeaderScan.encodedWordWorkLimit)) { try MIMEMessage.parseMbox(Array("From x\n".utf8) + bytes) }
        let folder = try makePrivateDirectory(prefix: "ms-ew")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/m.eml"))
        #expect(throws: MIMEError(.encodedWordsUnbounded, limit: HeaderScan.encodedWordWorkLimit)) {
            try MIMEMessage.parse(contentsOf: folder + "/m.eml")
        }
        #expect(MIMEError(.encodedWordsUnbounded).description.contains("encoded-words"))
    }

    @Test("the count is linear in the words of each field: an unclosed word costs the rest of its field, a closed one nothing after its end")
    func counted() throws {
        let small = try Self.work(Self.mail(words: 100, closed: false))
        let double = try Self.work(Self.mail(words: 200, closed: false))
        #expect(small > 0 && double > 3 * small, "unclosed: \(small), \(double): the count must show the quadratic cost")
        #expect(try Self.work(Self.mail(words: 20_000, closed: true)) == 20_000 * ("utf-8?q?w".count + "?=".count) + (0..<20_000).map { "\($0)".count }.reduce(0, +),
                "closed words count only their own bytes")
        // A new field ends what the last one left open.
        let two = Array("Subject: =?utf-8?q?abc\nX-A: plain text goes on\n\nbody\n".utf8)
        #expect(try Self.work(two) == "utf-8?q?abc\n".count)
    }

    @Test("ordinary and large friendly mail is never refused (random headers of closed encoded-words, bodies of base64, QP, binary)")
    func friendlyPasses() throws {
        var random = SeededRandom(seed: 0xE17C0DED)
        for _ in 0..<40 {
            let count = Int.random(in: 0...3_000, using: &random)
            var body = ""
            switch Int.random(in: 0..<3, using: &random) {
            case 0: body = Data((0..<200_000).map { _ in UInt8.random(in: 0...255, using: &random) }).base64EncodedString(options: .lineLength76Characters)
            case 1: body = String(repeating: "caf=C3=A9 =3D=3F not a word =3F=3D\n", count: 5_000)
            default: body = String(repeating: "a?=b=?c d =?x?q?y?= ", count: 20_000)
            }
            let bytes = Self.mail(words: count, closed: true, body: body)
            #expect(throws: Never.self) { _ = try MIMEMessage.parse(bytes) }
        }
        // Binary bytes in a body: "=?" about every 64 KB, its field ended by the next line.
        let binary = Array("From: a@example.org\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: binary\n\n".utf8)
            + (0..<4_000_000).map { _ in UInt8.random(in: 1...255, using: &random) }  // no NUL: a line starting "--" would be a header section
        #expect(throws: Never.self) { _ = try MIMEMessage.parse(binary) }
    }
}
