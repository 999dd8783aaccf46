import Foundation
@testable import MIME
import TestSupport
import Testing

func fixtureMessage(_ name: String) throws -> MIMEMessage {
    try MIMEMessage.parse(contentsOf: Paths.fixtures.appendingPathComponent("messages/\(name)").path)
}

@Suite("Parsing with GMime")
struct ParsingTests {
    @Test("headers are decoded: encoded-words in two charsets, names, groups")
    func decodedHeaders() throws {
        let message = try fixtureMessage("charsets.eml")
        #expect(message.subject == "Grüße aus Köln")
        #expect(message.header("subject") == "Grüße aus Köln")
        #expect(message.headers.first { $0.name == "Subject" }?.rawValue.contains("=?UTF-8?B?") == true)
        #expect(message.addresses(.from) == [MailAddress(name: "Jörg Müller", address: "joerg@example.org")])
        #expect(message.addresses(.to).map(\.address) == ["alice@example.org", "bob@example.org", "carol@example.org"])
        #expect(message.addresses(.to).last?.name == "Carol Álv")
        #expect(message.addresses(.cc).map(\.address) == ["dave@example.org"])
        #expect(message.messageID == "charsets.1@example.org")
        #expect(message.parseIssues.isEmpty)
    }

    @Test("text parts come out as String whatever their charset and transfer encoding")
    func textParts() throws {
        let body = try #require(try fixtureMessage("charsets.eml").body)
        #expect(body.kind == .multipart)
        #expect(body.contentType.is("multipart", "mixed"))
        // The line break before a boundary belongs to the boundary (RFC 2046).
        #expect(body.entity(at: [0])?.text == "Grüße aus Köln, sagt Jörg.")
        #expect(body.entity(at: [1])?.text == "Привет, 世界 — ünïcödé\n")
        let attachment = try #require(body.entity(at: [2]))
        #expect(attachment.text == nil)
        #expect(attachment.filename == "résumé.bin")
        #expect(attachment.disposition == "attachment")
        #expect(attachment.content == [0x00, 0x01, 0x02, 0xFF])
        #expect(body.entity(at: [3]) == nil)
        #expect(body.walk().map(\.path) == [[], [0], [1], [2]])
    }

    @Test("a message read from a pipe parses like one read from a file")
    func fromPipe() throws {
        let bytes = Array(try Data(contentsOf: Paths.fixtures.appendingPathComponent("messages/charsets.eml")))
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let written = bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        #expect(written == bytes.count)
        close(fds[1])
        defer { close(fds[0]) }
        let message = try MIMEMessage.parse(fileDescriptor: fds[0])
        #expect(message.subject == "Grüße aus Köln")
        #expect(message.serialize() == (try MIMEMessage.parse(bytes)).serialize())
    }

    @Test("inputs over the size limit are refused, from memory, file and pipe")
    func sizeLimit() throws {
        let bytes = Array(try Data(contentsOf: Paths.fixtures.appendingPathComponent("messages/charsets.eml")))
        let small = ParseOptions(maxSize: 100)
        #expect(throws: MIMEError(.tooLarge, limit: 100)) { try MIMEMessage.parse(bytes, options: small) }
        #expect(throws: MIMEError(.tooLarge, limit: 100)) {
            try MIMEMessage.parse(contentsOf: Paths.fixtures.appendingPathComponent("messages/charsets.eml").path, options: small)
        }
        #expect(throws: MIMEError.self) { try MIMEMessage.parse(contentsOf: "/nonexistent/message.eml") }
    }

    @Test("parts nested deeper than the limit are refused")
    func depthLimit() throws {
        func nested(_ depth: Int) -> [UInt8] {
            var text = "From: a@example.org\nSubject: deep\nMIME-Version: 1.0\n"
            for level in 0..<depth {
                text += "Content-Type: multipart/mixed; boundary=\"b\(level)\"\n\n--b\(level)\n"
            }
            text += "Content-Type: text/plain\n\ninnermost\n"
            for level in (0..<depth).reversed() { text += "--b\(level)--\n" }
            return Array(text.utf8)
        }
        let options = ParseOptions(maxDepth: 10)
        let fine = try MIMEMessage.parse(nested(9), options: options)
        #expect(fine.body?.depth == 10)
        #expect(fine.body?.entity(at: Array(repeating: 0, count: 9))?.text == "innermost")
        #expect(throws: MIMEError(.tooDeep, limit: 10)) { try MIMEMessage.parse(nested(10), options: options) }
        // Far beyond: GMime's own nesting guard holds and we still refuse.
        #expect(throws: MIMEError.self) { try MIMEMessage.parse(nested(5000), options: options) }
    }

    @Test("too many parts or header fields are refused with the limit named")
    func partAndHeaderLimits() throws {
        func parts(_ count: Int) -> [UInt8] {
            var text = "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n"
            for index in 0..<count { text += "--b\nContent-Type: text/plain\n\npart \(index)\n" }
            return Array((text + "--b--\n").utf8)
        }
        let options = ParseOptions(maxParts: 50, maxHeaders: 20)
        #expect(try MIMEMessage.parse(parts(49), options: options).body?.children.count == 49)
        #expect(throws: MIMEError(.tooManyParts, limit: 50)) { try MIMEMessage.parse(parts(50), options: options) }
        let fields = (0..<21).map { "X-Field-\($0): v\n" }.joined()
        #expect(throws: MIMEError(.tooManyHeaders, limit: 20)) {
            try MIMEMessage.parse(Array(("From: a@example.org\n" + fields + "\nbody\n").utf8), options: options)
        }
        let partFields = "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\n"
            + fields + "Content-Type: text/plain\n\nx\n--b--\n"
        #expect(throws: MIMEError(.tooManyHeaders, limit: 20)) { try MIMEMessage.parse(Array(partFields.utf8), options: options) }
        #expect(MIMEError(.tooManyParts, limit: 50).description == "message has more than the limit of 50 MIME parts")
        // Found by fuzzing: a NUL in a header cut the field short and lost the end of the header section.
        let nul = Array("From: a@example.org\nX-A: b\u{0}c\n\nbody\u{0} may hold it\n".utf8)
        #expect(throws: MIMEError(.nulInHeader)) { try MIMEMessage.parse(nul) }
        let partNUL = Array("From: a@example.org\nContent-Type: multipart/mixed; boundary=b\n\n--b\nX-A: \u{0}\n\nx\n--b--\n".utf8)
        #expect(throws: MIMEError(.nulInHeader)) { try MIMEMessage.parse(partNUL) }
        #expect(try MIMEMessage.parse(Array("From: a@example.org\n\nbody \u{0} text\n".utf8)).body != nil, "NUL in a body is GMime's to handle")
    }

    @Test("error codes match in catch clauses, one code never matches another, and a code added later still describes itself")
    func errorCodesMatch() throws {
        let inputs: [(MIMEError.Code, [UInt8], ParseOptions)] = [
            (.nulInHeader, Array("From: a@example.org\nX-A: \u{0}\n\nx\n".utf8), .standard),
            (.tooLarge, Array(("From: a@example.org\n\n" + String(repeating: "x", count: 200)).utf8), ParseOptions(maxSize: 100)),
        ]
        for (code, bytes, options) in inputs {
            var caught: MIMEError.Code?
            do { _ = try MIMEMessage.parse(bytes, options: options) } catch MIMEError.Code.nulInHeader {
                caught = .nulInHeader
            } catch MIMEError.Code.tooLarge {
                caught = .tooLarge
            } catch {
                Issue.record("unexpected \(error)")
            }
            #expect(caught == code)
        }
        #expect(!(MIMEError.Code.notParsable ~= MIMEError(.nulInHeader)))
        #expect(!(MIMEError.Code.notParsable ~= PlainError()))
        #expect(MIMEError(.tooLarge, limit: 7).limit == 7)
        #expect(MIMEError(.io, detail: "disk full").description == "I/O error: disk full")
        #expect(MIMEError(MIMEError.Code(rawValue: "later"), detail: "why").description == "MIME error later: why")
    }

    private struct PlainError: Error {}

    @Test("broken input is parsed with its problems reported, not crashed on")
    func problemsReported() throws {
        let broken = Array("""
            From: a@example.org
            From: b@example.org
            Subject: =?UTF-8?B?broken
            Content-Type: multipart/mixed

            no boundary here
            """.utf8)
        let message = try MIMEMessage.parse(broken)
        let kinds = message.parseIssues.map(\.kind)
        #expect(kinds.contains(.multipartWithoutBoundary))
        #expect(message.parseIssues.contains { $0.isCritical })
        #expect(!message.serialize().isEmpty)
        #expect(throws: MIMEError.self) { try MIMEMessage.parse([]) }
    }
}

@Suite("Parser lifetime")
struct ParserLifetimeTests {
    @Test("editing headers after the parse reports nothing and touches no freed collector")
    func editsAfterParse() throws {
        let message = try MIMEMessage.parse(Array("From: a@example.org\nSubject: x\n\nbody\n".utf8))
        for round in 0..<50 {
            message.setHeader("X-Note", "=?utf-8?q?bad =?= \(round)")
            message.setSubject("=?utf-8?b?broken")
        }
        #expect(message.parseIssues.isEmpty)
        let second = try MIMEMessage.parse(Array("From: a@example.org\nFrom: b@example.org\n\nbody\n".utf8))
        #expect(second.parseIssues.map(\.kind) == [.conflictingHeader])
        #expect(message.header("X-Note") != nil)
    }

    @Test("a parsed file is read at once: changing the file later changes nothing")
    func notLazy() throws {
        let folder = try makePrivateDirectory(prefix: "ms-mime")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/m.eml"
        let original = try Data(contentsOf: Paths.fixtures.appendingPathComponent("messages/charsets.eml"))
        try original.write(to: URL(fileURLWithPath: path))
        let message = try MIMEMessage.parse(contentsOf: path)
        let before = message.serialize()
        try Data("truncated".utf8).write(to: URL(fileURLWithPath: path))
        #expect(message.serialize() == before)
        #expect(message.body?.entity(at: [2])?.content == [0x00, 0x01, 0x02, 0xFF])
    }
}

@Suite("Mailboxes")
struct MboxTests {
    let mbox = Array("""
        From alice@example.org Sat Nov 21 10:00:00 2026
        From: alice@example.org
        Subject: one

        body one with a NUL \u{0} in it
        From bob@example.org Sat Nov 21 10:00:01 2026
        From: bob@example.org
        Subject: two

        body two
        From carol@example.org Sat Nov 21 10:00:02 2026
        From: carol@example.org
        Subject: three

        body three

        """.utf8)

    func write(_ bytes: [UInt8]) throws -> String {
        let folder = try makePrivateDirectory(prefix: "ms-mbox")
        let path = folder + "/mail.mbox"
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    @Test("an mbox read from a file as it is parsed gives what the same bytes in memory give; limits and NULs alike")
    func fromFile() throws {
        let path = try write(mbox)
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        var fromFile: [String] = [], fromMemory: [String] = []
        try MIMEMessage.forEachInMbox(contentsOf: path) { fromFile.append($0.subject ?? "") }
        try MIMEMessage.forEachInMbox(mbox) { fromMemory.append($0.subject ?? "") }
        #expect(fromFile == ["one", "two", "three"])
        #expect(fromFile == fromMemory)
        #expect(throws: MIMEError(.tooLarge, limit: 100)) {
            try MIMEMessage.forEachInMbox(contentsOf: path, options: ParseOptions(maxSize: 100)) { _ in }
        }
        // A NUL in a header section is refused, from a file as from memory.
        var broken = mbox
        broken.insert(0, at: broken.firstRange(of: Array("Subject: two".utf8))!.lowerBound + 9)
        let brokenPath = try write(broken)
        defer { try? FileManager.default.removeItem(atPath: (brokenPath as NSString).deletingLastPathComponent) }
        #expect(throws: MIMEError(.nulInHeader)) { try MIMEMessage.forEachInMbox(contentsOf: brokenPath) { _ in } }
        #expect(throws: MIMEError(.nulInHeader)) { try MIMEMessage.forEachInMbox(broken) { _ in } }
        #expect(throws: MIMEError.self) { try MIMEMessage.forEachInMbox(contentsOf: "/nonexistent/mbox") { _ in } }
    }
}

/// Issue 21: a bare CR is read one way by every path, as the line end that
/// Python's `email` and most readers take it for, not refused by one command
/// and passed by another.
@Suite("Bare CR line ends")
struct BareCRTests {
    /// A mail of random lines, each ended by CR, LF or CR LF at random; and the same with LF only.
    static func mail(_ random: inout SeededRandom, ends: [String]) -> (mixed: [UInt8], plain: [UInt8]) {
        let lines = ["From: Alice <alice@example.org>", "To: Bob <bob@example.org>, dora@example.net",
                     "Subject: plans \(Int.random(in: 1...999, using: &random))", "MIME-Version: 1.0",
                     "Content-Type: multipart/mixed; boundary=b", "", "--b", "Content-Type: text/plain; charset=utf-8", "",
                     "hello", "second line", "--b", "Content-Type: text/plain", "Content-Transfer-Encoding: base64", "",
                     Data("inner text\n".utf8).base64EncodedString(), "--b--"]
        var mixed = "", plain = ""
        var last = ""
        for line in lines {
            // A CR ending one line and an LF ending the empty next are one CR LF, one line end: not that.
            let choices = line.isEmpty && last == "\r" ? ends.filter { !$0.hasPrefix("\n") } : ends
            last = choices.randomElement(using: &random)!
            mixed += line + last
            plain += line + "\n"
        }
        return (Array(mixed.utf8), Array(plain.utf8))
    }

    /// What a reader sees of `message`: its fields and each leaf's text.
    static func seen(_ message: MIMEMessage) -> [String] {
        // GMime keeps a CR LF inside a body as it came; the lines are what is compared.
        (message.headers.map { "\($0.name): \($0.value)" }
            + (message.body?.walk().compactMap { $0.entity.kind == .leaf ? $0.entity.text : nil } ?? []))
            .map { $0.replacingOccurrences(of: "\r\n", with: "\n") }
    }

    @Test("a bare CR ends a line, read from memory, a file or a pipe: the same message as with LF (random line ends)")
    func readAsLineEnds() throws {
        var random = SeededRandom(seed: 2026_1125_13)
        let folder = try makePrivateDirectory(prefix: "ms-barecr")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for round in 0..<30 {
            let ends = [["\r"], ["\r", "\n"], ["\r", "\r\n"], ["\r", "\n", "\r\n"]][round % 4]
            let (mixed, plain) = Self.mail(&random, ends: ends)
            let expected = Self.seen(try MIMEMessage.parse(plain))
            let fromMemory = Self.seen(try MIMEMessage.parse(mixed))
            #expect(fromMemory == expected, "round \(round) from memory: \(fromMemory) \(expected) \(String(decoding: mixed, as: UTF8.self).debugDescription)")
            let path = folder + "/\(round).eml"
            FileManager.default.createFile(atPath: path, contents: Data(mixed))
            #expect(Self.seen(try MIMEMessage.parse(contentsOf: path)) == expected, "round \(round) from a file")
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            _ = mixed.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
            close(fds[1])
            #expect(Self.seen(try MIMEMessage.parse(fileDescriptor: fds[0])) == expected, "round \(round) from a pipe")
            close(fds[0])
            let parsed = try MIMEMessage.parse(mixed)
            #expect(parsed.addresses(.to).map(\.address) == ["bob@example.org", "dora@example.net"], "round \(round)")
        }
    }

    @Test("`=` then CRs then LF is one soft line break, as GMime and RFC 2045 read it; a bare CR elsewhere is still a line end")
    func softBreakBeforeCRs() throws {
        var random = SeededRandom(seed: 2026_1125_23)
        for round in 0..<40 {
            // A word cut by a soft line break written `=`, spaces or tabs, one to four CRs, LF.
            let pad = String(repeating: " ", count: Int.random(in: 0...1, using: &random)) + (Bool.random(using: &random) ? "\t" : "")
            let crs = String(repeating: "\r", count: Int.random(in: 1...4, using: &random))
            let cut = Int.random(in: 1...6, using: &random)
            let word = "confidential"
            let body = String(word.prefix(cut)) + "=" + pad + crs + "\n" + String(word.dropFirst(cut)) + "\rnext\n"
            let mail = "From: a@example.org\nSubject: s\nContent-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n" + body
            let normalised = String(decoding: HeaderScan.bareCRAsLineEnds(Array(mail.utf8)), as: UTF8.self)
            #expect(!normalised.contains("\r"), "round \(round)")
            #expect(normalised.hasSuffix(String(word.prefix(cut)) + "=" + pad + "\n" + String(word.dropFirst(cut)) + "\nnext\n"),
                    "round \(round): \(normalised.debugDescription)")
            if pad.isEmpty {
                let text = try #require(try MIMEMessage.parse(Array(mail.utf8)).body?.text)
                #expect(text.hasPrefix(word + "\nnext"), "round \(round): \(text.debugDescription)")
            }
        }
        // Without the `=`, CR CR LF is a line end and an empty line, as Python reads it.
        let plain = Array("Subject: s\n\nab\r\r\ncd\n".utf8)
        #expect(HeaderScan.bareCRAsLineEnds(plain) == Array("Subject: s\n\nab\n\ncd\n".utf8))
    }

    @Test("a file is judged in pieces: a CR LF across a piece's end is no bare CR, a CR there before other bytes is one")
    func pieceBoundaries() throws {
        let folder = try makePrivateDirectory(prefix: "ms-barecr")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let head = Array("From: a@example.org\nTo: b@example.org\nSubject: s\nContent-Type: text/plain\n\n".utf8)
        for (index, tail) in [[UInt8]([13, 10]), [13, 65], [13]].enumerated() {
            // The CR is the last byte of the first 1 MiB piece.
            let filler = [UInt8](repeating: 120, count: (1 << 20) - 1 - head.count)
            let bytes = head + filler + tail + Array("end\n".utf8)
            let path = folder + "/\(index).eml"
            FileManager.default.createFile(atPath: path, contents: Data(bytes))
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            #expect(try HeaderScan.hasBareCR(inFile: fd, size: bytes.count) == (index != 0), "case \(index)")
            let text = try #require(try MIMEMessage.parse(contentsOf: path).body?.text)
            // No bare CR: the CR LF stays as it came. A bare CR: a line end.
            #expect(Array(text.utf8).suffix(6) == Array([index == 0 ? "\r\nend\n" : index == 1 ? "\nAend\n" : "x\nend\n"][0].utf8).suffix(6),
                    "case \(index): \(text.suffix(12).debugDescription)")
            #expect(try MIMEMessage.parse(contentsOf: path).body?.text == MIMEMessage.parse(bytes).body?.text)
        }
        // A CR as the very last byte of a file.
        let last = head + Array("x\r".utf8)
        let path = folder + "/last.eml"
        FileManager.default.createFile(atPath: path, contents: Data(last))
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        #expect(try HeaderScan.hasBareCR(inFile: fd, size: last.count))
    }
}
