import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21, readings a reader takes that mailsec did not (the fifth red team): each generated
/// mail is read by a real reader (Python's `email`, policy=default, with the RFC 3676 reader of
/// `flowed_reader.py`) and by mailsec (`Postcard.writeCensored`, what `mailsec redact` prints).
/// Where the reader shows a secret between markers, the postcard mailsec writes must not show it
/// to that reader (refused, or censored); mail of the same shapes without markers goes out as it
/// came, the reader showing the same text as before.
@Suite("Flowed readings: quoted flowed lines, format parameters, inline text parts joined")
struct FlowedReadingsTests {
    static let seed = UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_16

    /// One generated mail: its bytes, its secret, and whether its secret stands between markers.
    struct Mail {
        var bytes: [UInt8]
        var secret: String
        /// The generator wrote markers around the secret (else: a control, no marker anywhere).
        var marked: Bool
        var what: String
        /// What mailsec must do with a marked mail: nil, refuse or censor as it finds; else
        /// refuse it (true) or censor it (false).
        var refuse: Bool? = nil
        /// Whether the reader shows the secret marked: nil when it depends on the reader's
        /// choice (some readers show it marked, others do not); else it must be so.
        var readerMarked: Bool? = true
    }

    static func word(_ random: inout SeededRandom) -> String {
        String((0..<Int.random(in: 2...7, using: &random)).map { _ in "abcdefghijkmnopqrstuvwxyz".randomElement(using: &random)! })
    }

    static func words(_ random: inout SeededRandom, _ range: ClosedRange<Int>) -> String {
        (0..<Int.random(in: range, using: &random)).map { _ in word(&random) }.joined(separator: " ")
    }

    static let head = "From: a@example.org\r\nTo: b@example.org\r\nDate: Fri, 27 Nov 2026 08:00:00 +0000\r\n"
        + "Message-ID: <flowed@example.org>\r\nMIME-Version: 1.0\r\nSubject: re: notes\r\n"

    /// What the reader shows of each mail (``flowed_reader.py``), in order.
    static func readerViews(_ mails: [[UInt8]], flags: [String] = []) throws -> [String] {
        let folder = try makePrivateDirectory(prefix: "ms-flowed")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var paths: [String] = []
        for (index, mail) in mails.enumerated() {
            let path = folder + "/\(index).eml"
            FileManager.default.createFile(atPath: path, contents: Data(mail), attributes: [.posixPermissions: 0o600])
            paths.append(path)
        }
        let script = Paths.root.appendingPathComponent("Tests/PipelineTests/flowed_reader.py").path
        let result = try run("python3", [script] + flags + paths)
        try #require(result.status == 0, "\(result.errors)")
        let views = result.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { line in (try? JSONDecoder().decode(String.self, from: Data(line.utf8))) ?? "" }
        try #require(views.count == mails.count)
        return views
    }

    /// The postcard mailsec writes of `mail` (what `mailsec redact` prints), or nil when it refuses.
    static func postcard(_ mail: [UInt8]) throws -> (bytes: [UInt8]?, refusal: String) {
        do {
            var out: [UInt8] = []
            try Postcard.writeCensored(try MIMEMessage.parse(mail)) { out.append(contentsOf: $0) }
            return (out, "")
        } catch let error as PipelineError {
            return (nil, "\(error)")
        } catch let error as PolicyError {
            return (nil, "\(error)")
        }
    }

    /// Checks `mails` against the reader: returns the number of issues, and how many were
    /// refused and censored (for the counts in the commit).
    /// `readers`: the flags of each reader asked (``flowed_reader.py``); the mail counts as marked
    /// where any of them shows the secret marked, and none may show it in what mailsec writes.
    static func check(_ mails: [Mail], readers: [[String]] = [[]]) throws -> (issues: Int, refused: Int, censored: Int) {
        let befores = try readers.map { try readerViews(mails.map(\.bytes), flags: $0) }
        var written: [(index: Int, bytes: [UInt8])] = []
        var issues = 0, refused = 0
        for (index, mail) in mails.enumerated() {
            // Marked: a reader shows the secret, and censoring what it shows takes it out.
            let marked = befores.contains { before in
                let shown = before[index]
                let censoredView = (try? Redactor.standard.redact(shown, mode: .censor)) ?? shown
                return shown.contains(mail.secret) && !censoredView.contains(mail.secret)
            }
            // The generator's word, checked: the reader shows the secret marked exactly when it says so.
            if mail.marked ? mail.readerMarked.map({ $0 != marked }) ?? false : marked {
                issues += 1
                Issue.record("\(mail.what): the readers show \(befores.map { $0[index] }.debugDescription), marked \(mail.marked) expected")
                continue
            }
            let (bytes, refusal) = try postcard(mail.bytes)
            if let refuse = mail.refuse, mail.marked, refuse != (bytes == nil) {
                issues += 1
                Issue.record("\(mail.what): \(refuse ? "censored, not refused" : "refused, not censored: \(refusal)")")
            }
            if let bytes {
                written.append((index, bytes))
            } else if mail.marked {
                refused += 1
            } else {
                issues += 1
                Issue.record("\(mail.what): a mail without markers was refused: \(refusal)")
            }
        }
        let afters = try readers.map { try readerViews(written.map(\.bytes), flags: $0) }
        var censored = 0
        for (reader, after) in afters.enumerated() {
            for ((index, bytes), shown) in zip(written, after) {
                let mail = mails[index]
                if mail.marked {
                    if shown.contains(mail.secret) {
                        issues += 1
                        Issue.record("\(mail.what): went out, the reader \(readers[reader]) shows the secret: \(shown.debugDescription)")
                    } else if reader == 0 {
                        censored += 1
                    }
                    // Rebuilt with one unambiguous Content-Type: UTF-8, not flowed.
                    let text = String(decoding: bytes, as: UTF8.self).lowercased()
                    if reader == 0 && (text.contains("format") || text.contains("delsp")) {
                        issues += 1
                        Issue.record("\(mail.what): the postcard names a format or DelSp")
                    }
                } else if shown.replacingOccurrences(of: "\r\n", with: "\n") != befores[reader][index].replacingOccurrences(of: "\r\n", with: "\n") {
                    // (The mail as it came is written with LF line ends.)
                    issues += 1
                    Issue.record("\(mail.what): a mail without markers was changed for the reader \(readers[reader]): \(befores[reader][index].debugDescription) → \(shown.debugDescription)")
                }
            }
        }
        return (issues, refused, censored)
    }

    // MARK: quoted flowed lines

    /// A flowed reply quoting a paragraph (depth 1 to 3, `>` with or without a space) that
    /// holds a span, its quoted lines broken softly at random places (DelSp=yes: anywhere, the
    /// markers and the secret too; DelSp=no: after a blank); unmarked, the markers left out.
    static func quotedMail(_ random: inout SeededRandom, marked: Bool, round: Int) -> Mail {
        let secret = "zq" + word(&random) + "x"
        let delsp = Bool.random(using: &random)
        let depth = Int.random(in: 1...3, using: &random)
        // `> > ` (quote marks with blanks between): RFC 3676 reads depth 1 and `> ` as text, other
        // readers depth 2; the reader here shows the span broken, others marked.
        let spaced = depth > 1 && Int.random(in: 0..<3, using: &random) == 0
        let prefix = spaced ? String(repeating: "> ", count: depth) : String(repeating: ">", count: depth) + (Bool.random(using: &random) ? " " : "")
        let inner = Bool.random(using: &random) ? secret : words(&random, 0...2) + " " + secret + " " + words(&random, 0...2)
        let span = marked ? "[[private]]" + inner.trimmingCharacters(in: .whitespaces) + "[[/private]]"
            : inner.trimmingCharacters(in: .whitespaces)
        let paragraph = Array(words(&random, 1...5) + " " + span + " " + words(&random, 0...4))
        // Soft breaks: before a letter or bracket (a break before a blank would make that blank
        // space-stuffing under a bare `>`), with DelSp=no only after a blank.
        var cuts: Set<Int> = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let at = Int.random(in: 1..<paragraph.count, using: &random)
            guard paragraph[at] != " " else { continue }
            if delsp || paragraph[at - 1] == " " { cuts.insert(at) }
        }
        // With DelSp=yes, half the time a break inside a marker (where a reader blind to quotes misses it).
        if delsp, marked, Bool.random(using: &random) {
            let marker = Array(["[[private]]", "[[/private]]"].randomElement(using: &random)!)
            let start = (0...(paragraph.count - marker.count)).first { Array(paragraph[$0..<($0 + marker.count)]) == marker }!
            cuts.insert(start + Int.random(in: 1..<marker.count, using: &random))
        }
        var body = ""
        var line = prefix
        for (index, character) in paragraph.enumerated() {
            if cuts.contains(index) {
                body += line + (delsp ? " " : "") + "\r\n"
                line = prefix
            }
            line.append(character)
        }
        body += line + "\r\n"
        if Bool.random(using: &random) { body = "On Friday b wrote: \r\n" + body }
        if Bool.random(using: &random) { body += "\r\n" + words(&random, 1...6) + "\r\n" }
        let type = "text/plain; charset=utf-8; format=flowed" + (delsp ? "; delsp=yes" : Bool.random(using: &random) ? "; delsp=no" : "")
        let mail = head + "Content-Type: \(type)\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + body
        return Mail(bytes: Array(mail.utf8), secret: secret, marked: marked,
                    what: "round \(round) (quoted, depth \(depth)\(spaced ? " spaced" : ""), delsp \(delsp), \(cuts.count) breaks)",
                    readerMarked: spaced ? nil : true)
    }

    @Test("quoted flowed replies with a span broken across soft line breaks at any place: refused or censored as the reader shows them; without markers sent as they came")
    func quotedFlowed() throws {
        var random = SeededRandom(seed: Self.seed)
        let mails = (0..<240).map { round in Self.quotedMail(&random, marked: round % 4 != 3, round: round) }
        let (issues, refused, censored) = try Self.check(mails)
        #expect(issues == 0)
        #expect(refused + censored == mails.filter(\.marked).count)
        print("quoted flowed: \(mails.count) mails, \(refused) refused, \(censored) censored, \(issues) issues")
    }

    // MARK: format and delsp parameters

    /// The ways the red team gave `format` and `delsp` (and a few more): each with whether
    /// readers may take it otherwise than mailsec does. `%F` stands for the first format value,
    /// `%S` for the DelSp value.
    static let parameterForms: [(form: String, ambiguous: Bool)] = [
        ("format=flowed; delsp=yes", false),
        ("FORMAT=Flowed; DelSp=Yes", false),
        ("format=\"flowed\"; delsp=\"yes\"", false),
        ("delsp=yes; format=flowed", false),
        ("format=flowed; format=flowed; delsp=yes", false),
        ("format=flowed; format=fixed; delsp=yes", true),
        ("format=fixed; format=flowed; delsp=yes", true),
        ("format=flowed; FORMAT=fixed; delsp=yes", true),
        ("format=flowed; delsp=yes; format=bogus", true),
        ("format*=''flowed; format=fixed; delsp=yes", true),
        ("format=fixed; format*=utf-8''flowed; delsp=yes", true),
        ("format=flowed; delsp=yes; format*0=fixed", true),
        ("format*0=flo; format*1=wed; delsp=yes", true),
        ("format*=''%66lowed; delsp=yes", true),
        ("format=flowed (c); delsp=yes", true),
        ("format=(note) flowed; delsp=yes", true),
        ("format=flowed; delsp=yes (c)", true),
        ("format=flowed; delsp=yes; delsp=no", true),
        ("format=flowed; delsp=no; DELSP=yes", true),
        ("format=flowed; delsp*=''yes", true),
        ("format=flowed delsp=yes", true),
        ("format=flowed\tdelsp=yes", true),
    ]

    /// A flowed text (quoted or not) whose span is broken across soft breaks with DelSp=yes, one
    /// break inside a marker, under one of ``parameterForms``; unmarked, the markers left out.
    static func parameterMail(_ random: inout SeededRandom, form: (form: String, ambiguous: Bool), marked: Bool, round: Int) -> Mail {
        let secret = "zq" + word(&random) + "x"
        let prefix = Bool.random(using: &random) ? "" : String(repeating: ">", count: Int.random(in: 1...2, using: &random)) + " "
        let open = marked ? "[[private]]" : "", close = marked ? "[[/private]]" : ""
        let paragraph = words(&random, 1...4) + " " + open + secret + close + " " + words(&random, 0...3)
        let scalars = Array(paragraph)
        // One break inside each marker (marked), or at a random letter; others at random letters.
        var cuts: Set<Int> = []
        if marked {
            for marker in [Array(open), Array(close)] {
                let start = (0...(scalars.count - marker.count)).first { Array(scalars[$0..<($0 + marker.count)]) == marker }!
                cuts.insert(start + Int.random(in: 1..<marker.count, using: &random))
            }
        }
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            let at = Int.random(in: 1..<scalars.count, using: &random)
            if scalars[at] != " " { cuts.insert(at) }
        }
        var body = "", line = prefix
        for (index, character) in scalars.enumerated() {
            if cuts.contains(index) {
                body += line + " \r\n"
                line = prefix
            }
            line.append(character)
        }
        body += line + "\r\n"
        if Bool.random(using: &random) { body += "\r\n" + words(&random, 1...6) + "\r\n" }
        let charset = ["charset=utf-8; ", "charset=\"us-ascii\"; ", ""].randomElement(using: &random)!
        let mail = head + "Content-Type: text/plain; \(charset)\(form.form)\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + body
        // Where the form is ambiguous, Python may read it fixed (the first value fixed), and then
        // shows the markers broken: which readers show it marked depends on the reader.
        return Mail(bytes: Array(mail.utf8), secret: secret, marked: marked,
                    what: "round \(round) (Content-Type \(charset)\(form.form), \(prefix.isEmpty ? "unquoted" : "quoted"))",
                    refuse: form.ambiguous, readerMarked: form.ambiguous ? nil : true)
    }

    @Test("format and delsp given twice, in case variants, in RFC 2231 form or with comments: a part with a marker in any reading is refused, one given plainly censored; mail without markers sent as it came")
    func parameterForms() throws {
        var random = SeededRandom(seed: Self.seed &+ 1)
        let mails = (0..<240).map { round in
            Self.parameterMail(&random, form: Self.parameterForms[round % Self.parameterForms.count],
                               marked: (round / Self.parameterForms.count) % 3 != 2, round: round)
        }
        let (issues, refused, censored) = try Self.check(mails)
        #expect(issues == 0)
        print("format parameters: \(mails.count) mails, \(refused) refused, \(censored) censored, \(issues) issues")
    }

    // MARK: consecutive inline text parts

    /// A multipart/mixed of 2 to 5 inline text parts (plain or, a fifth, HTML; Content-Disposition
    /// inline or none; 8bit, quoted-printable or base64; UTF-8, US-ASCII or Latin-1; flowed or not) holding one text cut
    /// at random places, at least one inside a marker; or the whole span inside one part (each
    /// part read alone shows it: censored); unmarked, the markers left out. A third of the mails
    /// hold some consecutive parts in a nested multipart/mixed, shown among the others.
    /// With `choosing`, one part is written in one of ``choiceForms`` (a field given twice, or
    /// the piece inside an alternative or a related part): readers that choose otherwise show it
    /// otherwise.
    static func partsMail(_ random: inout SeededRandom, marked: Bool, whole: Bool, round: Int, choosing: Bool = false) -> Mail {
        let secret = "zq" + word(&random) + "x"
        let open = marked ? "[[private]]" : "", close = marked ? "[[/private]]" : ""
        let before = words(&random, 1...4) + " ", after = " " + words(&random, 0...3)
        let text = Array(before + open + secret + close + after)
        let count = Int.random(in: 2...5, using: &random)
        var cuts: Set<Int> = []
        if whole {
            // Cut outside the span only.
            let spanStart = before.count, spanEnd = before.count + open.count + secret.count + close.count
            while cuts.count < count - 1 {
                let at = Bool.random(using: &random) ? Int.random(in: 1...spanStart, using: &random) : Int.random(in: spanEnd..<text.count, using: &random)
                cuts.insert(at)
            }
        } else {
            if marked {
                let marker = Array([open, close].randomElement(using: &random)!)
                let start = (0...(text.count - marker.count)).first { Array(text[$0..<($0 + marker.count)]) == marker }!
                cuts.insert(start + Int.random(in: 1..<marker.count, using: &random))
            }
            while cuts.count < count - 1 { cuts.insert(Int.random(in: 1..<text.count, using: &random)) }
        }
        let bounds = [0] + cuts.sorted() + [text.count]
        var mail = head + "Content-Type: multipart/mixed; boundary=\"b-\(round)\"\r\n\r\n"
        var shapes: [String] = []
        // A third of the mails put some consecutive parts inside a nested multipart/mixed.
        let nested: ClosedRange<Int>? = bounds.count > 2 && Int.random(in: 0..<3, using: &random) == 0
            ? { let first = Int.random(in: 0..<(bounds.count - 1), using: &random)
                return first...Int.random(in: first..<(bounds.count - 1), using: &random) }() : nil
        let chosen = choosing ? Int.random(in: 0..<(bounds.count - 1), using: &random) : -1
        var choice = ""
        for index in 0..<(bounds.count - 1) {
            if index == nested?.lowerBound {
                mail += "--b-\(round)\r\nContent-Type: multipart/mixed; boundary=\"n-\(round)\"\r\n\r\n"
                shapes.append("(")
            }
            let boundary = nested?.contains(index) == true ? "n-\(round)" : "b-\(round)"
            var piece = String(text[bounds[index]..<bounds[index + 1]])
            if index == chosen {
                let form = Self.choiceForms.randomElement(using: &random)!
                choice = form.name
                shapes.append(form.name)
                mail += "--\(boundary)\r\n" + form.write(piece, words(&random, 1...3), "c-\(round)")
                if index == nested?.upperBound {
                    mail += "--n-\(round)--\r\n"
                    shapes.append(")")
                }
                continue
            }
            let charset = ["utf-8", "us-ascii", "iso-8859-1"].randomElement(using: &random)!
            // A fifth of the parts HTML: the piece bare or in an inline element or a document, its
            // brackets sometimes as references (a client shows the part's text).
            let html = Int.random(in: 0..<5, using: &random) == 0
            if html {
                if Bool.random(using: &random) { piece = piece.replacingOccurrences(of: "[", with: "&#91;") }
                piece = ["", "<span>", "<b>", "<html><body>"].randomElement(using: &random)! + piece
                    + (piece.isEmpty ? "" : ["", "</span>", "</b>", "</body></html>"].randomElement(using: &random)!)
            }
            let subtype = html ? "html" : "plain"
            let flowed = !html && Int.random(in: 0..<4, using: &random) == 0 ? "; format=flowed" : ""
            let disposition = ["Content-Disposition: inline\r\n", ""].randomElement(using: &random)!
            let encoding = ["8bit", "quoted-printable", "base64", "7bit"].randomElement(using: &random)!
            let body = encoding == "base64" ? Data(piece.utf8).base64EncodedString() : piece
            shapes.append(html ? "html " + encoding : encoding)
            mail += "--\(boundary)\r\nContent-Type: text/\(subtype); charset=\(charset)\(flowed)\r\n\(disposition)"
                + "Content-Transfer-Encoding: \(encoding)\r\n\r\n\(body)\r\n"
            if index == nested?.upperBound {
                mail += "--n-\(round)--\r\n"
                shapes.append(")")
            }
        }
        mail += "--b-\(round)--\r\n"
        return Mail(bytes: Array(mail.utf8), secret: secret, marked: marked,
                    what: "round \(round) (\(bounds.count - 1) parts \(shapes), \(whole ? "span whole" : "cut") at \(cuts.sorted()))",
                    // A span whole in a part read more than one way may be refused as not read with certainty.
                    refuse: whole && !choice.isEmpty ? nil : !whole)
    }

    /// Ways to write one piece of ``partsMail(_:marked:whole:round:choosing:)`` that readers
    /// choose among (issue 21, a hostile review's join-disp0, join-2ct-*, join-2cte-*, join-alt-middle
    /// and join-related-middle): a field given twice with different meanings, in either order
    /// (Python's email takes the first, GMime the last), or the piece inside a multipart/alternative
    /// (shown as its last part, or its plain one by a client that prefers plain text; the other
    /// part sometimes a decoy without the piece) or a multipart/related (its root shown). Each
    /// writes a part's fields and body after its delimiter line from the piece, a decoy text and
    /// a boundary of its own.
    static let choiceForms: [(name: String, write: @Sendable (String, String, String) -> String)] = {
        @Sendable func plain(_ fields: String, _ body: String) -> String {
            fields + "\r\n" + body + "\r\n"
        }
        @Sendable func utf16(_ text: String) -> String { Data([0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }).base64EncodedString() }
        @Sendable func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        let type = "Content-Type: text/plain; charset=utf-8\r\n"
        @Sendable func alternative(_ boundary: String, _ first: (String, String), _ second: (String, String)) -> String {
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"\r\n\r\n"
                + "--\(boundary)\r\nContent-Type: text/\(first.0); charset=utf-8\r\n\r\n\(first.1)\r\n"
                + "--\(boundary)\r\nContent-Type: text/\(second.0); charset=utf-8\r\n\r\n\(second.1)\r\n--\(boundary)--\r\n"
        }
        return [
            ("disposition inline, attachment", { piece, _, _ in plain(type + "Content-Disposition: inline\r\nContent-Disposition: attachment\r\n", piece) }),
            ("disposition attachment, inline", { piece, _, _ in plain(type + "Content-Disposition: attachment\r\nContent-Disposition: inline\r\n", piece) }),
            ("utf-16, us-ascii", { piece, _, _ in
                plain("Content-Type: text/plain; charset=utf-16\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: base64\r\n", utf16(piece)) }),
            ("us-ascii, utf-16", { piece, _, _ in
                plain("Content-Type: text/plain; charset=us-ascii\r\nContent-Type: text/plain; charset=utf-16\r\nContent-Transfer-Encoding: base64\r\n", utf16(piece)) }),
            ("text, octet-stream", { piece, _, _ in plain(type + "Content-Type: application/octet-stream\r\n", piece) }),
            ("octet-stream, text", { piece, _, _ in plain("Content-Type: application/octet-stream\r\n" + type, piece) }),
            ("base64, 7bit", { piece, _, _ in plain(type + "Content-Transfer-Encoding: base64\r\nContent-Transfer-Encoding: 7bit\r\n", base64(piece)) }),
            ("7bit, base64", { piece, _, _ in plain(type + "Content-Transfer-Encoding: 7bit\r\nContent-Transfer-Encoding: base64\r\n", base64(piece)) }),
            ("alternative of both", { piece, _, boundary in alternative(boundary, ("plain", piece), ("html", "<span>" + piece + "</span>")) }),
            ("alternative, plain with the piece", { piece, decoy, boundary in alternative(boundary, ("plain", piece), ("html", "<p>" + decoy + "</p>")) }),
            ("alternative, html with the piece", { piece, decoy, boundary in alternative(boundary, ("plain", decoy), ("html", "<b>" + piece + "</b>")) }),
            ("alternative, its plain part's type given twice", { piece, decoy, boundary in
                "Content-Type: multipart/alternative; boundary=\"\(boundary)\"\r\n\r\n"
                    + "--\(boundary)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Type: application/octet-stream\r\n\r\n\(piece)\r\n"
                    + "--\(boundary)\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>\(decoy)</p>\r\n--\(boundary)--\r\n" }),
            ("related", { piece, _, boundary in
                "Content-Type: multipart/related; boundary=\"\(boundary)\"\r\n\r\n--\(boundary)\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
                    + "<span>\(piece)</span>\r\n--\(boundary)\r\nContent-Type: image/gif\r\nContent-ID: <i1@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                    + "R0lGODlhAQABAAAAACw=\r\n--\(boundary)--\r\n" }),
        ]
    }()

    /// The readers ``inlinePartsEveryReader()`` asks: each way of choosing (``flowed_reader.py``'s
    /// flags: the first fields or the last, the last alternative or the plain one).
    static let choosingReaders = [["--chooses"], ["--last-fields"], ["--plain-alternative"], ["--last-fields", "--plain-alternative"]]

    @Test("markers cut across consecutive inline text parts, shown as one text by readers: refused; a span whole in one part censored; the same parts without markers sent as they came")
    func inlinePartsJoined() throws {
        var random = SeededRandom(seed: Self.seed &+ 2)
        let mails = (0..<240).map { round in Self.partsMail(&random, marked: round % 4 != 3, whole: round % 4 == 2, round: round) }
        let (issues, refused, censored) = try Self.check(mails)
        #expect(issues == 0)
        print("inline parts: \(mails.count) mails, \(refused) refused, \(censored) censored, \(issues) issues")
    }

    @Test("inline text parts where readers choose (a field given twice, an alternative, a related part): a marker any reader shows across parts refused; without markers sent as every reader saw it")
    func inlinePartsEveryReader() throws {
        var random = SeededRandom(seed: Self.seed &+ 3)
        let mails = (0..<192).map { round in
            Self.partsMail(&random, marked: round % 4 != 3, whole: round % 4 == 2, round: round, choosing: true)
        }
        let (issues, refused, censored) = try Self.check(mails, readers: Self.choosingReaders)
        #expect(issues == 0)
        print("inline parts, readers choosing: \(mails.count) mails, \(refused) refused, \(censored) censored, \(issues) issues")
    }
}
