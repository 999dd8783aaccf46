import Foundation
@testable import MIME
import TestSupport
import Testing

@Suite("NUL bytes in header sections, found line by line in pieces")
struct HeaderScanTests {
    /// The rule as it was first written (a walk back from each NUL over the
    /// whole input in memory): the oracle the streaming scan must agree with.
    static func walkBack(_ bytes: [UInt8], mbox: Bool) -> Bool {
        var previousNUL = -1
        for position in bytes.indices where bytes[position] == 0 {
            defer { previousNUL = position }
            if previousNUL >= 0 && !bytes[previousNUL..<position].contains(10) { continue }
            var lineStart = position
            while lineStart > 0 && bytes[lineStart - 1] != 10 { lineStart -= 1 }
            var inHeader = true
            var previousEnd = lineStart
            while previousEnd > 0 {
                if previousNUL >= 0 && previousEnd <= previousNUL { inHeader = false; break }
                var start = previousEnd - 1
                while start > 0 && bytes[start - 1] != 10 { start -= 1 }
                let length = previousEnd - 1 - start - (previousEnd - 1 > start && bytes[previousEnd - 2] == 13 ? 1 : 0)
                if length == 0 { inHeader = false; break }
                if length >= 2 && bytes[start] == 45 && bytes[start + 1] == 45 { break }
                if mbox && length >= 5 && Array(bytes[start..<(start + 5)]) == Array("From ".utf8) { break }
                previousEnd = start
            }
            if inHeader { return true }
        }
        return false
    }

    /// Lines a mail or mailbox is made of, NULs put in at random.
    static func randomInput(_ random: inout some RandomNumberGenerator, lines: Int) -> [UInt8] {
        let kinds = ["From: a@example.org", "Subject: x", "", "--b", "--", "-", "From x@example.org Sat",
                     "From", "body text", " folded", "From ", "\r"]
        var bytes: [UInt8] = []
        for _ in 0..<lines {
            var line = Array(kinds.randomElement(using: &random)!.utf8)
            if Int.random(in: 0..<6, using: &random) == 0 { line.insert(0, at: Int.random(in: 0...line.count, using: &random)) }
            bytes += line + (Bool.random(using: &random) ? [13, 10] : [10])
        }
        if Bool.random(using: &random) { bytes.removeLast() }
        return bytes
    }

    func verdict(_ body: () throws -> Void) -> Bool {
        do { try body(); return false } catch { return true }
    }

    @Test("in memory, in random pieces and from a file: the same verdict as the walk back, mailbox or not")
    func agreesWithWalkBack() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        let folder = try makePrivateDirectory(prefix: "ms-nul")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for round in 0..<400 {
            let bytes = Self.randomInput(&random, lines: Int.random(in: 1...12, using: &random))
            let mbox = round % 2 == 0
            let expected = Self.walkBack(bytes, mbox: mbox)
            #expect(verdict { try HeaderScan.refuseNUL(in: bytes, mbox: mbox) } == expected, "seed \(seed): \(bytes) mbox \(mbox)")
            var scan = HeaderScan.Lines(mbox: mbox)
            var at = 0
            let pieces = verdict {
                while at < bytes.count {
                    let next = min(bytes.count, at + Int.random(in: 1...7, using: &random))
                    try bytes[at..<next].withUnsafeBytes { try scan.feed($0) }
                    at = next
                }
            }
            #expect(pieces == expected, "seed \(seed): \(bytes) in pieces")
            let path = folder + "/\(round)"
            FileManager.default.createFile(atPath: path, contents: Data(bytes))
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            #expect(verdict { try HeaderScan.refuseNUL(inFile: fd, size: bytes.count, mbox: mbox) } == expected, "seed \(seed): from a file")
        }
    }

    @Test("a file over the 1 MiB piece: a header line cut at the piece's end still counts as one line")
    func acrossPieces() throws {
        let folder = try makePrivateDirectory(prefix: "ms-nul")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let body = Array(("From a@example.org Sat\nFrom: a@example.org\n\n" + String(repeating: "x\0 text\n", count: 100_000)).utf8)
        for shift in [-3, -1, 0, 1, 4] {
            // The next message's header, with a NUL just after the 1 MiB mark.
            let pad = (1 << 20) - body.count - 30 + shift
            var bytes = body + Array(String(repeating: "y", count: max(0, pad)).utf8) + Array("\nFrom b@example.org Sat\nX-A: long".utf8)
            bytes += Array(repeating: UInt8(ascii: "z"), count: 40) + [0] + Array("\n\nbody\n".utf8)
            #expect(Self.walkBack(bytes, mbox: true))
            let path = folder + "/\(shift)"
            FileManager.default.createFile(atPath: path, contents: Data(bytes))
            #expect(throws: MIMEError(.nulInHeader)) { try MIMEMessage.forEachInMbox(contentsOf: path) { _ in } }
            var fine = bytes
            fine[fine.lastIndex(of: 0)!] = UInt8(ascii: "z")
            #expect(!Self.walkBack(fine, mbox: true))
            FileManager.default.createFile(atPath: path, contents: Data(fine))
            var subjects = 0
            try MIMEMessage.forEachInMbox(contentsOf: path) { _ in subjects += 1 }
            #expect(subjects == 2)
        }
    }

    @Test("the one read before parsing, fed in random pieces, finds what each scan finds over the whole input in memory")
    func surveyAgreesWithWholeScans() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        // Bytes that matter to the three signs, and filler.
        let atoms: [[UInt8]] = [[13], [10], [13, 10], [0], Array("=?".utf8), Array("?=".utf8), Array("=?utf-8?q?x".utf8),
                                [32], [9], Array("ab".utf8), Array("Subject: ".utf8)]
        var sawEach = (nul: false, bareCR: false, unbounded: false)
        for round in 0..<3000 {
            var bytes: [UInt8] = []
            // Now and then a field of many open encoded-words, long enough to pass the limit.
            if round % 50 == 0 { bytes += Array("Subject: ".utf8) + Array(String(repeating: "=?a ", count: 6000).utf8) }
            for _ in 0..<Int.random(in: 0...40, using: &random) { bytes += atoms.randomElement(using: &random)! }
            var survey = HeaderScan.Survey()
            var at = 0
            while at < bytes.count {
                let next = min(bytes.count, at + Int.random(in: 1...9, using: &random))
                bytes[at..<next].withUnsafeBytes { survey.feed($0) }
                at = next
            }
            survey.finish()
            let nul = bytes.contains(0)
            let bareCR = HeaderScan.firstBareCR(bytes[...]) != nil
            let unbounded = verdict { try HeaderScan.refuseUnboundedEncodedWords(in: bytes) }
            #expect(survey.hasNUL == nul && survey.hasBareCR == bareCR && (survey.unboundedEncodedWords != nil) == unbounded,
                    "seed \(seed), round \(round): \(bytes.prefix(200))")
            sawEach = (sawEach.nul || nul, sawEach.bareCR || bareCR, sawEach.unbounded || unbounded)
        }
        #expect(sawEach == (true, true, true), "the generator made each sign")
    }

    @Test("a file and the same bytes in memory get the same verdict: bare CRs, NULs and encoded-words at random")
    func fileAndMemoryAgree() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        let folder = try makePrivateDirectory(prefix: "ms-survey")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let atoms: [[UInt8]] = [[13], [10], [13, 10], [0], Array("Subject: x".utf8), Array("From: a@b".utf8), [32],
                                Array("=?a ".utf8), Array("--b".utf8), Array("body".utf8)]
        var refused = 0
        for round in 0..<300 {
            var bytes = Array("From: a@example.org\n".utf8)
            for _ in 0..<Int.random(in: 1...30, using: &random) { bytes += atoms.randomElement(using: &random)! }
            if round % 25 == 0 { bytes += Array(("Subject: " + String(repeating: "=?a ", count: 6000) + "\n").utf8) }
            let path = folder + "/\(round).eml"
            FileManager.default.createFile(atPath: path, contents: Data(bytes))
            let fromMemory = Result { try MIMEMessage.parse(bytes).serialize() }
            let fromFile = Result { try MIMEMessage.parse(contentsOf: path).serialize() }
            switch (fromMemory, fromFile) {
            case (.success(let a), .success(let b)): #expect(a == b, "seed \(seed), round \(round): \(bytes)")
            case (.failure(let a), .failure(let b)): #expect("\(a)" == "\(b)", "seed \(seed), round \(round): \(bytes)"); refused += 1
            default: Issue.record("seed \(seed), round \(round): memory \(fromMemory), file \(fromFile): \(bytes)")
            }
        }
        #expect(refused > 0, "the generator made refused inputs")
    }
}

/// The file checks one at a time, as the tests ask them; the house asks the
/// ``HeaderScan/Survey`` once for all three (``MIMEMessage/Source``).
extension HeaderScan {
    /// True when the first `size` bytes of a regular file hold a bare CR.
    static func hasBareCR(inFile fd: Int32, size: Int) throws -> Bool {
        try survey(ofFile: fd, size: size).hasBareCR
    }

    /// Like ``refuseNUL(in:mbox:)`` for the first `size` bytes of a regular file:
    /// the survey first, and the file placed line by line only when it holds a NUL.
    static func refuseNUL(inFile fd: Int32, size: Int, mbox: Bool = false) throws {
        if try survey(ofFile: fd, size: size).hasNUL { try placeNUL(inFile: fd, size: size, mbox: mbox) }
    }
}
