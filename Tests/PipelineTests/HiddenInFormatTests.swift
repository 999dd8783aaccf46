import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// Issue 21, the sixth red team: text formats whose reader hides text that stands inside a
/// marker (text/enriched's `<param>`, a quoted-printable soft break in a vCard 2.1 or vCalendar
/// 1.0 value, HTML in a calendar's X-ALT-DESC, inline HTML and empty links in Markdown, RTF's
/// ignorable destinations and hidden text). Each test makes mails with the splitter at random
/// places inside both markers (or one), checks with a real reader where one is installed that it
/// shows the span, and expects each mail refused, or sent without the secret, with opaque parts
/// withheld and passed; controls without markers go out as they came.
@Suite("Text formats whose reader hides text inside a marker")
struct HiddenInFormatTests {
    static func word(_ random: inout SeededRandom) -> String {
        String((0..<Int.random(in: 3...7, using: &random)).map { _ in "abcdefghkmnpqrstuvwxyz".randomElement(using: &random)! })
    }

    /// A mail of one part of `type` holding `body` (8bit), named `name` when given.
    static func mail(_ body: String, type: String, name: String? = nil, attachment: Bool = false) -> String {
        var fields = "Content-Type: \(type)" + (name.map { "; name=\($0)" } ?? "") + "\nContent-Transfer-Encoding: 8bit\n"
        if let name { fields += "Content-Disposition: \(attachment ? "attachment" : "inline"); filename=\(name)\n" }
        return "From: a@example.org\nTo: b@example.org\nSubject: notes\nMessage-ID: <formats@example.org>\nMIME-Version: 1.0\n"
            + fields + "\n" + body + "\n"
    }

    /// `marker` with `splitter` between two of its scalars, at a random place.
    static func split(_ marker: String, _ splitter: String, _ random: inout SeededRandom) -> String {
        let scalars = Array(marker.unicodeScalars)
        let at = Int.random(in: 1..<scalars.count, using: &random)
        return String(String.UnicodeScalarView(scalars[..<at])) + splitter + String(String.UnicodeScalarView(scalars[at...]))
    }

    /// The span `[[private]]secret[[/private]]` with `splitter` inside both markers or one of them.
    static func span(_ secret: String, _ splitters: [String], _ random: inout SeededRandom) -> String {
        let which = Int.random(in: 0..<4, using: &random)
        let open = which == 1 ? "[[private]]" : split("[[private]]", splitters.randomElement(using: &random)!, &random)
        let close = which == 2 ? "[[/private]]" : split("[[/private]]", splitters.randomElement(using: &random)!, &random)
        return open + secret + close
    }

    /// What went wrong with `mail`, nil when nothing: with a span (`secret`) each mode (opaque parts
    /// withheld, passed) refuses it or sends it without the secret; without, each sends `body` as it came.
    static func problem(_ mail: String, body: String, secret: String?) -> (problem: String?, refused: Int) {
        var refused = 0
        for opaque in [OpaqueParts.withhold, .pass] {
            let out: [UInt8]
            do {
                out = try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: opaque).serialize()
            } catch {
                if secret == nil { return ("\(opaque): refused: \(error)", refused) }
                refused += 1
                continue
            }
            if let secret {
                if (try? everythingVisible(out))?.contains(where: { $0.contains(secret) }) != false { return ("\(opaque): the secret went out", refused) }
            } else if !String(decoding: out, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n").contains(body.replacingOccurrences(of: "\r\n", with: "\n")) {
                return ("\(opaque): not sent as it came", refused)
            }
        }
        return (nil, refused)
    }

    /// What a real reader shows of each of `documents`: `markdown` (Python-Markdown, then the HTML's text
    /// as Python's html.parser reads it), `alt-desc` (a calendar's X-ALT-DESC value unfolded, its escapes
    /// undone, its HTML's text), `qp` (the quoted-printable value of a card or calendar, Python's quopri).
    static func shown(_ kind: String, _ documents: [String]) throws -> [String] {
        let script = #"""
        import html.parser, json, quopri, re, sys
        kind = sys.argv[1]
        class Text(html.parser.HTMLParser):
            hidden = ("script", "style", "template", "title")
            def __init__(self):
                super().__init__(convert_charrefs=True); self.out = []; self.skip = 0
            def handle_starttag(self, tag, attrs):
                if tag in self.hidden: self.skip += 1
            def handle_endtag(self, tag):
                if tag in self.hidden: self.skip -= 1
            def handle_data(self, data):
                if not self.skip: self.out.append(data)
        def text(page):
            parser = Text(); parser.feed(page); parser.close(); return "".join(parser.out)
        def show(doc):
            if kind == "markdown":
                import markdown
                return text(markdown.markdown(doc))
            lines = doc.replace("\r\n", "\n").split("\n")
            if kind == "alt-desc":
                unfolded = re.sub(r"\n[ \t]", "", "\n".join(lines))
                value = next(l for l in unfolded.split("\n") if l.upper().startswith("X-ALT-DESC")).split(":", 1)[1]
                value = re.sub(r"\\([nN])", "\n", value)
                value = re.sub(r"\\(.)", r"\1", value)
                return text(value)
            at = next(i for i, l in enumerate(lines) if "QUOTED-PRINTABLE" in l.upper())
            value = lines[at].split(":", 1)[1]
            while value.endswith("="):
                at += 1; value += "\n" + lines[at]
            return quopri.decodestring(value.encode()).decode("utf-8")
        print(json.dumps([show(d) for d in json.load(sys.stdin)]))
        """#
        let result = try run("python3", ["-c", script, kind], input: Array(try JSONEncoder().encode(documents)))
        try #require(result.status == 0, "python3: \(result.errors)")
        return try JSONDecoder().decode([String].self, from: Data(result.stdout))
    }

    /// Runs the rounds of `make` (a body with a span, or a control without, and the mail of it); with
    /// `oracle`, a real reader must show each span as `[[private]]secret[[/private]]` and each control as made.
    static func check(_ what: String, rounds: Int, oracle: String?, seed: UInt64,
                      _ make: (_ secret: String?, inout SeededRandom) -> (body: String, mail: String, shows: String)) throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? seed)
        var made: [(body: String, mail: String, shows: String, secret: String?)] = []
        for round in 0..<rounds {
            let secret = round % 4 == 3 ? nil : "zq" + word(&random) + "x"
            let (body, mail, shows) = make(secret, &random)
            made.append((body, mail, shows, secret))
        }
        if let oracle {
            let readings = try shown(oracle, made.map(\.body))
            for (index, reading) in readings.enumerated() {
                #expect(reading.contains(made[index].shows), "\(what) round \(index): the reader shows \(reading.debugDescription)")
            }
        }
        var issues = 0, refused = 0, marked = 0
        for (index, one) in made.enumerated() {
            let (problem, refusals) = problem(one.mail, body: one.body, secret: one.secret)
            refused += refusals
            if one.secret != nil { marked += 1 }
            if let problem {
                issues += 1
                Issue.record("\(what) round \(index)\(one.secret == nil ? " (control)" : ""): \(problem)")
            }
        }
        print("\(what): \(marked) marked mails, refused \(refused) times of \(2 * marked); \(rounds - marked) controls; \(issues) issues")
        #expect(issues == 0)
    }

    @Test("text/enriched with <param>…</param> (never shown, RFC 1896) inside the markers: refused or censored; controls sent as they came")
    func enrichedParameters() throws {
        try Self.check("enriched", rounds: 48, oracle: nil, seed: 2026_11_27_31) { secret, random in
            let splitters = ["<param>x</param>", "<color><param>red</param></color>", "<fontfamily><param>Times New Roman</param></fontfamily>",
                             "<PARAM>a b</PARAM>", "<param>" + String(repeating: "q", count: 70) + "</param>", "<bold></bold>"]
            let inner = secret.map { Self.span($0, splitters, &random) } ?? Self.split("[[public]]", splitters.randomElement(using: &random)!, &random)
            let body = "hi \(Self.word(&random)) " + inner + " y"
            let type = Bool.random(using: &random) ? "text/enriched; charset=utf-8" : "text/richtext"
            return (body, Self.mail(body, type: type), "")
        }
    }

    @Test("a vCard 2.1 or vCalendar 1.0 value in quoted-printable with soft breaks inside the markers: refused or censored (quopri the reader); controls sent as they came")
    func quotedPrintableValues() throws {
        try Self.check("quoted-printable values", rounds: 48, oracle: "qp", seed: 2026_11_27_32) { secret, random in
            let shows = secret.map { "[[private]]\($0)[[/private]]" } ?? "[[public]] note"
            // Quoted-printable, a soft break at a random place inside each marker, some brackets as =5B/=5D.
            var value = ""
            var inMarker = false
            for character in shows {
                if character == "[" && !inMarker { inMarker = true }
                var written = String(character)
                if (character == "[" || character == "]") && Int.random(in: 0..<3, using: &random) == 0 {
                    written = character == "[" ? "=5B" : "=5D"
                }
                value += written
                if inMarker && character.isLetter && Int.random(in: 0..<3, using: &random) == 0 { value += "=\n" }
                if character == "]" { inMarker = false }
            }
            let lineEnd = Bool.random(using: &random) ? "\r\n" : "\n"
            let card = Bool.random(using: &random)
            let lines = card
                ? ["BEGIN:VCARD", "VERSION:2.1", "N:Doe;Jane", "NOTE;ENCODING=QUOTED-PRINTABLE;CHARSET=UTF-8:" + value, "END:VCARD"]
                : ["BEGIN:VCALENDAR", "VERSION:1.0", "BEGIN:VEVENT", "SUMMARY:m", "DESCRIPTION;ENCODING=QUOTED-PRINTABLE:" + value, "END:VEVENT", "END:VCALENDAR"]
            let body = lines.joined(separator: "\n").replacingOccurrences(of: "\n", with: lineEnd)
            let type = card ? ["text/x-vcard; charset=utf-8", "text/vcard; charset=utf-8", "text/directory"].randomElement(using: &random)!
                : ["text/x-vcalendar; charset=utf-8", "text/calendar; charset=utf-8"].randomElement(using: &random)!
            let attached = Bool.random(using: &random)
            return (body, Self.mail(body, type: type, name: attached ? (card ? "jane.vcf" : "event.vcs") : nil, attachment: attached), shows)
        }
    }

    @Test("an iCalendar X-ALT-DESC;FMTTYPE=text/html value whose HTML splits the markers with tags or comments: refused or censored (html.parser the reader); controls sent as they came")
    func calendarHTMLDescription() throws {
        try Self.check("X-ALT-DESC", rounds: 48, oracle: "alt-desc", seed: 2026_11_27_33) { secret, random in
            let splitters = ["<b></b>", "<!-- -->", "<span></span>", "<span title=\"a>b\"></span>", "<!---->", "<i\n></i>",
                             "<!-- " + String(repeating: "z", count: 80) + " -->", "<style>p{}</style>"]
            let inner = secret.map { Self.span($0, splitters, &random) } ?? Self.split("[[public]]", splitters.randomElement(using: &random)!, &random)
            let shows = secret.map { "[[private]]\($0)[[/private]]" } ?? "[[public]]"
            var html = "<html><body>room\\, \(Self.word(&random)) " + inner + " ok</body></html>"
            html = html.replacingOccurrences(of: "\n", with: "\\n")
            // Folded at 60 scalars or so, as calendars write long lines.
            var folded = "X-ALT-DESC;FMTTYPE=text/html:"
            for (index, scalar) in html.unicodeScalars.enumerated() {
                if index > 0 && index % 60 == 0 && Bool.random(using: &random) { folded += "\n " }
                folded.unicodeScalars.append(scalar)
            }
            let body = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:x", "METHOD:REQUEST", "BEGIN:VEVENT", "UID:1@example.org",
                        "DTSTART:20261127T100000Z", "SUMMARY:meeting", "DESCRIPTION:see invite", folded, "END:VEVENT", "END:VCALENDAR"]
                .joined(separator: "\r\n")
            let attached = Bool.random(using: &random)
            return (body, Self.mail(body, type: "text/calendar; charset=utf-8; method=REQUEST", name: attached ? "invite.ics" : nil, attachment: attached), shows)
        }
    }

    @Test("Markdown (text/markdown, text/x-markdown, a .md or .markdown file as text/plain or octet-stream) whose inline HTML or empty links split the markers: refused or censored (Python-Markdown the reader); controls sent as they came")
    func markdown() throws {
        try Self.check("Markdown", rounds: 64, oracle: "markdown", seed: 2026_11_27_34) { secret, random in
            let splitters = ["<b></b>", "<!-- -->", "<span></span>", "<wbr>", "<img alt=\"\">", "[](#)", "![](x)", "[](x \"t\")",
                             "<span title=\">\"></span>", "<!-- " + String(repeating: "y", count: 70) + " -->"]
            let inner = secret.map { Self.span($0, splitters, &random) } ?? Self.split("[[public]]", splitters.randomElement(using: &random)!, &random)
            let shows = secret.map { "[[private]]\($0)[[/private]]" } ?? "[[public]]"
            let body = "hi \(Self.word(&random)) " + inner + " x"
            let form = Int.random(in: 0..<4, using: &random)
            let mail = switch form {
            case 0: Self.mail(body, type: "text/markdown; charset=utf-8")
            case 1: Self.mail(body, type: "text/x-markdown; charset=utf-8")
            case 2: Self.mail(body, type: "text/plain; charset=utf-8", name: "notes.md")
            default: Self.mail(body, type: "application/octet-stream", name: "notes.markdown", attachment: true)
            }
            return (body, mail, shows)
        }
    }

    @Test("RTF (text/rtf, application/rtf, a .rtf octet-stream) with an ignorable destination {\\*…} or hidden text \\v…\\v0 inside the markers: refused or censored; controls sent as they came")
    func rtfHidden() throws {
        // No RTF reader is installed here: what readers show is the RTF specification's (1.9.1:
        // `\*` destinations a reader does not know are skipped whole; `\v` text is not shown by default).
        try Self.check("RTF", rounds: 48, oracle: nil, seed: 2026_11_27_35) { secret, random in
            let splitters = ["{\\*\\zz junk}", "\\v junk\\v0 ", "{\\v junk}", "{\\*\\bkmkstart a}", "\\v1 q\\plain ",
                             "{\\*\\generator " + String(repeating: "g", count: 80) + ";}", "{\\*\\zz {\\b nested} x}"]
            let inner = secret.map { Self.span($0, splitters, &random) } ?? Self.split("[[public]]", splitters.randomElement(using: &random)!, &random)
            let body = "{\\rtf1\\ansi hi \(Self.word(&random)) " + inner + " y\\par}"
            let form = Int.random(in: 0..<3, using: &random)
            let mail = switch form {
            case 0: Self.mail(body, type: "application/rtf", name: "memo.rtf", attachment: true)
            case 1: Self.mail(body, type: "text/rtf")
            default: Self.mail(body, type: "application/octet-stream", name: "memo.rtf", attachment: true)
            }
            return (body, mail, "")
        }
    }

    @Test("attachments read as bytes: a long run a reader hides (a comment, a tag, an RTF group or hidden text) between a marker's first two scalars: refused when passed, withheld")
    func longRunsBetweenFirstScalars() throws {
        var random = SeededRandom(seed: 2026_11_27_36)
        var issues = 0
        for round in 0..<16 {
            let secret = "zq" + Self.word(&random) + "x"
            let filler = String(repeating: Self.word(&random) + " ", count: Int.random(in: 12...40, using: &random))
            let markdown = round % 2 == 0
            let splitter = markdown
                ? ["<!-- \(filler)-->", "<span title=\"\(filler)\"></span>"][round / 2 % 2]
                : ["{\\*\\generator \(filler);}", "\\v \(filler)\\v0 "][round / 2 % 2]
            let span = "[" + splitter + "[private]]" + secret + "[" + splitter + "[/private]]"
            let body = markdown ? "hi " + span + " x" : "{\\rtf1\\ansi hi " + span + " y\\par}"
            let mail = Self.mail(body, type: "application/octet-stream", name: markdown ? "notes.md" : "memo.rtf", attachment: true)
            if let problem = Self.problem(mail, body: body, secret: secret).problem {
                issues += 1
                Issue.record("round \(round): \(problem)")
            }
            #expect(throws: (any Error).self, "round \(round): passed") {
                try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: .pass)
            }
        }
        #expect(issues == 0)
    }
}
