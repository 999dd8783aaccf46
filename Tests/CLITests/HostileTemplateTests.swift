import Foundation
import Synchronization
import TestSupport
import Testing

/// Named pipes in place of local files an attacker would name (`~/.ssh/id_ed25519`,
/// another path): opening one for reading blocks until a writer comes, so a
/// thread that keeps trying to open each for writing (which succeeds only while
/// somebody reads) sees every attempt to read it, hands over `content`, and
/// counts it. Nothing is missed, however the file is opened.
final class ReadWatch: Sendable {
    let paths: [String]
    let content: String
    private let opened = Mutex<[String]>([])
    private let running = Mutex(true)

    init(_ paths: [String], content: String) throws {
        self.paths = paths
        self.content = content
        for path in paths {
            mkdir((path as NSString).deletingLastPathComponent, 0o700)
            guard mkfifo(path, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
        Thread.detachNewThread { [self] in
            while running.withLock({ $0 }) {
                for path in paths {
                    let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                    guard fd >= 0 else { continue }  // ENXIO: nobody reads it
                    opened.withLock { $0.append(path) }
                    _ = content.withCString { write(fd, $0, strlen($0)) }
                    close(fd)
                }
                usleep(10_000)
            }
        }
    }

    /// Every path opened for reading so far.
    var reads: [String] { opened.withLock { $0 } }

    func stop() { running.withLock { $0 = false } }
}

/// Received mail that tries to steer a reply or a forward: line breaks in
/// every encoding a Subject, a display name or a file name can carry, controls,
/// header field names inside values, commas and addresses in names, malformed
/// encoded-words. Built from a seed.
struct HostileOriginal {
    let raw: String
    let attachment: [UInt8]
    let about: String

    static let breaks = ["\n", "\r\n", "\r", "\u{2028}", "\u{2029}", "\u{85}", "\u{0B}", "\u{0C}", "\u{1B}[2K\r", "\u{07}\n"]

    static func injections(_ canary: String) -> [String] {
        ["Attach: \(canary)", "Attach: ~/.ssh/id_ed25519", "Bcc: eve@example.net", "To: mallory@example.net",
         "Cc: trudy@example.net", "Attached: 1", "Subject: hijacked", "attach:\(canary)", " Bcc: eve@example.net"]
    }

    /// A value holding one to three field lines after a word, separated by line breaks.
    static func payload(_ word: String, canary: String, _ random: inout SeededRandom) -> String {
        var text = word
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            text += breaks.randomElement(using: &random)! + injections(canary).randomElement(using: &random)!
        }
        return text
    }

    static func qEncoded(_ text: String) -> String {
        Array(text.utf8).map { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                ? String(UnicodeScalar(byte)) : byte == 0x20 ? "_" : String(format: "=%02X", byte)
        }.joined()
    }

    static func percentEncoded(_ text: String) -> String {
        Array(text.utf8).map { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E
                ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }.joined()
    }

    /// `text` as a header value, in one of the encodings a mail may use; the
    /// name of the encoding.
    static func encoded(_ text: String, _ random: inout SeededRandom) -> (String, String) {
        let raw = !text.contains("\n") && !text.contains("\r")
        switch Int.random(in: 0..<(raw ? 7 : 6), using: &random) {
        case 0: return ("=?utf-8?q?\(qEncoded(text))?=", "RFC 2047 Q")
        case 1: return ("=?utf-8?b?\(Data(text.utf8).base64EncodedString())?=", "RFC 2047 B")
        case 2: return ("=?UTF-8?Q?\(qEncoded(text))", "malformed: unterminated encoded-word")
        case 3: return ("=?utf-8?q?\(qEncoded(text))?=X", "malformed: encoded-word glued to text")
        case 4:
            // The break cut in two encoded-words (CR in one, LF in the next).
            let half = text.utf8.count / 2
            let bytes = Array(text.utf8)
            return ("=?utf-8?q?\(qEncoded(String(decoding: bytes[..<half], as: UTF8.self)))?= "
                    + "=?utf-8?q?\(qEncoded(String(decoding: bytes[half...], as: UTF8.self)))?=", "RFC 2047, split")
        case 5: return ("=?utf-8?q?\(qEncoded(text).replacingOccurrences(of: "=0A", with: "=0D=0A"))?=", "RFC 2047, encoded CRLF")
        default: return (text, "raw 8-bit")
        }
    }

    init(seed: UInt64, canary: String) {
        var random = SeededRandom(seed: seed)
        let (subject, subjectHow) = Self.encoded(Self.payload("Quarterly numbers", canary: canary, &random), &random)
        let name: String, nameHow: String
        switch Int.random(in: 0..<5, using: &random) {
        case 0: name = "\"Dave, eve@example.net\""; nameHow = "quoted comma and address"
        case 1: name = "=?utf-8?q?Dave=2C_eve=40example=2Enet?="; nameHow = "encoded comma and address"
        case 2: name = "=?utf-8?q?Dave_=3Ceve=40example=2Enet=3E=2C_x?="; nameHow = "encoded angle address and comma"
        case 3: name = "=?utf-8?q?Dave=0ABcc:_eve@example.net=0AX"; nameHow = "malformed encoded-word with a Bcc line"
        default:
            let text = Self.payload("Dave", canary: canary, &random)
            name = Self.encoded(text, &random).0; nameHow = "encoded breaks"
        }
        let fileText = Self.payload("report", canary: canary, &random) + ".pdf"
        let fileChoices: [(String, String)] = [
            ("filename*=utf-8''\(Self.percentEncoded(fileText))", "RFC 2231"),
            ("filename*0*=utf-8''\(Self.percentEncoded(String(fileText.prefix(5))));\n filename*1*=\(Self.percentEncoded(String(fileText.dropFirst(5))))",
             "RFC 2231 continued"),
            ("filename=\"=?utf-8?b?\(Data(fileText.utf8).base64EncodedString())?=\"", "RFC 2047 in a file name"),
            ("filename=\"\(canary)\"", "a local path as the file name"),
            ("filename=\"report\u{2028}Attach: \(canary)\u{85}Bcc: eve@example.net.pdf\"", "raw 8-bit U+2028, U+0085"),
        ]
        let (file, fileHow) = fileChoices.randomElement(using: &random)!
        attachment = (0..<64).map { _ in UInt8.random(in: 0...255, using: &random) }
        about = "seed \(seed): subject \(subjectHow), name \(nameHow), file name \(fileHow)"
        raw = """
            From: \(name) <dave@example.net>
            To: Alice <alice@example.org>
            Subject: \(subject)
            Message-ID: <hostile.\(seed)@example.net>
            Date: Mon, 23 Nov 2026 09:00:00 +0000
            MIME-Version: 1.0
            Content-Type: multipart/mixed; boundary="b-\(seed)"

            --b-\(seed)
            Content-Type: text/plain; charset=utf-8

            The numbers are attached.
            --b-\(seed)
            Content-Type: application/pdf
            Content-Disposition: attachment; \(file)
            Content-Transfer-Encoding: base64

            \(Data(attachment).base64EncodedString())
            --b-\(seed)--

            """
    }
}

/// The attachments of a mail as a reader sees them (python3's email package): file name and bytes.
func attachments(of data: String) throws -> [(name: String, bytes: [UInt8])] {
    let script = """
        import base64, email, json, sys
        from email import policy
        message = email.message_from_bytes(sys.stdin.buffer.read(), policy=policy.default)
        found = []
        for part in message.walk():
            if part.is_multipart():
                continue
            if part.get_content_disposition() == "attachment" or part.get_filename():
                found.append([part.get_filename() or "", base64.b64encode(part.get_payload(decode=True) or b"").decode()])
        print(json.dumps(found))
        """
    let result = try run("python3", ["-c", script], input: Array(data.replacingOccurrences(of: "\n", with: "\r\n").utf8))
    let list = (try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [[String]]) ?? []
    return list.map { ($0[0], Array(Data(base64Encoded: $0[1]) ?? Data())) }
}

@Suite("reply, forward and drafts edit: a received mail never steers what is sent", .serialized)
struct HostileTemplateTests {
    enum Way: CaseIterable { case reply, forward, draftReply, draftForward }

    @Test("generated hostile originals: the sent mail has exactly the intended recipients and attachments, the plan is printed before --send sends, no local file is ever read; else one refusal line and nothing sent")
    func hostileOriginals() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let canary = world.folder + "/secret-key"
        let secret = "CANARY-" + UUID().uuidString
        let watch = try ReadWatch([canary, world.folder + "/.ssh/id_ed25519"], content: secret)
        defer { watch.stop() }
        let templates = world.folder + "/templates"
        mkdir(templates, 0o700)
        let editor = world.folder + "/editor.sh"
        // The person types one line of text and saves; the template as given is kept for the checks.
        try #"""
            #!/bin/sh
            n=$(ls "$KEEP" | wc -l); cp "$1" "$KEEP/t$n"
            awk 'BEGIN { d = 0 } { print } /^$/ && !d { print "Thanks, noted."; d = 1 }' "$1" > "$1.new"
            cat "$1.new" > "$1"; rm -f "$1.new"
            """#.write(toFile: editor, atomically: true, encoding: .utf8)
        chmod(editor, 0o700)
        var environment = world.environment
        environment["EDITOR"] = editor
        environment["KEEP"] = templates

        let base = UInt64(Date().timeIntervalSince1970) & 0xFFFF_FFFF
        var sent = 0
        let count = 16
        for index in 0..<count {
            let seed = base &+ UInt64(index)
            let original = HostileOriginal(seed: seed, canary: canary)
            let way = Way.allCases[index % Way.allCases.count]
            let about = "\(way), \(original.about)"
            let path = world.folder + "/original-\(index).eml"
            try original.raw.write(toFile: path, atomically: true, encoding: .utf8)
            let before = world.server.transactions.count
            let queuedBefore = try world.outbox().count
            let keptBefore = try FileManager.default.contentsOfDirectory(atPath: templates).count

            var arguments: [String]
            switch way {
            case .reply: arguments = ["reply", path, "--send"]
            case .forward: arguments = ["forward", path, "--to", "frank@example.net", "--send"]
            case .draftReply, .draftForward:
                let first = way == .draftReply ? ["reply", path] : ["forward", path, "--to", "frank@example.net"]
                let saved = try world.ms(first + ["--no-edit", "--save-draft"])
                if saved.status != 0 {
                    #expect(saved.status == 65, "\(about): \(saved.status) \(saved.errors)")
                    expectOneLine(saved)
                    continue
                }
                let id = try #require(saved.output.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
                arguments = ["drafts", "edit", id, "--send"]
            }
            let (result, terminal) = try runOnTerminal(Paths.mailsecExecutable.path, arguments + ["--config", world.config],
                                                       environment: environment)
            #expect(watch.reads.isEmpty, "\(about): a local file was read: \(watch.reads)")
            let taken = Array(world.server.transactions.dropFirst(before))
            for transaction in taken { #expect(!transaction.data.contains(secret), "\(about): a local file was sent") }
            guard result.status == 0 else {
                // A refusal: one line, before anything is queued or sent.
                #expect(result.status == 65, "\(about): \(result.status) \(result.errors) \(terminal)")
                expectOneLine(result)
                let queuedNow = try world.outbox().count
                #expect(taken.isEmpty && queuedNow == queuedBefore, "\(about): refused, yet something went")
                continue
            }
            sent += 1
            let forward = way == .forward || way == .draftForward
            let intended: Set<String> = forward ? ["<frank@example.net>"] : ["<dave@example.net>"]
            #expect(Set(taken.flatMap(\.recipients)) == intended && taken.count == 1,
                    "\(about): sent to \(taken.map(\.recipients))")
            for transaction in taken {
                let attached = try attachments(of: transaction.data)
                #expect(attached.count == (forward ? 1 : 0), "\(about): attachments \(attached.map(\.name))")
                for (name, bytes) in attached {
                    #expect(bytes == original.attachment, "\(about): another file attached as \(name)")
                    #expect(!name.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" },
                            "\(about): a line break in the file name \(name.debugDescription)")
                }
                #expect(header("Bcc", in: transaction.data) == nil && header("Cc", in: transaction.data) == nil, "\(about)")
            }
            // The plan came before the send, naming every recipient and attachment.
            let output = result.output
            let plan = output.range(of: forward ? "copy: postcard to frank@example.net" : "copy: postcard to dave@example.net")
            let done = output.range(of: "sent: 1 copy queued")
            #expect(plan != nil && done != nil && plan!.lowerBound < done!.lowerBound, "\(about): \(output)")
            if forward { #expect(output.contains("attachments: ") && output.contains("(64 bytes)"), "\(about): \(output)") }
            // The template's header block: the known fields only, no Attach line, Cc and Bcc empty.
            let kept = try FileManager.default.contentsOfDirectory(atPath: templates).count
            #expect(kept == keptBefore + 1, "\(about): the editor ran \(kept - keptBefore) times")
            let template = try String(contentsOfFile: templates + "/t\(keptBefore)", encoding: .utf8)
            let head = template.components(separatedBy: "\n\n")[0].components(separatedBy: "\n")
            for line in head {
                #expect(["To: ", "Cc: ", "Bcc: ", "Subject: ", "Attached: "].contains { line.hasPrefix($0) }, "\(about): template line \(line.debugDescription)")
                #expect(!line.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" },
                        "\(about): template line \(line.debugDescription)")
            }
            #expect(head.filter { $0.hasPrefix("Cc: ") } == ["Cc: "] && head.filter { $0.hasPrefix("Bcc: ") } == ["Bcc: "], "\(about): \(head)")
            #expect(head.filter { $0.hasPrefix("Attached: ") }.count == (forward ? 1 : 0), "\(about): \(head)")
        }
        #expect(sent >= count / 2, "only \(sent) of \(count) hostile originals could be answered at all (seed base \(base))")
        #expect(watch.reads.isEmpty)
    }

    @Test("a display name with a comma and an address, and a Subject with Attach and Bcc lines, written into the template: quoted, on one line; the name stays a name")
    func knownAttack() throws {
        let world = try ComposeWorld()
        defer { world.close() }
        let canary = world.folder + "/.ssh/id_ed25519"
        let watch = try ReadWatch([canary], content: "CANARY")
        defer { watch.stop() }
        let path = world.folder + "/known.eml"
        try """
            From: =?utf-8?q?Dave=2C_eve=40example=2Enet?= <dave@example.net>
            To: alice@example.org
            Subject: =?utf-8?q?Quarterly_numbers=0AAttach:_~/.ssh/id=5Fed25519=0ABcc:_eve@example.net?=
            Message-ID: <known@example.net>

            Numbers.

            """.write(toFile: path, atomically: true, encoding: .utf8)
        let saved = try world.ms(["reply", path, "--no-edit", "--save-draft"])
        #expect(saved.status == 0, "\(saved.errors)")
        let id = try #require(saved.output.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        let show = try world.ms(["drafts", "show", id])
        let lines = show.output.components(separatedBy: "\n")
        #expect(lines.contains("To: \"Dave, eve@example.net\" <dave@example.net>"), "\(show.output)")
        #expect(lines.contains("Subject: Re: Quarterly numbers Attach: ~/.ssh/id_ed25519 Bcc: eve@example.net"), "\(show.output)")
        #expect(lines.contains("Bcc: ") && !lines.contains { $0.hasPrefix("Attach") }, "\(show.output)")
        var environment = world.environment
        environment["EDITOR"] = "true"
        let (result, terminal) = try runOnTerminal(Paths.mailsecExecutable.path, ["drafts", "edit", id, "--send", "--config", world.config],
                                                   environment: environment)
        #expect(result.status == 0, "\(result.errors) \(terminal)")
        #expect(world.server.transactions.map(\.recipients) == [["<dave@example.net>"]])
        #expect(watch.reads.isEmpty)
    }
}
