import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Every reading of a written postcard this suite checks for span text: the
/// views ``everythingVisible(_:)`` gives (GMime's decoding), and every
/// reading of the readings engine with every rendering (HTML references,
/// CSS escapes, data: URLs, flowed and folded lines …).
func everyReading(_ bytes: [UInt8]) throws -> [String] {
    var seen = try everythingVisible(bytes)
    let message = try MIMEMessage.parse(bytes)
    MessageReadings.readAll(message) { _, content in
        switch content {
        case .text(let text, let media):
            seen += Redactor.standard.renderings(text, type: media.type, subtype: media.subtype, parameters: media.parameters)
        case .pieces(_, let feed):
            var all: [UInt8] = []
            _ = feed { all += $0 }
            seen.append(String(decoding: all, as: UTF8.self))
        }
    }
    return seen
}

/// What became of a hostile mail: censored (and no secret in any reading
/// of the postcard), or refused with a data error.
enum Outcome: Equatable { case censored, refused }

func censorOrRefuse(_ mail: String, secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Outcome {
    let message = try MIMEMessage.parse(Array(mail.utf8))
    let postcard: MIMEMessage
    do { postcard = try Postcard.censored(message) } catch let error as PipelineError {
        switch error.code {
        case .unreadable, .unredactable: return .refused
        default: throw error
        }
    } catch is PolicyError {
        return .refused   // markers that do not pair up
    }
    let written = postcard.serialize()
    for reading in try everyReading(written) {
        for secret in secrets where reading.lowercased().contains(secret) {
            Issue.record("\(secret) left in a reading of the postcard:\n\(mail)", sourceLocation: sourceLocation)
        }
    }
    #expect(Redactor.standard.remainingMarker(in: try MIMEMessage.parse(written)) == nil, sourceLocation: sourceLocation)
    return .censored
}

/// Hostile variations of each class of issue 12 A.
struct HostileGenerator {
    var random: SeededRandom
    var secrets: [String] = []

    init(seed: UInt64) { random = SeededRandom(state: seed) }

    mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }
    mutating func flip() -> Bool { Bool.random(using: &random) }

    mutating func secret() -> String {
        let word = "zq" + String((0..<Int.random(in: 6...10, using: &random)).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
        secrets.append(word)
        return word
    }

    mutating func span() -> String {
        pick(["[[private]]", "[[PRIVATE]]"]) + secret() + pick(["", " ", " and "]) + secret() + "[[/private]]"
    }

    static func percent(_ bytes: [UInt8], all: Bool) -> String {
        bytes.map { byte in
            let plain = byte < 0x80 && (byte >= 0x61 && byte <= 0x7A || byte >= 0x30 && byte <= 0x39)
            return plain && !all ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }.joined()
    }

    static func qEncoded(_ text: String) -> String {
        Array(text.utf8).map { byte in
            byte == 0x20 ? "_" : (byte >= 0x61 && byte <= 0x7A) ? String(UnicodeScalar(byte)) : String(format: "=%02X", byte)
        }.joined()
    }

    static func mail(_ headers: String = "", body: String) -> String {
        "From: a@example.org\nTo: b@example.org\nSubject: s\nMIME-Version: 1.0\n" + headers + body
    }

    static func mixed(_ part: String) -> String {
        mail("Content-Type: multipart/mixed; boundary=\"b\"\n", body: "\n--b\nContent-Type: text/plain\n\nhello\n--b\n" + part + "\n--b--\n")
    }

    /// A1: parameters of any name (RFC 2231, continuations, charsets), both
    /// file names, Content-Description, fields of parts and embedded messages.
    mutating func fieldsAndParameters() -> String {
        let span = self.span()
        let bytes = Array(span.utf8)
        let all = flip()
        let half = bytes.count / 2
        let attachment = "Content-Transfer-Encoding: base64\n\nAAEC"
        switch Int.random(in: 0..<8, using: &random) {
        case 0:
            return Self.mixed("Content-Type: application/octet-stream; x-\(pick(["note", "label", "y"]))*=utf-8''\(Self.percent(bytes, all: all))\n" + attachment)
        case 1:
            return Self.mixed("Content-Type: application/octet-stream\nContent-Disposition: attachment; filename=\"plain.bin\";\n filename*0*=utf-8''\(Self.percent(Array(bytes[..<half]), all: all));\n filename*1*=\(Self.percent(Array(bytes[half...]), all: all))\n" + attachment)
        case 2:
            return Self.mixed("Content-Type: application/octet-stream; name=\"\(span).bin\"; name*=iso-8859-1'en'\(Self.percent(bytes, all: all))\n" + attachment)
        case 3:
            return Self.mixed("Content-Type: application/octet-stream\nContent-Disposition: attachment; filename=\"\(span)\"; filename*=utf-8''other.bin\n" + attachment)
        case 4:
            return Self.mixed("Content-Type: text/plain\nContent-Description: =?utf-8?\(pick(["q", "Q"]))?\(Self.qEncoded(span))?=\n\nhello")
        case 5:
            let encoded = Data(bytes).base64EncodedString()
            return Self.mixed("Content-Type: text/plain\nX-\(pick(["Note", "Label"])): =?UTF-8?B?\(encoded)?=\n\nhello")
        case 6:
            // A marker split over two encoded-words (white space between them goes).
            let first = Self.qEncoded(String(span.prefix(5))), second = Self.qEncoded(String(span.dropFirst(5)))
            return Self.mail(body: "Content-Type: text/plain\n\nhi\n").replacingOccurrences(
                of: "Subject: s", with: "Subject: =?utf-8?q?\(first)?=\n =?utf-8?q?\(second)?=")
        default:
            return Self.mixed("Content-Type: message/rfc822\n\nFrom: c@example.org\nSubject: =?utf-8?b?\(Data(bytes).base64EncodedString())?=\nContent-Type: text/plain; name*0=\"\(span.prefix(6))\"; name*1=\"\(span.dropFirst(6))\"\n\ninner")
        }
    }

    /// A3: every message/* part read as a message.
    mutating func messageKinds() -> String {
        let inner = "From: c@example.org\nSubject: =?utf-8?q?\(Self.qEncoded(span()))?=\nContent-Type: text/plain\n\nbody \(span())\n"
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return Self.mixed("Content-Type: message/partial; id=\"x@y\"; number=1; total=1\n\n" + inner)
        case 1: return Self.mixed("Content-Type: message/external-body; access-type=x-mail\n\n" + inner)
        case 2: return Self.mixed("Content-Type: message/x-\(pick(["foo", "thing", "news2"]))\nContent-Transfer-Encoding: \(pick(["7bit", "8bit"]))\n\n" + inner)
        default:
            return Self.mail("Content-Type: multipart/digest; boundary=\"d\"\n", body: "\n--d\n\n" + inner + "\n--d--\n")
        }
    }

    /// A4: character references of every kind, in text and attribute values
    /// of any element, in text/html and application/xhtml+xml.
    mutating func htmlReferences() -> String {
        func reference(_ character: Character) -> String {
            let code = character.unicodeScalars.first!.value
            let named: [Character: [String]] = ["[": ["&lsqb;", "&lbrack;"], "]": ["&rsqb;", "&rbrack;"], "/": ["&sol;"]]
            var forms = ["&#\(code);", "&#x\(String(code, radix: 16));", "&#X\(String(code, radix: 16, uppercase: true));",
                         "&#000\(code);", "&#x0000\(String(code, radix: 16));", "&#\(code)"]
            forms += named[character] ?? []
            return flip() ? String(character) : pick(forms)
        }
        let raw = span()
        let encoded = raw.map { reference($0) }.joined()
        let element = pick([
            "<title>\(encoded)</title>", "<p>\(encoded)</p>", "<textarea>\(encoded)</textarea>", "<noscript>\(encoded)</noscript>",
            "<img alt=\"\(encoded)\">", "<a href=\"https://x.example/\" title=\"\(encoded)\">a</a>", "<input value=\"\(encoded)\">",
            "<meta name=\"description\" content=\"\(encoded)\">", "<svg><text>\(encoded)</text></svg>", "<math><mi>\(encoded)</mi></math>",
            // A document in an attribute: its references are escaped once more.
            "<iframe srcdoc=\"<p>\(encoded.replacingOccurrences(of: "&", with: "&amp;"))</p>\"></iframe>",
        ])
        let type = pick(["text/html; charset=utf-8", "application/xhtml+xml"])
        return Self.mail("Content-Type: \(type)\n", body: "\n<html><head></head><body>\(element)</body></html>\n")
    }

    /// A4 (escapes): CSS escapes and data: URLs.
    mutating func htmlEscapes() -> String {
        let raw = span()
        let css = raw.unicodeScalars.map { "\\" + String(format: pick(["%x ", "%06x", "%X "]), $0.value) }.joined()
        let data = pick(["data:text/plain;base64," + Data(raw.utf8).base64EncodedString(),
                         "data:text/plain," + Self.percent(Array(raw.utf8), all: true)])
        let body = pick(["<style>p::after { content: \"\(css)\" }</style><p>x</p>", "<p style=\"--x: '\(css)'\">x</p>",
                         "<a href=\"\(data)\">link</a>", "<img src=\"\(data)\">"])
        return Self.mail("Content-Type: text/html\n", body: "\n<html><body>\(body)</body></html>\n")
    }

    /// A5: charsets iconv decodes, in bodies of any type, encoded-words and parameters.
    mutating func charsets() -> (mail: String, known: Bool) {
        let raw = "Text " + span() + " end\n"
        let choices: [(String, String.Encoding?, [UInt8])] = [
            ("utf-7", nil, Array("Text +AFsAWw-private+AF0AXQ-".utf8)),
            ("utf-32le", .utf32LittleEndian, []), ("utf-32be", .utf32BigEndian, []),
            ("utf-32", .utf32LittleEndian, []), ("utf-32", .utf32BigEndian, []),
            ("utf-16", .utf16LittleEndian, []), ("utf-16be", .utf16BigEndian, []), ("ibm037", nil, []),
        ]
        let (charset, encoding, _) = pick(choices)
        var bytes: [UInt8]
        if let encoding {
            bytes = Array(raw.data(using: encoding)!)
            if charset == "utf-32" && flip() { bytes = (encoding == .utf32LittleEndian ? [0xFF, 0xFE, 0, 0] : [0, 0, 0xFE, 0xFF]) + bytes }
        } else if charset == "utf-7" {
            // Markers in UTF-7's base64 form, span words plain.
            bytes = Array(raw.replacingOccurrences(of: "[", with: "+AFs-").replacingOccurrences(of: "]", with: "+AF0-").utf8)
        } else {
            bytes = Array(raw.data(using: .utf8)!).map { ebcdic037[$0] ?? 0x40 }
        }
        let type = pick(["text/plain", "application/json", "text/csv"])
        let where_ = Int.random(in: 0..<3, using: &random)
        if where_ == 2 && charset != "ibm037" {
            return (Self.mixed("Content-Type: application/octet-stream\nContent-Disposition: attachment; filename*=\(charset)''\(Self.percent(bytes, all: true))\nContent-Transfer-Encoding: base64\n\nAAEC"), true)
        }
        if where_ == 1 && charset == "utf-7" {
            return (Self.mail(body: "Content-Type: text/plain\n\nhi\n").replacingOccurrences(
                of: "Subject: s", with: "Subject: =?utf-7?b?\(Data(bytes).base64EncodedString())?="), true)
        }
        if flip() {
            let unknown = pick(["x-no-such-charset", "hz-gb-2312-nope", "x-mac-klingon"])
            return (Self.mail("Content-Type: \(type); charset=\(unknown)\nContent-Transfer-Encoding: base64\n",
                              body: "\n" + Data(Array(raw.utf8)).base64EncodedString() + "\n"), false)
        }
        return (Self.mail("Content-Type: \(type); charset=\(charset)\nContent-Transfer-Encoding: base64\n",
                          body: "\n" + Data(bytes).base64EncodedString(options: .lineLength76Characters) + "\n"), true)
    }

    /// A6: what a reader renders: invisible characters inside a marker, flowed
    /// soft breaks, folded iCalendar lines, text/enriched.
    mutating func rendered() -> (mail: String, censored: Bool) {
        let words = secret() + " " + secret()
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            let invisible = pick(["\u{AD}", "\u{200B}", "\u{200D}", "\u{2060}", "\u{FEFF}"])
            let open = "[[pri" + invisible + "vate]]", close = pick(["[[/private]]", "[[/pri\(invisible)vate]]"])
            return (Self.mail("Content-Type: text/\(pick(["plain", "html"])); charset=utf-8\nContent-Transfer-Encoding: 8bit\n",
                              body: "\n<p>\(open)\(words)\(close)</p>\n"), true)
        case 1:
            return (Self.mail("Content-Type: text/plain; charset=utf-8; format=flowed; delsp=yes\n",
                              body: "\nA line [[pri \nvate]]\(words) \n[[/private]] end\n"), true)
        case 2:
            return (Self.mail("Content-Type: text/calendar; charset=utf-8\n",
                              body: "\nBEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:[[pri\n vate]]\(words)[[/pri\n vate]]\nEND:VEVENT\nEND:VCALENDAR\n"), true)
        default:
            return (Self.mail("Content-Type: text/enriched\n", body: "\n[[pri<bold>vate]]\(words)[[/pri</bold>vate]]\n"), false)
        }
    }
}

/// EBCDIC (IBM037) for the letters, digits and signs the generator uses.
let ebcdic037: [UInt8: UInt8] = {
    var table: [UInt8: UInt8] = [0x20: 0x40, 0x0A: 0x25, 0x5B: 0xBA, 0x5D: 0xBB, 0x2F: 0x61]
    let rows: [(String, UInt8)] = [("abcdefghi", 0x81), ("jklmnopqr", 0x91), ("stuvwxyz", 0xA2),
                                   ("ABCDEFGHI", 0xC1), ("JKLMNOPQR", 0xD1), ("STUVWXYZ", 0xE2), ("0123456789", 0xF0)]
    for (letters, start) in rows {
        for (index, letter) in letters.utf8.enumerated() { table[letter] = start + UInt8(index) }
    }
    return table
}()

@Suite("Read it or refuse it (issue 12 A)")
struct ReadingsTests {
    static let seeds: ClosedRange<UInt64> = 1...60

    @Test("A1: every parameter (RFC 2231 of any name, continuations, charsets), both file names and every field are censored")
    func fieldsAndParameters() throws {
        for seed in Self.seeds {
            var generator = HostileGenerator(seed: seed)
            let mail = generator.fieldsAndParameters()
            #expect(try censorOrRefuse(mail, secrets: generator.secrets) == .censored, "seed \(seed):\n\(mail)")
        }
    }

    @Test("A2: duplicate fields or parameters and unknown encodings are refused; broken base64 and quoted-printable are censored")
    func ambiguity() throws {
        for seed in Self.seeds {
            var generator = HostileGenerator(seed: seed)
            let span = generator.span()
            let encoded = Data(span.utf8).base64EncodedString()
            let cut = encoded.index(encoded.startIndex, offsetBy: 8)
            let cases: [(String, Outcome?)] = [
                ("Content-Type: text/plain\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n\(encoded)", .refused),
                ("Content-Type: text/plain\nContent-Transfer-Encoding: 7bit\nContent-Transfer-Encoding: base64\n\n\(encoded)", .refused),
                ("Content-Type: text/plain\nContent-Transfer-Encoding: x-gzip\n\n\(span)", .refused),
                ("Content-Type: text/plain\nContent-Transfer-Encoding: base64; x=1\n\n\(encoded)", .refused),
                // Broken encodings: the reading that shows the markers is censored.
                ("Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n\(encoded[..<cut])=\(encoded[cut...])", .censored),
                ("Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n\(encoded[..<cut])!!\(encoded[cut...])", .censored),
                ("Content-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n\(span.replacingOccurrences(of: "pri", with: "pri=  \n"))", .censored),
                ("Content-Type: text/plain\nContent-Transfer-Encoding: \(generator.pick(["x-uue", "x-uuencode", "uuencode"]))\n\n"
                    + "begin 644 a.txt\n" + uuencode(Array(span.utf8)) + "`\nend\n", nil),
                ("Content-Type: text/plain\nContent-Description: =?utf-8?\(generator.pick(["x", "", "bq"]))?\(encoded)?=\n\nhi", nil),
                ("Content-Type: text/plain\nContent-Description: =??q?\(HostileGenerator.qEncoded(span))?=\n\nhi", nil),
                ("Content-Type: text/plain; charset=utf-8; charset=utf-16le\nContent-Transfer-Encoding: base64\n\n"
                    + Data(span.data(using: .utf16LittleEndian)!).base64EncodedString(), .refused),
                ("Content-Type: multipart/mixed; boundary=x; boundary=y\n\n--y\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n"
                    + encoded + "\n--y--\n--x\nContent-Type: text/plain\n\nhi\n--x--\n", .refused),
                ("Content-Type: multipart/mixed; boundary=z\nContent-Transfer-Encoding: base64\n\n"
                    + Data("--z\nContent-Type: text/plain\n\n\(span)\n--z--\n".utf8).base64EncodedString(), .refused),
                ("Content-Type: text/plain\n\nan attachment follows\nbegin 644 note.txt\n" + uuencode(Array(span.utf8)) + "`\nend\n", nil),
                ("Content-Type: text/plain; name=\"page.html\"\nContent-Disposition: attachment; filename=page.html\n\n<p>"
                    + span.replacingOccurrences(of: "[", with: "&lsqb;") + "</p>", nil),
            ]
            for (part, expected) in cases {
                let mail = HostileGenerator.mixed(part)
                let outcome = try censorOrRefuse(mail, secrets: generator.secrets)
                if let expected { #expect(outcome == expected, "seed \(seed):\n\(mail)") }
            }
        }
    }

    @Test("A3: message/partial, external-body, unknown message/x-…, and digest children are read and censored as messages")
    func messageKinds() throws {
        for seed in Self.seeds {
            var generator = HostileGenerator(seed: seed)
            let mail = generator.messageKinds()
            #expect(try censorOrRefuse(mail, secrets: generator.secrets) == .censored, "seed \(seed):\n\(mail)")
        }
    }

    @Test("A4: character references of every form, in text and attribute values of any element, are decoded and censored")
    func htmlReferences() throws {
        for seed in Self.seeds {
            var generator = HostileGenerator(seed: seed)
            let mail = generator.htmlReferences()
            #expect(try censorOrRefuse(mail, secrets: generator.secrets) == .censored, "seed \(seed):\n\(mail)")
        }
    }

    @Test("A4: CSS escapes and data: URLs are read; what redaction cannot reach is refused, never passed")
    func htmlEscapes() throws {
        for seed in Self.seeds {
            var generator = HostileGenerator(seed: seed)
            let mail = generator.htmlEscapes()
            _ = try censorOrRefuse(mail, secrets: generator.secrets)
            // Detected as a mail with spans, whatever came of it.
            #expect(Redactor.standard.readings(of: try MIMEMessage.parse(Array(mail.utf8))).marker != nil, "seed \(seed):\n\(mail)")
        }
    }

    @Test("A5: any charset iconv decodes is read and censored, in bodies of any type, encoded-words and parameters; an unknown one is refused")
    func charsets() throws {
        for seed in Self.seeds {
            var generator = HostileGenerator(seed: seed)
            let (mail, known) = generator.charsets()
            #expect(try censorOrRefuse(mail, secrets: generator.secrets) == (known ? .censored : .refused), "seed \(seed):\n\(mail)")
        }
    }

    @Test("A6: invisible characters inside markers, flowed soft breaks and folded iCalendar lines are censored; enriched markers never pass")
    func rendered() throws {
        for seed in Self.seeds {
            var generator = HostileGenerator(seed: seed)
            let (mail, censorable) = generator.rendered()
            let outcome = try censorOrRefuse(mail, secrets: generator.secrets)
            if censorable { #expect(outcome == .censored, "seed \(seed):\n\(mail)") }
            #expect(Redactor.standard.readings(of: try MIMEMessage.parse(Array(mail.utf8))).marker != nil, "seed \(seed):\n\(mail)")
        }
    }

    @Test("A7: a mail encrypted already leaves with its outside censored and its ciphertext untouched; encrypt and redact agree")
    func encryptedAlready() throws {
        let armor = "-----BEGIN PGP MESSAGE-----\n\n\(exactCiphertext)\n=abcd\n-----END PGP MESSAGE-----\n"
        for seed in UInt64(1)...8 {
            var generator = HostileGenerator(seed: seed)
            let span = generator.span()
            let subject = generator.pick([span, "=?utf-8?q?\(HostileGenerator.qEncoded(span))?=", "=?utf-8?b?\(Data(span.utf8).base64EncodedString())?="])
            let field = generator.pick(["Subject", "Comments", "X-Topic"])
            let text = "From: alice@example.org\nTo: bob@example.org\n\(field): \(subject)\nMIME-Version: 1.0\n"
                + "Content-Type: multipart/encrypted; protocol=\"application/pgp-encrypted\"; boundary=b\n\n"
                + "--b\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n--b\nContent-Type: application/octet-stream\n\n"
                + armor + "--b--\n"
            let bytes = Array(text.utf8)
            let redacted = try Postcard.censored(try MIMEMessage.parse(bytes)).serialize()
            try withGnuPGHome(importing: senderFixtures) { home throws in
                let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
                let copies = try pipeline.write(try pipeline.prepare(try MIMEMessage.parse(bytes), original: bytes)).copies
                #expect(copies.map(\.kind) == [.unchanged])
                let sent = try copies[0].bytes
                #expect(String(decoding: sent, as: UTF8.self) == String(decoding: redacted, as: UTF8.self), "encrypt and redact differ")
                for reading in try everyReading(sent) {
                    for secret in generator.secrets { #expect(!reading.contains(secret), "seed \(seed): \(secret) in \(field)") }
                }
                // Only the ciphertext passes, as it was.
                #expect(String(decoding: sent, as: UTF8.self).contains(armor))
            }
        }
    }

    @Test("a mail with spans and a place that cannot be read is refused before anything is written; without spans it passes")
    func refusal() throws {
        let unknown = "Content-Type: text/plain; charset=x-no-such-charset\n\nplain words\n"
        let withSpan = HostileGenerator.mail("Content-Type: multipart/mixed; boundary=b\n",
                                             body: "\n--b\nContent-Type: text/plain\n\n[[private]]zqsecret[[/private]]\n--b\n\(unknown)--b--\n")
        #expect(throws: PipelineError(.unreadable, detail: "part 2 (text/plain) (charset x-no-such-charset)")) {
            try Postcard.censored(try parse(withSpan))
        }
        // Without marked spans nothing needs reading with certainty.
        _ = try Postcard.censored(try parse(HostileGenerator.mail(body: unknown)))
    }
}

/// uuencoded lines of `bytes` (without begin and end).
func uuencode(_ bytes: [UInt8]) -> String {
    var out = ""
    for start in stride(from: 0, to: bytes.count, by: 45) {
        let line = Array(bytes[start..<min(start + 45, bytes.count)])
        out.append(Character(UnicodeScalar(32 + UInt8(line.count))))
        for group in stride(from: 0, to: line.count, by: 3) {
            let a = line[group], b = group + 1 < line.count ? line[group + 1] : 0, c = group + 2 < line.count ? line[group + 2] : 0
            for value in [a >> 2, (a & 3) << 4 | b >> 4, (b & 15) << 2 | c >> 6, c & 63] {
                out.append(Character(UnicodeScalar(value == 0 ? 96 : 32 + value)))
            }
        }
        out += "\n"
    }
    return out
}
