import Foundation
@testable import MIME
import Testing

/// The pieces of the readings engine, each class on its own.
@Suite("Readings engine")
struct ReadingsEngineTests {
    func texts(_ mail: String) throws -> (texts: [String], uncertain: [String]) {
        var texts: [String] = []
        let uncertain = MessageReadings.readAll(try MIMEMessage.parse(Array(mail.utf8))) { _, content in
            switch content {
            case .text(let text, _): texts.append(text)
            case .pieces(_, let feed):
                var bytes: [UInt8] = []
                _ = feed { bytes += $0 }
                texts.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        return (texts, uncertain)
    }

    @Test("base64 with a stray = or garbage is read both ways; quoted-printable with white space after = too")
    func transferEncodings() {
        let whole = Array("[[private]]zqbase[[/private]]".utf8)
        let encoded = Array(Data(whole).base64EncodedString().utf8)
        for cut in stride(from: 4, to: encoded.count - 4, by: 4) {
            let broken = Array(encoded[..<cut]) + Array("=".utf8) + Array(encoded[cut...])
            #expect(TransferDecoding.base64(broken).contains(whole), "cut at \(cut)")
            #expect(TransferDecoding.hasStrayPadding(broken))
        }
        let garbage = Array(encoded[..<8]) + Array("!*\n ".utf8) + Array(encoded[8...])
        #expect(TransferDecoding.readings(garbage, encoding: "BASE64")?.first == whole)
        let qp = TransferDecoding.quotedPrintable(Array("[[pri= \t\nvate]]=5Bx=ZZ=".utf8))
        #expect(qp.map { String(decoding: $0, as: UTF8.self) } == ["[[private]][x=ZZ", "[[pri= \t\nvate]][x=ZZ"])
        #expect(TransferDecoding.readings(Array("x".utf8), encoding: "x-gzip") == nil)
        let uu = TransferDecoding.readings(Array("begin 644 a\n#86)C\n`\nend\n".utf8), encoding: "x-uue")
        #expect(uu?.first == Array("abc".utf8))
    }

    @Test("encoded-words are read as declared, as Q and as B, in every charset a reader may take; unknown charsets are named")
    func encodedWords() {
        let (readings, unknown) = FieldReadings.encodedWordReadings("=?utf-8?B?=5B=5Bpri?= =?utf-8?q?vate=5D=5D?=")
        #expect(readings.contains("[[private]]"))
        #expect(unknown == nil)
        #expect(FieldReadings.encodedWordReadings("=??q?=5B=5Bx?=").readings.contains("[[x"))
        #expect(FieldReadings.encodedWordReadings("=?utf-8?x?W1t4?=").readings.contains("[[x"))
        let utf16 = Data("[[x".data(using: .utf16LittleEndian)!).base64EncodedString()
        #expect(FieldReadings.encodedWordReadings("=?utf-16?b?\(utf16)?=").readings.contains("[[x"))
        // A UTF-32 unit cut between two words: their bytes joined, as Python's decode_header does.
        #expect(FieldReadings.encodedWordReadings("=?UTF-32LE?Q?[=00=00=00=5B=00?= =?UTF-32LE?Q?=00=00x=00=00=00?=").readings.contains("[[x"))
        let (foreign, name) = FieldReadings.encodedWordReadings("=?x-klingon?q?=5B=5Bx?=")
        #expect(name == "x-klingon" && foreign.contains("[[x"))
    }

    @Test("RFC 2231: continuations put together, percent-escapes and charsets decoded, for any parameter name")
    func parameters() {
        let value = "attachment; filename=\"a.bin\"; filename*0*=utf-8''%5B%5Bpri; filename*1=\"vate]]\"; x-y*=utf-16le''%5B%00%5B%00"
        let parameters = FieldReadings.parameters(value)
        #expect(parameters.first { $0.name == "filename*" }?.texts.contains("[[private]]") == true)
        #expect(parameters.first { $0.name == "filename" }?.texts.contains("a.bin") == true)
        #expect(parameters.first { $0.name == "x-y*" }?.texts.contains("[[") == true)
        #expect(FieldReadings.readings("x; a*=x-no''%41").uncertain == [" a* (charset x-no)"])
    }

    @Test("charset aliases mean what mail software means by them; identity encodings agree; comments are dropped")
    func friendlyNames() throws {
        #expect(Charsets.candidates("ks_c_5601-1987") == ["CP949"])
        #expect(Charsets.candidates("\"KS_C_5601-1987\"") == ["CP949"])
        #expect(Charsets.candidates("iso-8859-8-i") == ["ISO-8859-8"])
        #expect(Charsets.candidates("x-mac-roman") == ["MACINTOSH"])
        #expect(Charsets.candidates("unknown-8bit") == ["UTF-8", "ISO-8859-1"])
        #expect(Charsets.candidates("x-euc-jp") == ["EUC-JP"])
        #expect(Charsets.candidates("x-no").isEmpty, "no `x-` taken off: NO is Norwegian ISO 646 to iconv")
        #expect(Charsets.candidates("utf-8 (the usual)") == ["utf-8"])
        #expect(Charsets.saysBinary("binary") && !Charsets.saysBinary("utf-8"))
        // 똠 is in code page 949 only, not in EUC-KR.
        #expect(Charsets.decode([0x8C, 0x63], charset: Charsets.candidates("ks_c_5601-1987")[0]) == "똠")
        #expect(Charsets.decode([0x43, 0x61, 0x66, 0x8E], charset: "MACINTOSH") == "Café")
        #expect(!MessageReadings.isTextLike(ContentType(type: "application", subtype: "pdf", parameters: ["charset": "binary"])))
        #expect(TransferDecoding.token("7bit (plain text)") == "7bit")
        #expect(TransferDecoding.token("(comment) base64") == "base64")
        #expect(TransferDecoding.isIdentity("8Bit") && TransferDecoding.isIdentity(" binary ") && !TransferDecoding.isIdentity("base64"))
        #expect(!TransferDecoding.isOddlySpelled("7bit (plain text)"))
        #expect(TransferDecoding.isOddlySpelled("base64 (comment)"))
        #expect(FieldReadings.withoutComments("text/plain (a (nested) comment); charset=\"a (not one)\"")
            == "text/plain  ; charset=\"a (not one)\"")
        for mail in ["Subject: =?ks_c_5601-1987?B?yLjAxw==?= x =?x-mac-roman?Q?Caf=8E?= y =?unknown-8bit?Q?R=E9union?=\n"
                        + "Content-Type: text/plain; charset=ks_c_5601-1987\n\n\u{48}i\n",
                     "Subject: s\nContent-Type: text/plain\nContent-Transfer-Encoding: 7bit\nContent-Transfer-Encoding: 8bit\n\nhi\n",
                     "Subject: s\nContent-Type: text/plain\nContent-Transfer-Encoding: 7bit (plain text)\n\nhi\n",
                     "Subject: s\nContent-Type: application/pdf; charset=binary\nContent-Transfer-Encoding: base64\n\nJVBERg==\n"] {
            let (read, uncertain) = try texts(mail)
            #expect(uncertain.isEmpty, "\(uncertain)")
            if mail.contains("ks_c") { #expect(read.contains { $0.contains("회의 x Café y Réunion") }, "\(read)") }
        }
        // Two encodings that are not both identities still are not certain.
        #expect(try !texts("Subject: s\nContent-Type: text/plain\nContent-Transfer-Encoding: 7bit\nContent-Transfer-Encoding: base64\n\nhi\n")
            .uncertain.isEmpty)
    }

    @Test("a bare CR ends a line as Python's reader takes it: parsing reads it so (issue 21), and the one reading is certain")
    func bareCarriageReturns() throws {
        let mail = "From: a@example.org\rTo: b@example.org\rContent-Type: text/plain\rContent-Transfer-Encoding: base64\r\r"
            + Data("[[private]]zqcr[[/private]]".utf8).base64EncodedString() + "\r"
        let (read, uncertain) = try texts(mail)
        // Before issue 21's second round GMime read the whole mail as one field, and the mail was refused as uncertain.
        #expect(uncertain.isEmpty)
        #expect(read.contains { $0.contains("[[private]]zqcr") }, "the base64 body Python decodes is read")
        #expect(try texts("Subject: s\r\nContent-Type: text/plain\r\n\r\nhi\r\n").uncertain.isEmpty, "CRLF is no bare CR")
        // Quoted-printable: `=` before a bare CR is a soft line break to Python.
        #expect(TransferDecoding.quotedPrintable(Array("[[pri=\rvate]]".utf8)).contains(Array("[[private]]".utf8)))
    }

    @Test("charsets: iconv's, in both byte orders where none is stated, spellings of other libraries; unknown ones are none")
    func charsets() {
        #expect(Charsets.candidates("UTF-32") == ["UTF-32LE", "UTF-32BE"])
        #expect(Charsets.candidates("utf_32_be") == ["UTF-32BE"])
        #expect(Charsets.candidates("unicode-1-1-utf-7") == ["UTF-7"])
        #expect(Charsets.candidates("x-no-such-charset").isEmpty)
        let text = "[[x]]"
        for (name, encoding) in [("UTF-32LE", String.Encoding.utf32LittleEndian), ("UTF-32BE", .utf32BigEndian), ("UTF-16BE", .utf16BigEndian)] {
            #expect(Charsets.decode(Array(text.data(using: encoding)!), charset: name) == text)
        }
        #expect(Charsets.decode([0xFF, 0xFE, 0, 0] + Array(text.data(using: .utf32LittleEndian)!), charset: "UTF-32BE") == text)
        #expect(Charsets.decode(Array("+AFsAWw-x".utf8), charset: "UTF-7") == "[[x")
        #expect(Charsets.decode([0xBA, 0xBA, 0xA7], charset: "IBM037") == "[[x")
        #expect(Charsets.decode([0x41, 0xFF, 0x42], charset: "UTF-8") == "A\u{FFFD}B")
    }

    @Test("every message/* part, digest children and text/rfc822-headers are read as messages; duplicates are uncertain")
    func messages() throws {
        let inner = "Subject: =?utf-8?q?=5B=5Bzqinner?=\n\nbody\n"
        for type in ["message/partial; id=x", "message/external-body; access-type=x", "message/x-foo", "text/rfc822-headers"] {
            let mail = "From: a@example.org\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: \(type)\n\n\(inner)--b--\n"
            #expect(try texts(mail).texts.contains("[[zqinner"), "\(type)")
        }
        let digest = "From: a@example.org\nContent-Type: multipart/digest; boundary=d\n\n--d\n\n\(inner)--d--\n"
        #expect(try texts(digest).texts.contains("[[zqinner"))
        let duplicate = "From: a@example.org\nContent-Type: text/plain\nContent-Type: text/html\n\nx\n"
        #expect(try texts(duplicate).uncertain.contains { $0.contains("two Content-Type fields") })
    }

    @Test("two multipart Content-Type fields are read once only when nothing but the subtype differs: a boundary in another case, or digest, is read too")
    func multipartSubtypes() throws {
        func partRead(_ read: (texts: [String], uncertain: [String]), _ text: String) -> Bool {
            read.texts.contains { $0.hasPrefix(text) && !$0.contains("--") }
        }
        let parts = "--b\nContent-Type: text/plain\n\nzqlower\n--b--\n--B\nContent-Type: text/plain\n\nzqupper\n--B--\n"
        let cases = try texts("From: a@example.org\nContent-Type: multipart/mixed; boundary=\"b\"\n"
                              + "Content-Type: multipart/alternative; boundary=\"B\"\n\n" + parts)
        #expect(partRead(cases, "zqlower") && partRead(cases, "zqupper"), "\(cases.texts)")
        #expect(cases.uncertain.contains { $0.contains("two Content-Type fields") })
        let inner = "Subject: =?utf-8?q?=5B=5Bzqdigest?=\n\nbody\n"
        let digest = try texts("From: a@example.org\nContent-Type: multipart/mixed; boundary=d\n"
                               + "Content-Type: multipart/digest; boundary=d\n\n--d\n\n\(inner)--d--\n")
        #expect(digest.texts.contains("[[zqdigest"), "the digest's child read as a message")
        let same = try texts("From: a@example.org\nContent-Type: multipart/mixed; boundary=b\n"
                             + "Content-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/plain\n\nzqsame\n--b--\n")
        #expect(partRead(same, "zqsame") && same.uncertain.contains { $0.contains("two Content-Type fields") })
    }

    /// A multipart whose Content-Type fields read its parts alike is no longer parsed
    /// anew for each of its transfer encodings: each encoding, the first as much as the
    /// last, must still be decoded, and its parts read.
    @Test("a multipart with two Content-Type fields alike is read decoded in each of its transfer encodings")
    func ambiguousMultipartDecoded() throws {
        let inner = "--b\nContent-Type: text/plain\n\nzqdecoded\n--b--\n"
        let encoded = Data(inner.utf8).base64EncodedString()
        for (first, last) in [("base64", "7bit"), ("7bit", "base64"), ("base64", "quoted-printable"), ("quoted-printable", "base64")] {
            let mail = try texts("From: a@example.org\nContent-Type: multipart/mixed; boundary=b\n"
                                 + "Content-Type: multipart/alternative; boundary=b\n"
                                 + "Content-Transfer-Encoding: \(first)\nContent-Transfer-Encoding: \(last)\n\n"
                                 + "\(encoded)\n--b\nContent-Type: text/plain\n\nzqplain\n--b--\n")
            #expect(mail.texts.contains { $0.contains("zqdecoded") }, "\(first), \(last)")
            #expect(mail.texts.contains { $0.contains("zqplain") }, "\(first), \(last)")
            #expect(mail.uncertain.contains { $0.contains("transfer encoding on a multipart") }, "\(first), \(last)")
        }
    }

    /// ``MessageReadings/firstBoundaryLike(_:)`` finds by bytes the line that
    /// `split(separator: "\n")` found: random text of line ends (LF, CR LF, a lone
    /// CR), dashes, combining marks and letters.
    @Test("the first line like a boundary is the one Character-wise splitting finds")
    func boundaryLikeLines() {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["--", "-", "\n", "\r\n", "\r", "a", "x-", "\u{301}", "é", " ", "--\u{301}", "\n--", "\r\n--"]
        for _ in 0..<3_000 {
            let text = (0..<Int.random(in: 0...14, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let expected = text.split(separator: "\n").first { $0.hasPrefix("--") && $0.count > 2 }
            #expect(MessageReadings.firstBoundaryLike(text).map(String.init) == expected.map(String.init), "\(Array(text.unicodeScalars))")
        }
    }
}

@Suite("Trimming and gathering text without Foundation")
struct BlanksTests {
    /// `trimmingBlanks` must trim exactly what Foundation's `.whitespaces`
    /// trims (a Bcc field name read either way must be the same name): random
    /// strings from every space separator, tab, line ends, invisible and
    /// ordinary scalars, compared with Foundation, 3,000 times.
    @Test func sameAsFoundation() {
        let pool: [Unicode.Scalar] = ["\t", " ", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{1680}", "\u{2000}", "\u{2007}",
                                      "\u{200A}", "\u{200B}", "\u{2028}", "\u{2029}", "\u{202F}", "\u{205F}", "\u{3000}", "\u{FEFF}",
                                      "\u{AD}", "\u{301}", "a", "B", ":", "é", "漢", "\u{1F600}"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let count = Int.random(in: 0...8, using: &generator)
            let text = String(scalars: (0..<count).map { _ in pool.randomElement(using: &generator)! })
            #expect(text.trimmingBlanks == text.trimmingCharacters(in: .whitespaces),
                    "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    /// Every scalar alone and between letters: trimmed exactly when Foundation trims it.
    @Test func everyScalar() {
        var differing: [String] = []
        for value in 0...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let alone = String(scalar), framed = String(scalars: [scalar, "x", scalar])
            if alone.trimmingBlanks != alone.trimmingCharacters(in: .whitespaces)
                || framed.trimmingBlanks != framed.trimmingCharacters(in: .whitespaces) {
                differing.append(String(value, radix: 16))
            }
        }
        #expect(differing.isEmpty, "\(differing.prefix(20))")
    }

    @Test func gathersScalars() {
        let scalars: [Unicode.Scalar] = ["a", "\u{301}", "\u{1F600}", "\0", "z"]
        #expect(String(scalars: scalars) == String(String.UnicodeScalarView(scalars)))
        #expect(String(scalars: scalars[1..<3]).unicodeScalars.count == 2)
        #expect(String(scalars: [Unicode.Scalar]()).isEmpty)
    }
}
