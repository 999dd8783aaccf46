import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// Issue 21, a red team's sixth round: HTML a browser shows otherwise than its text reads.
/// A document inside the part (an iframe's `srcdoc`, a `data:` page in a frame, a `data:` SVG
/// image in an `<img>` or a style sheet) whose tags or comments split the markers; a ruby
/// annotation (`<rt>`) on a letter of a marker, drawn above it; and a declarative shadow root,
/// whose slots show the host's text between the root's markers, in the root's order. Each
/// went out with the marked text. Generated placements, each mail either refused or written
/// without the secret in any form a reader decodes (Python's email reading the postcard, every
/// `data:` URL decoded, references and percent escapes undone); the same shapes without markers
/// go out as they came.
@Suite("HTML shown elsewhere: documents inside a part, ruby annotations, shadow roots")
struct ShownElsewhereHTMLTests {
    /// A split of `marker` at a random place by `splitter` (an empty element, a comment).
    static func split(_ marker: String, _ splitter: String, _ random: inout SeededRandom) -> String {
        let scalars = Array(marker)
        let at = Int.random(in: 1..<scalars.count, using: &random)
        return String(scalars[..<at]) + splitter + String(scalars[at...])
    }

    /// One placement: the HTML body and the secret. `marked`: with markers; else the same without.
    static func body(_ form: Int, marked: Bool, secret: String, _ random: inout SeededRandom) -> String {
        let splitter = ["<b></b>", "<!-- -->", "<span></span>", "<i>", "<wbr>"].randomElement(using: &random)!
        let open = marked ? split("[[private]]", splitter, &random) : "", close = marked ? split("[[/private]]", splitter, &random) : ""
        let inner = "hi " + open + secret + close + " y"
        func percent(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
        }
        func reference(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
                .replacingOccurrences(of: "<", with: Bool.random(using: &random) ? "&lt;" : "<")
        }
        let svg = "<svg xmlns='http://www.w3.org/2000/svg' width='400' height='40'><text x='0' y='20'>"
            + inner.replacingOccurrences(of: "<b></b>", with: "<tspan></tspan>").replacingOccurrences(of: "<span></span>", with: "<tspan></tspan>")
                .replacingOccurrences(of: "<i>", with: "<tspan/>").replacingOccurrences(of: "<wbr>", with: "<!---->")
            + "</text></svg>"
        switch form {
        case 0: return "<p>x</p><iframe srcdoc=\"" + reference(inner) + "\"></iframe>"
        case 1: return "<p>x</p><iframe src=\"data:text/html," + percent(inner) + "\"></iframe>"
        case 2: return "<p>x</p><iframe src=\"data:text/html;base64," + Data(inner.utf8).base64EncodedString() + "\"></iframe>"
        case 3: return "<p>x</p><img src=\"data:image/svg+xml;base64," + Data(svg.utf8).base64EncodedString() + "\">"
        case 4: return "<p>x</p><img src=\"data:image/svg+xml," + percent(svg) + "\">"
        case 5: return "<style>p { background: url(\"data:image/svg+xml," + percent(svg) + "\") }</style><p>x</p>"
        case 6:
            // A ruby annotation on one letter of each marker.
            func annotated(_ marker: String) -> String {
                guard !marker.isEmpty else { return "" }
                let scalars = Array(marker)
                let letters = scalars.indices.filter { scalars[$0].isLetter }
                let at = letters.randomElement(using: &random)!
                return String(scalars[..<at]) + "<ruby>" + String(scalars[at]) + "<rt>zz</rt></ruby>" + String(scalars[(at + 1)...])
            }
            return "<p>hi " + annotated(marked ? "[[private]]" : "") + secret + annotated(marked ? "[[/private]]" : "") + " y</p>"
        case 7:
            // Both markers whole in a shadow root, the secret in the host, shown at the slot.
            let markers = marked ? ("[[private]]", "[[/private]]") : ("", "")
            return "<div><template shadowrootmode=\"open\">hi " + markers.0 + "<slot></slot>" + markers.1
                + " y</template>" + secret + "</div>"
        default:
            // Named slots put the host's pieces in the root's order.
            let text = "hi " + (marked ? "[[private]]" : "") + secret + (marked ? "[[/private]]" : "") + " y"
            let scalars = Array(text)
            let cuts = [Int.random(in: 1..<(scalars.count / 2), using: &random), Int.random(in: (scalars.count / 2)..<scalars.count, using: &random)]
            let pieces = [String(scalars[..<cuts[0]]), String(scalars[cuts[0]..<cuts[1]]), String(scalars[cuts[1]...])]
            return "<div><template shadowrootmode=\"open\"><slot name=\"a\"></slot><slot name=\"b\"></slot><slot name=\"c\"></slot></template>"
                + "<span slot=\"c\">" + pieces[2] + "</span><span slot=\"a\">" + pieces[0] + "</span><span slot=\"b\">" + pieces[1] + "</span></div>"
        }
    }

    /// Every text Python's email reads in `postcard`, with each `data:` URL's payload, references and percent escapes undone.
    static func pythonReads(_ postcards: [[UInt8]]) throws -> [String] {
        let script = """
            import base64, email, html, json, re, sys, urllib.parse
            from email import policy
            for line in sys.stdin:
                message = email.message_from_bytes(base64.b64decode(line), policy=policy.default)
                seen = []
                for part in message.walk():
                    if part.get_content_maintype() == "text":
                        text = part.get_content()
                        seen += [text, html.unescape(text), urllib.parse.unquote(html.unescape(text))]
                for text in list(seen):
                    for header, body in re.findall(r"data:([^,]*),([^\\"')\\s>]*)", text):
                        try:
                            seen.append(base64.b64decode(urllib.parse.unquote(body) + "==").decode("utf-8", "replace") if "base64" in header else urllib.parse.unquote(body))
                        except Exception:
                            pass
                print(json.dumps("\\n".join(seen)))
            """
        let input = postcards.map { Data($0).base64EncodedString() + "\n" }.joined()
        let result = try run("python3", ["-c", script], input: Array(input.utf8))
        let lines = result.output.split(separator: "\n")
        try #require(lines.count == postcards.count, "\(result.errors)")
        return try lines.map { try JSONDecoder().decode(String.self, from: Data($0.utf8)) }
    }

    @Test("a marker split inside a srcdoc, a data: page or SVG, one annotated by <rt>, or put together by a shadow root's slots: refused or written without the secret; without markers sent as they came")
    func shownElsewhere() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_19)
        var issues = 0, refused = 0
        var written: [(what: String, secret: String, postcard: [UInt8])] = []
        for round in 0..<(9 * 16) {
            let form = round % 9, marked = (round / 9) % 4 != 3
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let html = "<html><body>" + Self.body(form, marked: marked, secret: secret, &random) + "</body></html>"
            let mail = "From: a@example.org\r\nTo: b@example.org\r\nSubject: notes\r\nMIME-Version: 1.0\r\n"
                + "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                + Data(html.utf8).base64EncodedString(options: .lineLength76Characters) + "\r\n"
            let what = "round \(round) (form \(form), marked \(marked)): \(html.debugDescription)"
            for opaque in [OpaqueParts.withhold, .pass] {
                do {
                    let postcard = try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: opaque)
                    if marked {
                        written.append((what, secret, postcard.serialize()))
                    } else if postcard.body?.content != Array(html.utf8) {
                        issues += 1
                        Issue.record("\(what): a part without markers was changed")
                    }
                } catch {
                    if marked { refused += 1 } else {
                        issues += 1
                        Issue.record("\(what): refused without markers: \(error)")
                    }
                }
            }
        }
        for (sent, read) in zip(written, try Self.pythonReads(written.map(\.postcard))) where read.contains(sent.secret) {
            issues += 1
            Issue.record("\(sent.what): the marked text went out")
        }
        print("shown elsewhere: \(refused) refused, \(written.count) written, \(issues) issues")
        #expect(issues == 0)
    }
}
