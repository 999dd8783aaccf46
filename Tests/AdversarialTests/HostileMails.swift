import Foundation
import TestSupport

/// The classes of issue 12 A: where a marked span may hide from a reader that
/// is less lenient than the recipient's.
enum AttackClass: String, CaseIterable, Sendable {
    case fields = "A1", structure = "A2", messages = "A3", html = "A4", charsets = "A5", rendering = "A6", encrypted = "A7"

    var title: String {
        switch self {
        case .fields: "header fields and parameters"
        case .structure: "ambiguous structure"
        case .messages: "every message/* is a message"
        case .html: "HTML references and escapes"
        case .charsets: "charsets"
        case .rendering: "what a reader renders"
        case .encrypted: "already encrypted"
        }
    }
}

/// One generated mail: what it tries, the secret words inside its spans, and
/// the seed that makes it again (`MAILSEC_ADVERSARIAL_MAIL=A4:SEED`).
struct Sample: Sendable {
    let attackClass: AttackClass
    let variant: String
    /// false: the same shape without a trick, which must be censored, not refused.
    let hostile: Bool
    let seed: UInt64
    let mail: [UInt8]
    let tokens: [String]
}

/// Makes hostile (and friendly) mails with marked spans, one trick per mail so
/// that a mail that leaks is its own minimal example. Every span holds random
/// secret words (`zq` and lower-case letters) that the views search for.
struct HostileMailGenerator {
    var random: SeededRandom
    /// An armored OpenPGP message (real ciphertext) for the already-encrypted class.
    let ciphertext: String
    private(set) var tokens: [String] = []
    private var variant = ""

    init(seed: UInt64, ciphertext: String) {
        random = SeededRandom(state: seed)
        self.ciphertext = ciphertext
    }

    static func sample(_ attackClass: AttackClass, hostile: Bool, seed: UInt64, ciphertext: String) -> Sample {
        var generator = HostileMailGenerator(seed: seed, ciphertext: ciphertext)
        let mail = generator.mail(attackClass, hostile: hostile)
        return Sample(attackClass: attackClass, variant: generator.variant, hostile: hostile, seed: seed,
                      mail: Array(mail.utf8), tokens: generator.tokens)
    }

    // MARK: small pieces

    mutating func chance(_ oneIn: Int) -> Bool { Int.random(in: 0..<oneIn, using: &random) == 0 }
    mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }
    mutating func number(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

    mutating func letters(_ count: Int) -> String {
        String((0..<count).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement(using: &random)! })
    }

    /// A secret word, remembered.
    mutating func token() -> String {
        let word = "zq" + letters(number(7...11))
        tokens.append(word)
        return word
    }

    mutating func openMarker() -> String { pick(["[[private]]", "[[PRIVATE]]", "[[Private]]"]) }
    mutating func closeMarker() -> String { pick(["[[/private]]", "[[/PRIVATE]]", "[[/Private]]"]) }

    /// A marked span of one to three secret words.
    mutating func span() -> String {
        let words = (0..<number(1...3)).map { _ in token() }
        return openMarker() + words.joined(separator: " ") + closeMarker()
    }

    mutating func filler() -> String {
        pick(["Hello team,", "plain words here", "Grüße aus Köln", "see the notes below", "nothing secret in this line",
              "Meeting at ten", "regards, Alice"])
    }

    /// A few lines of text with `spans` marked spans among them.
    mutating func prose(spans: Int = 1, ascii: Bool = false) -> String {
        var lines = (0..<number(1...3)).map { _ in filler() }
        if ascii { lines = lines.map { $0.replacingOccurrences(of: "ü", with: "ue").replacingOccurrences(of: "ö", with: "oe").replacingOccurrences(of: "ß", with: "ss") } }
        for _ in 0..<spans { lines.insert(filler().prefix(number(0...8)) + " " + span(), at: number(0...lines.count)) }
        return lines.joined(separator: "\n") + "\n"
    }

    mutating func boundary() -> String { "b-" + letters(10) }

    /// A friendly transfer encoding of UTF-8 text: 8bit, quoted-printable or base64.
    mutating func friendlyBody(_ text: String) -> (cte: String, body: String) {
        switch number(0...2) {
        case 0: return ("8bit", text)
        case 1: return ("quoted-printable", quotedPrintable(Array(text.utf8)))
        default: return ("base64", Encode.base64(Array(text.utf8)))
        }
    }

    /// Bytes in a transfer encoding that keeps them intact (base64 or quoted-printable).
    mutating func binaryBody(_ bytes: [UInt8]) -> (cte: String, body: String) {
        Bool.random(using: &random) ? ("base64", Encode.base64(bytes)) : ("quoted-printable", quotedPrintable(bytes))
    }

    func leaf(_ contentType: String, _ headers: [String] = [], cte: String? = nil, body: String) -> String {
        var lines = ["Content-Type: " + contentType] + headers
        if let cte { lines.append("Content-Transfer-Encoding: " + cte) }
        return lines.joined(separator: "\n") + "\n\n" + body + (body.hasSuffix("\n") ? "" : "\n")
    }

    mutating func textLeaf(_ text: String, subtype: String = "plain", headers: [String] = []) -> String {
        let (cte, body) = friendlyBody(text)
        return leaf("text/\(subtype); charset=utf-8", headers, cte: cte, body: body)
    }

    mutating func multipart(_ subtype: String, _ parts: [String], headers: [String] = [], preamble: String = "", epilogue: String = "") -> String {
        let b = boundary()
        return (["Content-Type: multipart/\(subtype); boundary=\"\(b)\""] + headers).joined(separator: "\n") + "\n\n"
            + (preamble.isEmpty ? "" : preamble + "\n")
            + parts.map { "--\(b)\n" + $0 }.joined() + "--\(b)--\n" + epilogue
    }

    /// A message (header section and body) as the content of a message/* part.
    mutating func innerMessage(subject: String? = nil, extra: [String] = [], body: String) -> String {
        (["From: Carol <carol@example.com>", "To: alice@example.org", "Subject: " + (subject ?? "Forwarded note"),
          "Date: Sat, 21 Nov 2026 09:00:00 +0000", "MIME-Version: 1.0"] + extra).joined(separator: "\n") + "\n" + body
    }

    /// Puts a part at the top, beside a harmless text, or inside a forwarded message.
    mutating func place(_ part: String) -> String {
        switch number(0...4) {
        case 0, 1: return part
        case 2, 3:
            let sibling = textLeaf("Nothing private here.\n")
            return multipart("mixed", Bool.random(using: &random) ? [sibling, part] : [part, sibling])
        default:
            let forwarded = leaf("message/rfc822", body: innerMessage(body: part))
            return multipart("mixed", [textLeaf("Forwarding this.\n"), forwarded])
        }
    }

    mutating func envelope(subject: String = "", extra: [String] = [], body: String) -> String {
        let subjectLine = subject.isEmpty ? "Quarterly notes \(number(1...999))" : subject
        return (["From: Alice <alice@example.org>", "To: Bob <bob@example.org>", "Cc: Dora <dora@example.net>",
                 "Subject: " + subjectLine, "Date: Sun, 22 Nov 2026 10:00:00 +0000",
                 "Message-ID: <adv.\(random.next())@example.org>", "MIME-Version: 1.0"] + extra).joined(separator: "\n")
            + "\n" + body
    }

    // MARK: the classes

    mutating func mail(_ attackClass: AttackClass, hostile: Bool) -> String {
        switch attackClass {
        case .fields: hostile ? hostileFields() : friendlyFields()
        case .structure: hostile ? hostileStructure() : friendlyStructure()
        case .messages: hostile ? hostileMessages() : friendlyMessages()
        case .html: hostile ? hostileHTML() : friendlyHTML()
        case .charsets: hostile ? hostileCharsets() : friendlyCharsets()
        case .rendering: hostile ? hostileRendering() : friendlyRendering()
        case .encrypted: hostile ? hostileEncrypted() : friendlyEncrypted()
        }
    }

    /// A1: every header field and every MIME parameter.
    mutating func hostileFields() -> String {
        let plain = textLeaf("Nothing private in the body.\n")
        switch number(0...10) {
        case 0:
            let name = pick(["x-note", "title", "x-" + letters(5), "name", "filename", "description"])
            let charset = pick(["utf-8", "UTF-8", "iso-8859-1", "us-ascii"])
            let value = "report " + span() + ".txt"
            let param = Encode.rfc2231(name: name, bytes: Array(value.utf8), charset: charset, using: &random)
            variant = "RFC 2231 parameter \(name)* (\(charset), continuations)"
            let part = Bool.random(using: &random)
                ? leaf("application/octet-stream; \(param)", cte: "base64", body: "AAECAw==")
                : leaf("text/plain; charset=utf-8", ["Content-Disposition: attachment;\n \(param)"], cte: "8bit", body: "data\n")
            return envelope(body: place(part))
        case 1:
            let field = pick(["filename", "name"]), header = field == "filename" ? "Content-Disposition: attachment" : "Content-Type: application/pdf"
            let plainValue = "\"plan " + span() + ".pdf\""
            let starred = Encode.rfc2231(name: field, bytes: Array(("plan " + span() + ".pdf").utf8), charset: "utf-8", using: &random)
            let params = Bool.random(using: &random) ? "\(field)=\(plainValue);\n \(starred)" : "\(starred);\n \(field)=\(plainValue)"
            variant = "\(field)* beside \(field), each with its own span"
            let part = field == "filename"
                ? leaf("application/pdf", ["\(header);\n \(params)"], cte: "base64", body: "JVBERi0xLjQK")
                : leaf("application/pdf;\n \(params)", cte: "base64", body: "JVBERi0xLjQK")
            return envelope(body: place(part))
        case 2:
            let value = Bool.random(using: &random) ? span() : Encode.encodedWords(Array(span().utf8), charset: "utf-8", using: &random)
            variant = "Content-Description"
            return envelope(body: place(textLeaf("See attachment.\n", headers: ["Content-Description: " + value])))
        case 3:
            let field = pick(["X-Note", "Comments", "Keywords", "Organization", "Thread-Topic", "X-Mailer", "Summary", "X-" + letters(6).capitalized])
            let value = Bool.random(using: &random) ? "about " + span() : Encode.encodedWords(Array(("about " + span()).utf8), charset: "utf-8", using: &random)
            if Bool.random(using: &random) {
                variant = "\(field) field of the message"
                return envelope(extra: ["\(field): \(value)"], body: place(plain))
            }
            variant = "\(field) field of a part"
            return envelope(body: place(textLeaf("See the part's fields.\n", headers: ["\(field): \(value)"])))
        case 4:
            let field = pick(["Subject", "X-Note", "Content-Description", "Comments"])
            variant = "\(field) of an embedded message"
            let inner = field == "Subject" ? innerMessage(subject: span(), body: plain) : innerMessage(extra: ["\(field): " + span()], body: plain)
            return envelope(body: multipart("mixed", [textLeaf("Forwarded.\n"), leaf("message/rfc822", body: inner)]))
        case 5:
            let field = pick(["Reply-To", "Sender"])
            variant = "display name in \(field)"
            let name = Bool.random(using: &random) ? "\"" + span() + "\"" : Encode.encodedWords(Array(span().utf8), charset: "utf-8", using: &random)
            return envelope(extra: ["\(field): \(name) <helper@example.org>"], body: place(plain))
        case 7:
            let b = openMarker() + token() + closeMarker()
            variant = "span in a multipart boundary"
            return envelope(body: "Content-Type: multipart/mixed; boundary=\"\(b)\"\n\n--\(b)\n" + plain + "--\(b)\n" + textLeaf("More.\n") + "--\(b)--\n")
        case 8:
            variant = "span in a field name"
            let name = "X-" + openMarker() + token() + closeMarker()
            return Bool.random(using: &random) ? envelope(extra: ["\(name): 1"], body: place(plain))
                : envelope(body: place(textLeaf("See the fields.\n", headers: ["\(name): 1"])))
        case 9:
            let field = pick(["From", "Message-ID", "In-Reply-To", "References"])
            variant = "span in \(field) (kept on letters too)"
            let value = field == "From" ? "\"Alice " + span() + "\" <alice@example.org>" : "<" + openMarker() + token() + closeMarker() + "@example.org>"
            var mail = envelope(extra: field == "From" || field == "Message-ID" ? [] : ["\(field): \(value)"], body: place(plain))
            if field == "From" { mail = mail.replacingOccurrences(of: "From: Alice <alice@example.org>", with: "From: " + value) }
            if field == "Message-ID" { mail = mail.replacingOccurrences(of: "Message-ID: <adv.", with: "Message-ID: \(value)\nX-Old-Message-ID: <adv.") }
            return mail
        case 10:
            let name = pick(["title", "x-note", "filename"])
            variant = "RFC 2231 \(name)* with a language and lower-case hex"
            let value = Array(("note " + span()).utf8).map { String(format: "%%%02x", $0) }.joined()
            return envelope(body: place(leaf("application/octet-stream", ["Content-Disposition: attachment; \(name)*=utf-8'en'\(value)"], cte: "base64", body: "AAECAw==")))
        default:
            // A marker cut across plain (not percent-encoded) continuations.
            let text = span(), cut = number(1...max(1, text.count - 1))
            let name = pick(["x-note", "name", "title"])
            variant = "marker cut across plain RFC 2231 continuations of \(name)"
            let first = String(text.prefix(cut)), second = String(text.dropFirst(cut))
            return envelope(body: place(leaf("application/octet-stream;\n \(name)*0=\"\(first)\";\n \(name)*1=\"\(second)\"", cte: "base64", body: "AAECAw==")))
        }
    }

    mutating func friendlyFields() -> String {
        switch number(0...2) {
        case 0:
            variant = "Subject with a span (friendly)"
            let subject = Bool.random(using: &random) ? "Plans " + span() : Encode.encodedWords(Array(("Pläne " + span()).utf8), charset: "utf-8", using: &random)
            return envelope(subject: subject, body: place(textLeaf(prose())))
        case 1:
            variant = "filename*=utf-8'' with a span (friendly)"
            let name = Array(("Bericht " + span() + ".txt").utf8).map(Encode.hex).joined()
            return envelope(body: multipart("mixed", [textLeaf(prose()),
                leaf("application/octet-stream", ["Content-Disposition: attachment; filename*=utf-8''\(name)"], cte: "base64", body: "AAECAw==")]))
        default:
            variant = "X-Note field with a span (friendly)"
            return envelope(extra: ["X-Note: " + span()], body: place(textLeaf(prose())))
        }
    }

    /// A2: duplicate fields, legacy and broken transfer encodings, malformed encoded-words.
    mutating func hostileStructure() -> String {
        let text = prose()
        switch number(0...7) {
        case 0:
            let other = pick(["application/octet-stream", "text/html; charset=utf-8", "image/png", "text/plain; charset=utf-16"])
            let (cte, body) = friendlyBody(text)
            let types = Bool.random(using: &random) ? ["text/plain; charset=utf-8", other] : [other, "text/plain; charset=utf-8"]
            variant = "duplicate Content-Type (\(types.joined(separator: " | ")))"
            return envelope(body: place("Content-Type: \(types[0])\nContent-Type: \(types[1])\nContent-Transfer-Encoding: \(cte)\n\n\(body)\n"))
        case 1:
            let encoded = pick(["base64", "quoted-printable"])
            let body = encoded == "base64" ? Encode.base64(Array(text.utf8)) : quotedPrintable(Array(text.utf8))
                .replacingOccurrences(of: "[", with: "=5B").replacingOccurrences(of: "]", with: "=5D")
            let other = pick(["7bit", "8bit", "binary", encoded == "base64" ? "quoted-printable" : "base64"])
            let order = Bool.random(using: &random) ? [encoded, other] : [other, encoded]
            variant = "duplicate Content-Transfer-Encoding (\(order.joined(separator: " | ")))"
            return envelope(body: place("Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: \(order[0])\nContent-Transfer-Encoding: \(order[1])\n\n\(body)\n"))
        case 2:
            let cte = pick(["x-uuencode", "uuencode", "x-uue", "uue"])
            variant = "transfer encoding \(cte)"
            return envelope(body: place(leaf("text/plain; charset=utf-8", cte: cte, body: uuencode(Array(text.utf8), name: "note.txt"))))
        case 3:
            variant = "base64 with stray '=' and garbage inside"
            let bytes = Array(text.utf8), cut = number(1...max(1, bytes.count - 1))
            var body = Data(bytes[..<cut]).base64EncodedString() + Data(bytes[cut...]).base64EncodedString()
            for _ in 0..<number(1...4) {
                let at = body.index(body.startIndex, offsetBy: number(0...body.count))
                body.insert(contentsOf: pick(["!", "*", "%", ".", "=", "-", "~"]), at: at)
            }
            return envelope(body: place(leaf("text/plain; charset=utf-8", cte: "base64", body: wrap(body, 64))))
        case 4:
            variant = "quoted-printable with broken soft line breaks"
            var out = ""
            for character in text {
                if character == "\n" { out += "\n"; continue }
                let byteText = String(character).utf8.map { byte -> String in
                    if byte == 61 || byte > 126 || Int.random(in: 0..<4, using: &random) == 0 { return String(format: Bool.random(using: &random) ? "=%02X" : "=%02x", byte) }
                    return String(UnicodeScalar(byte))
                }.joined()
                out += byteText
                if chance(4) { out += pick(["= \n", "=\t\n", "=  \n", "=\r\r\n", "=\n"]) }
            }
            return envelope(body: place(leaf("text/plain; charset=utf-8", cte: "quoted-printable", body: out)))
        case 6:
            let spelling = pick(["BASE64", "\"base64\"", "base64 (encoded)", " Base64\t", "base64; x=1", "QUOTED-PRINTABLE", "quoted-printable (qp)"])
            variant = "Content-Transfer-Encoding spelled \(spelling.debugDescription)"
            let body = spelling.lowercased().contains("base64") ? Encode.base64(Array(text.utf8))
                : quotedPrintable(Array(text.utf8)).replacingOccurrences(of: "[", with: "=5B")
            return envelope(body: place("Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: \(spelling)\n\n\(body)\n"))
        case 7:
            let order = Bool.random(using: &random) ? ["utf-8", "utf-16le"] : ["utf-16le", "utf-8"]
            variant = "charset given twice (\(order.joined(separator: ", ")))"
            let (cte, body) = binaryBody(Encode.iconv(text, to: "UTF-16LE")!)
            return envelope(body: place(leaf("text/plain; charset=\(order[0]); charset=\(order[1])", cte: cte, body: body)))
        default:
            let value = span()
            let bytes = Array(value.utf8)
            let word: String
            switch number(0...4) {
            case 0:
                variant = "encoded-word with an empty charset"
                word = "=??B?\(Data(bytes).base64EncodedString())?="
            case 1:
                let letter = pick(["X", "b64", "Z", "QB"])
                variant = "encoded-word with the encoding letter \(letter)"
                word = "=?utf-8?\(letter)?\(Data(bytes).base64EncodedString())?="
            case 2:
                variant = "encoded-word glued to text, no white space"
                word = "re:" + "=?utf-8?B?\(Data(bytes).base64EncodedString())?=" + "done"
            case 3:
                variant = "encoded-word without its closing ?="
                word = "=?utf-8?B?\(Data(bytes).base64EncodedString())"
            default:
                variant = "encoded-word with a raw space in Q"
                word = "=?utf-8?Q?" + value.replacingOccurrences(of: "[", with: "=5B") + "?="
            }
            let where_ = pick(["Subject", "X-Note", "Content-Description"])
            variant += " in \(where_)"
            if where_ == "Subject" { return envelope(subject: word, body: place(textLeaf("body\n"))) }
            if where_ == "X-Note" { return envelope(extra: ["X-Note: " + word], body: place(textLeaf("body\n"))) }
            return envelope(body: place(textLeaf("body\n", headers: ["Content-Description: " + word])))
        }
    }

    mutating func friendlyStructure() -> String {
        variant = "one Content-Type, one well-formed transfer encoding (friendly)"
        return envelope(body: place(textLeaf(prose(spans: number(1...2)))))
    }

    /// A3: message/partial, external-body, unknown message/x-…, digest children.
    mutating func hostileMessages() -> String {
        let innerBody = textLeaf(prose())
        switch number(0...7) {
        case 0:
            variant = "message/partial"
            let inner = innerMessage(subject: Bool.random(using: &random) ? span() : nil, body: innerBody)
            return envelope(body: place(leaf("message/partial; id=\"\(letters(8))@example.org\"; number=1; total=1", body: inner)))
        case 1:
            variant = "message/external-body with a phantom body"
            let phantom = "Content-Type: text/plain; charset=utf-8\nContent-ID: <\(letters(6))@example.org>\n"
                + (Bool.random(using: &random) ? "Content-Description: " + span() + "\n" : "") + "\n" + prose()
            return envelope(body: place(leaf("message/external-body; access-type=x-mailsec; name=\"notes\"", body: phantom)))
        case 2:
            let subtype = pick(["x-" + letters(5), "news", "global", "x-mailsec-note"])
            variant = "message/\(subtype)"
            let inner = innerMessage(subject: Bool.random(using: &random) ? span() : nil, body: innerBody)
            return envelope(body: place(leaf("message/\(subtype)", body: inner)))
        case 3:
            variant = "multipart/digest children without Content-Type"
            let children = (0..<number(1...3)).map { _ in
                "\n" + innerMessage(subject: chance(2) ? span() : nil, body: textLeaf(prose()))
            }
            return envelope(body: place(multipart("digest", children)))
        case 4:
            let subtype = pick(["delivery-status", "disposition-notification"])
            variant = "message/\(subtype) fields"
            let fields = subtype == "delivery-status"
                ? "Reporting-MTA: dns; mx.example.org\n\nFinal-Recipient: rfc822; x@example.net\nAction: failed\nStatus: 5.0.0\nDiagnostic-Code: smtp; 550 " + span() + "\n"
                : "Reporting-UA: mua.example.org\nFinal-Recipient: rfc822; x@example.net\nDisposition: manual-action/MDN-sent-manually; displayed\nX-Note: " + span() + "\n"
            return envelope(body: multipart("report; report-type=\(subtype)", [textLeaf("Report.\n"), leaf("message/\(subtype)", body: fields)]))
        case 6:
            variant = "message/partial number=2 (a fragment without a header)"
            return envelope(body: place(leaf("message/partial; id=\"\(letters(8))@example.org\"; number=2; total=2", body: prose())))
        case 7:
            variant = "message/rfc822 in quoted-printable"
            let inner = innerMessage(subject: span(), body: innerBody)
            return envelope(body: place(leaf("message/rfc822", cte: "quoted-printable",
                                             body: quotedPrintable(Array(inner.utf8)).replacingOccurrences(of: "[", with: "=5B"))))
        default:
            variant = "message/rfc822 in base64"
            let inner = innerMessage(subject: span(), body: innerBody)
            return envelope(body: place(leaf("message/rfc822", cte: "base64", body: Encode.base64(Array(inner.utf8)))))
        }
    }

    mutating func friendlyMessages() -> String {
        if Bool.random(using: &random) {
            variant = "forwarded message/rfc822 (friendly)"
            let inner = innerMessage(subject: "Fwd " + span(), body: textLeaf(prose()))
            return envelope(body: multipart("mixed", [textLeaf("Forwarding.\n"), leaf("message/rfc822", body: inner)]))
        }
        variant = "multipart/digest with explicit message/rfc822 (friendly)"
        let child = "Content-Type: message/rfc822\n\n" + innerMessage(subject: span(), body: textLeaf(prose()))
        return envelope(body: multipart("digest", [child]))
    }

    /// A4: character references, CSS escapes and data: URLs in HTML.
    mutating func hostileHTML() -> String {
        let subtype = chance(4) ? "application/xhtml+xml" : "text/html"
        var html: String
        switch number(0...4) {
        case 0:
            // Where the text is: "@" stands for it.
            let (element, template) = pick([("p", "<p>@</p>"), ("title", "<head><title>@</title></head>"), ("textarea", "<textarea>@</textarea>"),
                                            ("noscript", "<noscript>@</noscript>"), ("svg", "<svg><text>@</text></svg>"), ("math", "<math><mi>@</mi></math>"),
                                            ("td", "<table><tr><td>@</td></tr></table>"), ("option", "<select><option>@</option></select>")])
            variant = "character references in <\(element)> text"
            html = template.replacingOccurrences(of: "@", with: references(span()))
        case 1:
            let (attribute, template) = pick([("meta content", "<meta name=\"description\" content=\"@\">"), ("img alt", "<img src=\"cid:x\" alt=\"@\">"),
                                              ("a href", "<a href=\"https://example.org/?q=@\">link</a>"), ("a title", "<a href=\"https://example.org/\" title=\"@\">link</a>"),
                                              ("input value", "<input type=\"text\" value=\"@\">"), ("abbr title", "<abbr title='@'>x</abbr>"),
                                              ("img src", "<img src=\"https://example.org/@\">")])
            variant = "character references in \(attribute)"
            html = template.replacingOccurrences(of: "@", with: references(span()))
        case 2:
            let text = span()
            let escaped = text.unicodeScalars.map { scalar -> String in
                switch number(0...3) {
                case 0: return "\\" + String(scalar.value, radix: 16) + " "
                case 1: return "\\" + String(repeating: "0", count: number(0...2)) + String(scalar.value, radix: 16, uppercase: true) + (chance(2) ? " " : "")
                case 2: return scalar.properties.isAlphabetic ? String(scalar) : "\\" + String(scalar)
                default: return String(scalar)
                }
            }.joined()
                // A hex escape must not run into a following hex digit.
                .replacingOccurrences(of: "(\\\\[0-9A-Fa-f]+)(?=[0-9A-Fa-f])", with: "$1 ", options: .regularExpression)
            if Bool.random(using: &random) {
                variant = "CSS escapes in <style>"
                html = "<style>p.n::after { content: \"\(escaped)\"; }</style><p class=\"n\">note</p>"
            } else {
                variant = "CSS escapes in style="
                html = "<p style='font-family: \"\(escaped)\"'>note</p>"
            }
        case 4:
            variant = "iframe srcdoc (references inside references)"
            let inner = "<p>" + references(span()) + "</p>"
            html = "<iframe srcdoc=\"" + inner.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;") + "\"></iframe>"
        default:
            let inner = prose()
            let url = Bool.random(using: &random)
                ? "data:text/plain;base64," + Data(inner.utf8).base64EncodedString()
                : "data:text/html;charset=utf-8," + Array(inner.utf8).map { byte in
                    (97...122).contains(byte) && Bool.random(using: &random) ? String(UnicodeScalar(byte)) : Encode.hex(byte) }.joined()
            let element = pick(["img src", "a href", "iframe src", "object data"])
            variant = "data: URL (\(url.contains(";base64,") ? "base64" : "percent-encoded")) in \(element)"
            let parts = element.split(separator: " ")
            html = "<\(parts[0]) \(parts[1])=\"\(url)\">" + (parts[0] == "img" ? "" : "x</\(parts[0])>")
        }
        if subtype == "application/xhtml+xml" { variant += ", as application/xhtml+xml" }
        let document = "<html><body>\n<p>Hello</p>\n\(html)\n<p>Bye</p>\n</body></html>\n"
        let (cte, body) = friendlyBody(document)
        return envelope(body: place(leaf("\(subtype); charset=utf-8", cte: cte, body: body)))
    }

    /// `text` with each character written as it is or as one of the HTML
    /// character references a browser decodes (named, decimal, hex,
    /// zero-padded, and numeric ones without the final `;` where nothing can run on).
    mutating func references(_ text: String) -> String {
        let named: [Character: [String]] = ["[": ["&lsqb;", "&lbrack;"], "]": ["&rsqb;", "&rbrack;"], "/": ["&sol;"], " ": ["&#32;"]]
        var pieces: [(text: String, numeric: Bool)] = []
        for character in text {
            let value = character.unicodeScalars.first!.value
            switch number(0...5) {
            case 0: pieces.append((String(character), false))
            case 1: pieces.append((named[character].map { pick($0) } ?? String(character), false))
            case 2: pieces.append(("&#" + String(repeating: "0", count: number(0...3)) + String(value), true))
            case 3: pieces.append(("&#" + pick(["x", "X"]) + String(repeating: "0", count: number(0...3)) + String(value, radix: 16, uppercase: Bool.random(using: &random)), true))
            default: pieces.append((named[character].map { pick($0) } ?? "&#\(value)", named[character] == nil))
            }
        }
        var out = ""
        for (index, piece) in pieces.enumerated() {
            out += piece.text
            guard piece.numeric else { continue }
            let next = index + 1 < pieces.count ? pieces[index + 1].text.first : nil
            // Without ';' only when the next character cannot continue the number.
            let canDrop = next.map { $0 == "&" || $0 == "[" || $0 == "]" || $0 == "/" } ?? false
            if !(canDrop && Bool.random(using: &random)) { out += ";" }
        }
        return out
    }

    mutating func friendlyHTML() -> String {
        variant = "HTML span in text and alt (friendly)"
        let document = "<html><body><p>Tom &amp; Jerry</p><p>\(span())</p><p>\(openMarker())<img alt=\"\(token())\">\(closeMarker())</p></body></html>\n"
        return envelope(body: place(textLeaf(document, subtype: "html")))
    }

    /// A5: charsets iconv decodes (and some it does not), anywhere one is declared.
    mutating func hostileCharset() -> (label: String, encode: (String, inout SeededRandom) -> [UInt8], unicode: Bool) {
        let bom32: [UInt8] = [0, 0, 0xFE, 0xFF], bom32le: [UInt8] = [0xFF, 0xFE, 0, 0]
        let choices: [(String, (String, inout SeededRandom) -> [UInt8], Bool)] = [
            ("UTF-7", { Encode.utf7($0, using: &$1) }, true),
            ("utf-7", { Encode.utf7($0, using: &$1) }, true),
            ("UNICODE-1-1-UTF-7", { Encode.utf7($0, using: &$1) }, true),
            ("csUnicode11UTF7", { Encode.utf7($0, using: &$1) }, true),
            ("UTF-32", { text, _ in bom32 + Encode.iconv(text, to: "UTF-32BE")! }, true),
            ("UTF-32", { text, _ in bom32le + Encode.iconv(text, to: "UTF-32LE")! }, true),
            ("UTF-32", { text, _ in Encode.iconv(text, to: "UTF-32BE")! }, true),
            ("UTF-32LE", { text, _ in Encode.iconv(text, to: "UTF-32LE")! }, true),
            ("UTF-32BE", { text, _ in Encode.iconv(text, to: "UTF-32BE")! }, true),
            ("UTF-16", { text, _ in [0xFF, 0xFE] + Encode.iconv(text, to: "UTF-16LE")! }, true),
            ("UTF-16LE", { text, _ in Encode.iconv(text, to: "UTF-16LE")! }, true),
            ("IBM037", { text, _ in Encode.iconv(text, to: "IBM037")! }, false),
            ("ebcdic-cp-us", { text, _ in Encode.iconv(text, to: "IBM037")! }, false),
            ("IBM500", { text, _ in Encode.iconv(text, to: "IBM500")! }, false),
            ("IBM1047", { text, _ in Encode.iconv(text, to: "IBM1047")! }, false),
            ("IBM273", { text, _ in Encode.iconv(text, to: "IBM273")! }, false),
            ("HZ-GB-2312", { Encode.hz($0, using: &$1) }, false),
            ("ISO-2022-JP", { Encode.iso2022jp($0, using: &$1) }, false),
        ]
        return pick(choices)
    }

    mutating func hostileCharsets() -> String {
        let (label, encode, unicode) = hostileCharset()
        let text = prose(ascii: !unicode)
        switch number(0...6) {
        case 0:
            variant = "text/plain body in \(label)"
            let (cte, body) = binaryBody(encode(text, &random))
            return envelope(body: place(leaf("text/plain; charset=\(label)", cte: cte, body: body)))
        case 1:
            variant = "encoded-word in \(label)"
            let word = Encode.encodedWords(encode("Plans " + span(), &random), charset: label, using: &random)
            return Bool.random(using: &random) ? envelope(subject: word, body: place(textLeaf("body\n")))
                : envelope(extra: ["X-Note: " + word], body: place(textLeaf("body\n")))
        case 2:
            let name = pick(["filename", "x-note", "name"])
            variant = "RFC 2231 \(name)* in \(label)"
            let param = Encode.rfc2231(name: name, bytes: encode("file " + span() + ".txt", &random), charset: label, using: &random)
            return envelope(body: place(leaf("application/octet-stream", ["Content-Disposition: attachment;\n \(param)"], cte: "base64", body: "AAECAw==")))
        case 3:
            let type = pick(["application/json", "application/xml", "text/csv", "application/octet-stream", "application/x-" + letters(4)])
            variant = "\(type) declaring charset=\(label)"
            let content = type == "application/json" ? "{\"note\": \"\(span())\"}\n" : text
            let (cte, body) = binaryBody(encode(content, &random))
            return envelope(body: place(leaf("\(type); charset=\(label)", cte: cte, body: body)))
        case 5:
            let declared = pick(["utf-8", "iso-8859-1", "windows-1252", "us-ascii"])
            let (bom, order) = pick([([UInt8(0xFF), 0xFE], "UTF-16LE"), ([0xFE, 0xFF], "UTF-16BE"), ([0xEF, 0xBB, 0xBF], "UTF-8")])
            let subtype = pick(["html", "plain"])
            variant = "a \(order) byte order mark against the declared \(declared), text/\(subtype)"
            let document = subtype == "html" ? "<html><body><p>\(span())</p></body></html>\n" : text
            let (cte, body) = binaryBody(bom + Encode.iconv(document, to: order)!)
            return envelope(body: place(leaf("text/\(subtype); charset=\(declared)", cte: cte, body: body)))
        case 6:
            let spelling = pick(["charset*=utf-8''\(label)", "charset*=''\(label)", "charset = \" \(label) \"", "charset=\"\(label.lowercased())\""])
            variant = "charset spelled \(spelling.debugDescription)"
            let (cte, body) = binaryBody(encode(text, &random))
            return envelope(body: place(leaf("text/plain; \(spelling)", cte: cte, body: body)))
        default:
            let unknown = "x-" + letters(6)
            variant = "unknown charset \(unknown) (content in \(label))"
            let (cte, body) = binaryBody(encode(text, &random))
            return envelope(body: place(leaf("text/plain; charset=\(unknown)", cte: cte, body: body)))
        }
    }

    mutating func friendlyCharsets() -> String {
        let charset = pick(["iso-8859-1", "iso-8859-15", "windows-1252", "utf-8"])
        let text = prose()
        let encoding: String.Encoding = charset == "utf-8" ? .utf8 : (charset == "windows-1252" ? .windowsCP1252 : .isoLatin1)
        let bytes = Array(text.data(using: encoding) ?? Data(text.utf8))
        variant = "text/plain in \(charset) (friendly)"
        let (cte, body) = binaryBody(bytes)
        let subject = Encode.encodedWords(Array(("Plans " + span()).data(using: encoding) ?? Data()), charset: charset, using: &random)
        return envelope(subject: subject, body: place(leaf("text/plain; charset=\(charset)", cte: cte, body: body)))
    }

    /// A6: format=flowed, iCalendar folding, text/enriched, invisible characters.
    mutating func hostileRendering() -> String {
        switch number(0...8) {
        case 8:
            // A span that only CSS (strings, attr(), text reordered or hidden by a class) or alt text composes, no other span.
            let styled = HiddenMarkerMails.styledMail(&random)
            variant = "styled markers alone: " + styled.variant
            tokens.append(styled.secret)
            return styled.mail
        case 7:
            // Markers joined by what a reader hides (hidden HTML content, a terminal escape), in a mail with no other span.
            let joined = HiddenMarkerMails.joinedMail(&random)
            variant = "joined markers alone: " + joined.variant
            tokens.append(joined.secret)
            return joined.mail
        case 5:
            // A marker only an escape-decoding viewer shows, in a mail with no other span (issue 21).
            let hidden = HiddenMarkerMails.escapedMail(&random)
            variant = "escaped markers alone: " + hidden.variant
            tokens.append(hidden.secret)
            return hidden.mail
        case 6:
            // A marker written reversed after a right-to-left override: shown forwards.
            let hidden = HiddenMarkerMails.bidiMail(&random, refusedOnly: true)
            variant = "bidi-reversed markers: " + hidden.variant
            tokens.append(hidden.shown)
            return hidden.mail
        case 0:
            variant = "format=flowed; delsp=yes, marker cut by a soft break"
            // Every soft break's space is deleted by the reader: cut anywhere, even inside a marker.
            let text = span()
            var lines: [String] = [], rest = Substring(text)
            while !rest.isEmpty {
                let take = min(rest.count, number(2...9))
                lines.append(String(rest.prefix(take)) + (take < rest.count ? " " : "")); rest = rest.dropFirst(take)
            }
            let body = "Hello,\n" + lines.joined(separator: "\n") + "\nBye\n"
            let (cte, encoded) = friendlyBody(body)
            return envelope(body: place(leaf("text/plain; charset=utf-8; format=flowed; delsp=yes", cte: cte, body: encoded)))
        case 4:
            variant = "format=flowed; delsp=yes, quoted lines, marker cut by a soft break"
            let text = span(), cut = number(1...max(1, text.count - 1))
            let quote = pick(["> ", ">> ", ">"])
            let body = "Alice wrote:\n\(quote)" + text.prefix(cut) + " \n\(quote)" + text.dropFirst(cut) + "\n\nBye\n"
            let (cte, encoded) = friendlyBody(body)
            return envelope(body: place(leaf("text/plain; charset=utf-8; format=flowed; DelSp=Yes", cte: cte, body: encoded)))
        case 1:
            variant = "iCalendar folding inside a marker"
            let property = pick(["DESCRIPTION", "SUMMARY", "LOCATION", "COMMENT"])
            var value = property + ":" + span(), folded = ""
            while value.count > 0 {
                let take = min(value.count, number(3...12))
                folded += String(value.prefix(take)); value = String(value.dropFirst(take))
                if !value.isEmpty { folded += "\r\n" + pick([" ", "\t"]) }
            }
            let calendar = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//mailsec//adv//EN\r\nBEGIN:VEVENT\r\nUID:\(letters(8))@example.org\r\nDTSTART:20261201T100000Z\r\n\(folded)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
            let (cte, body) = binaryBody(Array(calendar.utf8))
            return envelope(body: place(leaf("text/calendar; charset=utf-8; method=PUBLISH", cte: cte, body: body)))
        case 2:
            let subtype = pick(["enriched", "richtext"])
            variant = "text/\(subtype) commands inside a marker"
            let text = span().map { character -> String in
                let piece = character == "<" ? "<<" : String(character)
                return chance(3) ? pick(["<bold>", "<italic>", "</bold>", "<x-\(letters(3))>"]) + piece : piece
            }.joined()
            return envelope(body: place(leaf("text/\(subtype); charset=utf-8", cte: "7bit", body: "Hello <bold>all</bold>,\n\n" + text + "\n")))
        default:
            let invisible = ["\u{AD}", "\u{200B}", "\u{200C}", "\u{200D}", "\u{2060}", "\u{FEFF}", "\u{034F}", "\u{180E}", "\u{200E}", "\u{202A}",
                             "\u{202C}", "\u{202E}", "\u{2063}", "\u{2066}", "\u{2069}", "\u{FE0F}", "\u{E0041}"]
            let text = span().map { character -> String in
                chance(3) ? String(character) + pick(invisible) : String(character)
            }.joined()
            switch number(0...2) {
            case 0:
                variant = "invisible characters inside a marker, text/plain"
                return envelope(body: place(textLeaf("Hello,\n" + text + "\n")))
            case 1:
                variant = "invisible characters (as references) inside a marker, text/html"
                let html = text.unicodeScalars.map { invisible.contains(String($0)) ? pick(["&shy;", "&#8203;", "&#x200b;", "&zwj;", "&zwnj;", "&NoBreak;"]) : String($0) }.joined()
                return envelope(body: place(textLeaf("<html><body><p>\(html)</p></body></html>\n", subtype: "html")))
            default:
                variant = "invisible characters inside a marker, Subject"
                return envelope(subject: Encode.encodedWords(Array(text.utf8), charset: "utf-8", using: &random), body: place(textLeaf("body\n")))
            }
        }
    }

    mutating func friendlyRendering() -> String {
        switch number(0...2) {
        case 2:
            // Escapes and right-to-left text that show no marker, beside a real span: censored, not refused.
            variant = "escapes and right-to-left text beside a span (friendly)"
            let hebrew = pick(["\u{202B}שלום [x] עולם\u{202C}", "\u{2067}مرحبا (1)\u{2069}", "\u{202E}olleh\u{202C}"])
            let json = "{\"name\": \"Jos\\u00e9\", \"path\": \"C:\\\\temp\\\\x\", \"list\": \"[1, 2]\"}\n"
            let html = "<p>Fish &amp; chips &lt;b&gt; &#169; 100% [draft]</p>\n"
            let rtf = "{\\rtf1\\ansi Caf\\'e9 \\u233? [note]\\par }\n"
            var parts = [textLeaf(prose() + hebrew + "\n")]
            if chance(2) { parts.append(leaf("application/json", cte: "7bit", body: json)) }
            if chance(2) { parts.append(leaf("application/octet-stream; name=\"page.html\"", cte: "base64", body: Encode.base64(Array(html.utf8)))) }
            if chance(2) { parts.append(leaf("application/rtf", cte: "7bit", body: rtf)) }
            return envelope(subject: Encode.encodedWords(Array(("Notes " + hebrew).utf8), charset: "utf-8", using: &random), body: multipart("mixed", parts))
        case 0:
            variant = "format=flowed with whole markers (friendly)"
            let (cte, body) = friendlyBody("Hello, \nsee " + span() + " \nand more.\n")
            return envelope(body: place(leaf("text/plain; charset=utf-8; format=flowed", cte: cte, body: body)))
        default:
            variant = "text/calendar with an unfolded span (friendly)"
            let calendar = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:\(letters(8))@example.org\r\nSUMMARY:\(span())\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
            return envelope(body: multipart("mixed", [textLeaf(prose()), leaf("text/calendar; charset=utf-8", cte: "base64", body: Encode.base64(Array(calendar.utf8)))]))
        }
    }

    /// A7: mail encrypted already, with markers outside the ciphertext.
    mutating func encryptedMail(extra: [String] = [], subject: String = "", preamble: String = "", epilogue: String = "",
                                controlHeaders: [String] = [], controlBody: String = "Version: 1\n") -> String {
        switch number(0...2) {
        case 0:
            let b = boundary()
            let body = "Content-Type: multipart/encrypted; protocol=\"application/pgp-encrypted\"; boundary=\"\(b)\"\n\n"
                + (preamble.isEmpty ? "" : preamble + "\n")
                + "--\(b)\n" + (["Content-Type: application/pgp-encrypted"] + controlHeaders).joined(separator: "\n") + "\n\n" + controlBody
                + "--\(b)\nContent-Type: application/octet-stream; name=\"encrypted.asc\"\n\n" + ciphertext + "\n--\(b)--\n" + epilogue
            return envelope(subject: subject, extra: extra, body: body)
        case 1:
            return envelope(subject: subject, extra: extra, body: "Content-Type: text/plain; charset=us-ascii\n\n" + ciphertext + "\n")
        default:
            // A CMS ContentInfo of type enveloped-data (1.2.840.113549.1.7.3), its content random:
            // what mailsec reads of S/MIME to call it encrypted (random bytes alone are refused as falsely labelled).
            let content = (0..<300).map { _ in UInt8.random(in: 0...255, using: &random) }
            let inner: [UInt8] = [0xA0, 0x82, UInt8(content.count >> 8), UInt8(content.count & 0xFF)] + content
            let oid: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x03]
            let length = oid.count + inner.count
            let blob = Encode.base64([0x30, 0x82, UInt8(length >> 8), UInt8(length & 0xFF)] + oid + inner)
            return envelope(subject: subject, extra: extra,
                            body: "Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name=\"smime.p7m\"\nContent-Transfer-Encoding: base64\n\n" + blob)
        }
    }

    mutating func hostileEncrypted() -> String {
        switch number(0...6) {
        case 0:
            variant = "already encrypted, span in Subject"
            return encryptedMail(subject: Bool.random(using: &random) ? "Plans " + span() : Encode.encodedWords(Array(span().utf8), charset: "utf-8", using: &random))
        case 1:
            let field = pick(["X-Note", "Comments", "Keywords", "Content-Description", "Organization"])
            variant = "already encrypted, span in \(field)"
            return encryptedMail(extra: ["\(field): " + span()])
        case 2:
            variant = "PGP/MIME, span in preamble or epilogue"
            return Bool.random(using: &random) ? pgpMIME(preamble: prose()) : pgpMIME(epilogue: prose())
        case 4:
            variant = "an encrypted part beside a text with a span"
            let encrypted = Bool.random(using: &random)
                ? leaf("application/pgp-encrypted; name=\"note.asc\"", ["Content-Disposition: attachment; filename=\"note.asc\""], body: ciphertext)
                : leaf("text/plain; charset=us-ascii", body: ciphertext)
            return envelope(body: multipart("mixed", [textLeaf(prose()), encrypted]))
        case 6:
            variant = "an encrypted mail forwarded inside a plain one, span in its Subject"
            let inner = encryptedMail(subject: "Plans " + span())
                .split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.hasPrefix("Subject:") }.joined(separator: "\n")
            return envelope(body: multipart("mixed", [textLeaf("Forwarding an encrypted mail.\n"),
                                                      leaf("message/rfc822", body: "From: Carol <carol@example.com>\n" + inner)]))
        case 5:
            variant = "already encrypted, span in the From display name"
            return encryptedMail().replacingOccurrences(of: "From: Alice <alice@example.org>", with: "From: \"Alice " + span() + "\" <alice@example.org>")
        default:
            variant = "PGP/MIME, span in the version part (fields or body)"
            return Bool.random(using: &random) ? pgpMIME(controlHeaders: ["Content-Description: " + span()])
                : pgpMIME(controlBody: "Version: 1\nComment: " + span() + "\n")
        }
    }

    mutating func pgpMIME(preamble: String = "", epilogue: String = "", controlHeaders: [String] = [], controlBody: String = "Version: 1\n") -> String {
        while true {
            var copy = self
            let mail = copy.encryptedMail(preamble: preamble, epilogue: epilogue, controlHeaders: controlHeaders, controlBody: controlBody)
            if mail.contains("multipart/encrypted") { self = copy; return mail }
            _ = random.next()
        }
    }

    mutating func friendlyEncrypted() -> String {
        variant = "already encrypted, no marker (friendly: passes)"
        return encryptedMail()
    }

    // MARK: helpers

    func wrap(_ text: String, _ width: Int) -> String {
        var lines: [String] = [], rest = Substring(text)
        while !rest.isEmpty { lines.append(String(rest.prefix(width))); rest = rest.dropFirst(width) }
        return lines.joined(separator: "\n")
    }

    func uuencode(_ bytes: [UInt8], name: String) -> String {
        func char(_ value: UInt8) -> Character { value == 0 ? "`" : Character(UnicodeScalar(value + 32)) }
        var lines = ["begin 644 \(name)"]
        for start in stride(from: 0, to: bytes.count, by: 45) {
            let chunk = Array(bytes[start..<min(bytes.count, start + 45)])
            var line = String(char(UInt8(chunk.count)))
            for group in stride(from: 0, to: chunk.count, by: 3) {
                let a = chunk[group], b = group + 1 < chunk.count ? chunk[group + 1] : 0, c = group + 2 < chunk.count ? chunk[group + 2] : 0
                line.append(char(a >> 2)); line.append(char(((a & 3) << 4) | (b >> 4)))
                line.append(char(((b & 15) << 2) | (c >> 6))); line.append(char(c & 63))
            }
            lines.append(line)
        }
        return (lines + ["`", "end"]).joined(separator: "\n")
    }
}
