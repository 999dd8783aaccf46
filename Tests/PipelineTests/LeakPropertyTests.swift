import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy
import TestSupport
import Testing

/// Makes random mails with marked spans and remembers every secret word.
struct MailGenerator {
    var random: SeededRandom
    var secrets: [String] = []

    mutating func word() -> String {
        "zq" + String((0..<Int.random(in: 6...12, using: &random)).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement(using: &random)! })
    }

    /// A marked span of one to four secret words, maybe across lines.
    mutating func span(multiline: Bool = true) -> String {
        let words = (0..<Int.random(in: 1...4, using: &random)).map { _ in word() }
        secrets += words
        let separator = multiline && Bool.random(using: &random) ? "\n" : " "
        let marker = ["[[private]]", "[[PRIVATE]]", "[[Private]]"].randomElement(using: &random)!
        return marker + words.joined(separator: separator) + "[[/private]]"
    }

    mutating func prose(spans: Int) -> String {
        var parts = ["Grüße aus Köln", "plain words", "more text here", "ein Satz mit ä"]
        for _ in 0..<spans { parts.insert(span(), at: Int.random(in: 0...parts.count, using: &random)) }
        return parts.joined(separator: Bool.random(using: &random) ? " " : "\n")
    }

    mutating func html(spans: Int) -> String {
        var parts = ["<p>Hello <b>there</b></p>", "<p>plain</p>", "<div class=\"x\">text</div>"]
        for _ in 0..<spans {
            let secret = word(), attribute = word()
            secrets += [secret, attribute]
            let inner = ["<p>[[private]]\(secret) <a href=\"https://\(attribute).example/\">link</a>[[/private]]</p>",
                         "<p>[[pri<i>vate]]</i>\(secret) <img alt=\"\(attribute)\">[[/private]]</p>",
                         "<p title=\"[[private]]\(attribute)[[/private]]\">[[private]]<b>\(secret)</b>[[/private]]</p>"]
            parts.insert(inner.randomElement(using: &random)!, at: Int.random(in: 0...parts.count, using: &random))
        }
        return "<html><body>" + parts.joined(separator: "\n") + "</body></html>"
    }

    /// A text leaf in a random charset and transfer encoding.
    mutating func textPart(_ text: String, subtype: String) -> String {
        let charset = ["utf-8", "iso-8859-1"].randomElement(using: &random)!
        let bytes = charset == "utf-8" ? Array(text.utf8) : Array(text.data(using: .isoLatin1)!)
        let encoding = ["quoted-printable", "base64", "8bit"].randomElement(using: &random)!
        let body: String
        switch encoding {
        case "base64": body = Data(bytes).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed])
        case "quoted-printable": body = quotedPrintable(bytes)
        default: body = String(decoding: bytes, as: UTF8.self)  // 8bit only as UTF-8
        }
        let finalCharset = encoding == "8bit" ? "utf-8" : charset
        return "Content-Type: text/\(subtype); charset=\(finalCharset)\nContent-Transfer-Encoding: \(encoding)\n\n\(body)\n"
    }

    mutating func subject() -> String {
        let text = Bool.random(using: &random) ? "Über \(span(multiline: false)) und mehr" : "Plain subject"
        if Bool.random(using: &random) { return "=?UTF-8?B?\(Data(text.utf8).base64EncodedString())?=" }
        return "=?UTF-8?Q?" + quotedPrintable(Array(text.utf8)).replacingOccurrences(of: "=\n", with: "")
            .replacingOccurrences(of: " ", with: "_").replacingOccurrences(of: "?", with: "=3F") + "?="
    }

    mutating func body(depth: Int = 0) -> String {
        let spans = Int.random(in: 1...3, using: &random)
        switch Int.random(in: 0...(depth > 0 ? 1 : 3), using: &random) {
        case 0:
            return textPart(prose(spans: spans), subtype: "plain")
        case 1:
            return "Content-Type: multipart/alternative; boundary=\"alt\(depth)\"\n\n--alt\(depth)\n"
                + textPart(prose(spans: spans), subtype: "plain") + "--alt\(depth)\n"
                + textPart(html(spans: 1), subtype: "html") + "--alt\(depth)--\n"
        case 2:
            let name = Bool.random(using: &random) ? "report \(span(multiline: false)).txt" : "data.bin"
            let encodedName = name.unicodeScalars.map { $0.isASCII && $0.properties.isAlphabetic ? String($0)
                : $0.utf8.map { String(format: "%%%02X", $0) }.joined() }.joined()
            return "Content-Type: multipart/mixed; boundary=\"mix\(depth)\"\n\n--mix\(depth)\n"
                + body(depth: depth + 1) + "--mix\(depth)\n"
                + "Content-Type: application/octet-stream\nContent-Disposition: attachment; filename*=utf-8''\(encodedName)\n"
                + "Content-Transfer-Encoding: base64\n\nAAECAw==\n--mix\(depth)--\n"
        default:
            return "Content-Type: multipart/mixed; boundary=\"fwd\(depth)\"\n\n--fwd\(depth)\n"
                + textPart(prose(spans: 1), subtype: "plain") + "--fwd\(depth)\n"
                + "Content-Type: message/rfc822\n\nFrom: x@example.org\nSubject: \(subject())\nMIME-Version: 1.0\n"
                + body(depth: depth + 1) + "--fwd\(depth)--\n"
        }
    }

    mutating func mail() -> String {
        "From: Alice <alice@example.org>\nTo: bob@example.org\nCc: nobody@example.org\nSubject: \(subject())\n"
            + "Message-ID: <gen.\(random.next())@example.org>\nMIME-Version: 1.0\n" + body()
    }
}

func quotedPrintable(_ bytes: [UInt8]) -> String {
    var out = "", lineLength = 0
    for byte in bytes {
        let piece: String
        if byte == 10 { out += "\n"; lineLength = 0; continue }
        if (33...126).contains(byte) && byte != 61 { piece = String(UnicodeScalar(byte)) }
        else if byte == 32 { piece = " " }
        else { piece = String(format: "=%02X", byte) }
        if lineLength + piece.count > 73 { out += "=\n"; lineLength = 0 }
        out += piece
        lineLength += piece.count
    }
    return out.replacingOccurrences(of: " \n", with: "=20\n")
}

@Suite("The leak property", .serialized)
struct LeakPropertyTests {
    @Test("no marked span's text appears in any postcard: decoded body, header, encoded-word or file name")
    func generatedMails() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["LEAK_SEED"] ?? "") ?? 20261121
        var generator = MailGenerator(random: SeededRandom(state: seed))
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let pipeline = MailPipeline(gnupg: GnuPG(home: home.path))
            for index in 0..<60 {
                generator.secrets = []
                let text = generator.mail()
                let message = try MIMEMessage.parse(Array(text.utf8))
                let (plan, copies, _, _) = try pipeline.process(message)
                #expect(plan.hasMarkedSpans, "mail \(index), seed \(seed)")
                let postcard = try #require(copies.first { $0.kind == .postcard })
                let visible = try everythingVisible(postcard.bytes)
                for secret in generator.secrets {
                    let leaked = visible.contains { $0.lowercased().contains(secret) }
                    #expect(!leaked, "mail \(index) (seed \(seed)) leaks \(secret):\n\(text)")
                }
                let letter = try #require(copies.first { $0.kind == .letter })
                let letterText = String(decoding: try letter.bytes, as: UTF8.self)
                #expect(!generator.secrets.contains { letterText.contains($0) })
            }
        }
    }
}
