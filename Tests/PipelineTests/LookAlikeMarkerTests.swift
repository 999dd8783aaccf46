import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21 (the red team's fifth round): markers typed with look-alike characters passed as
/// plain text although a reader shows the marker the sender meant. Scalars whose NFKC form is the
/// marker's (full-width from a CJK input method, mathematical and circled letters) and the Turkish
/// İ and ı fold to it, so those markers are real and their spans censored; brackets beyond ASCII
/// (`【【`, `⸨`, `⟦`, `〔〔` …) and letters of another script that only look like the marker's
/// (Cyrillic `а`) make near-markers, refused (65). Ordinary CJK, Turkish, Cyrillic and
/// mathematical text without markers passes unchanged.
@Suite("Markers typed with look-alike characters")
struct LookAlikeMarkerTests {
    /// How a marker's scalars may be typed: each class gives, for an ASCII scalar of a marker,
    /// the look-alikes it may be typed as (nil: typed as itself).
    enum Kind: CaseIterable {
        case fullWidth, fullWidthBrackets, verticalForms, mathLetters, circled, turkishCaps, turkishDotless
        case homoglyphs, lenticular, tortoise, smallTortoise, corner, whiteLenticular, quill
        case doubleParenthesis, whiteSquare, mathWhiteSquare

        /// True for the classes NFKC (or Turkish case) makes the marker itself: censored, not refused.
        var folds: Bool {
            switch self {
            case .fullWidth, .fullWidthBrackets, .verticalForms, .mathLetters, .circled, .turkishCaps, .turkishDotless: true
            default: false
            }
        }

        /// `marker` typed in this class, each scalar that has a look-alike typed as one with
        /// probability `share` (at least one always).
        func typed(_ marker: String, share: Int, _ random: inout SeededRandom) -> String {
            // Brackets that look like two: the marker's pair of brackets becomes one of them.
            let single: (String, String)? = switch self {
            case .doubleParenthesis: ("\u{2E28}", "\u{2E29}")
            case .whiteSquare: ("\u{301A}", "\u{301B}")
            case .mathWhiteSquare: ("\u{27E6}", "\u{27E7}")
            default: nil
            }
            if let single {
                return marker.replacingOccurrences(of: "[[", with: single.0).replacingOccurrences(of: "]]", with: single.1)
            }
            let scalars = Array(marker.unicodeScalars)
            var choices = scalars.map { alikes(of: $0) }
            let candidates = choices.indices.filter { !choices[$0].isEmpty }
            let forced = candidates.randomElement(using: &random)!
            var out = ""
            for (index, scalar) in scalars.enumerated() {
                if !choices[index].isEmpty, index == forced || Int.random(in: 0..<100, using: &random) < share {
                    out += choices[index].randomElement(using: &random)!
                } else {
                    out.unicodeScalars.append(scalar)
                }
                choices[index] = []
            }
            return out
        }

        /// What `scalar` of a marker may be typed as in this class.
        func alikes(of scalar: Unicode.Scalar) -> [String] {
            let c = Character(scalar)
            let letter = c.isLetter
            switch self {
            case .fullWidth:
                let wide: UInt32 = scalar.value + 0xFEE0
                let upper: UInt32 = letter ? wide - 0x20 : wide
                return [String(Unicode.Scalar(wide)!), String(Unicode.Scalar(upper)!)]
            case .fullWidthBrackets: return c == "[" ? ["［"] : c == "]" ? ["］"] : []
            case .verticalForms: return c == "[" ? ["\u{FE47}"] : c == "]" ? ["\u{FE48}"] : []
            case .mathLetters:
                guard letter else { return [] }
                // Bold, italic, bold italic, sans-serif bold, monospace (small letters), bold capital.
                // (Mathematical italic small h is a hole in its block; no marker letter is h.)
                let bases: [UInt32] = [0x1D41A, 0x1D44E, 0x1D482, 0x1D5EE, 0x1D68A, 0x1D400]
                let offset: UInt32 = scalar.value - 0x61
                return bases.map { (base: UInt32) -> String in String(Unicode.Scalar(base + offset)!) }
            case .circled:
                guard letter else { return [] }
                let offset: UInt32 = scalar.value - 0x61
                return [String(Unicode.Scalar(0x24D0 + offset)!), String(Unicode.Scalar(0x24B6 + offset)!)]
            case .turkishCaps: return letter ? (c == "i" ? ["\u{130}"] : [String(c).uppercased()]) : []
            case .turkishDotless: return c == "i" ? ["\u{131}"] : []
            case .homoglyphs:
                // Cyrillic and Greek letters Unicode's confusables take for these.
                let table: [Character: [String]] = ["a": ["\u{430}", "\u{3B1}"], "e": ["\u{435}"], "p": ["\u{440}", "\u{3C1}"],
                                                    "i": ["\u{456}", "\u{3B9}"], "v": ["\u{475}", "\u{3BD}"], "r": ["\u{433}"]]
                return table[c] ?? []
            case .lenticular: return c == "[" ? ["【"] : c == "]" ? ["】"] : []
            case .tortoise: return c == "[" ? ["〔"] : c == "]" ? ["〕"] : []
            case .smallTortoise: return c == "[" ? ["﹝"] : c == "]" ? ["﹞"] : []
            case .corner: return c == "[" ? ["「", "\u{FF62}"] : c == "]" ? ["」", "\u{FF63}"] : []
            case .whiteLenticular: return c == "[" ? ["〖"] : c == "]" ? ["〗"] : []
            case .quill: return c == "[" ? ["⁅"] : c == "]" ? ["⁆"] : []
            case .doubleParenthesis, .whiteSquare, .mathWhiteSquare: return []
            }
        }
    }

    /// Where the marker stands: a text part, an encoded Subject, an RFC 2047 file name or HTML
    /// (``NearMarkerTests/mail(_:_:real:_:)`` writes the mail).
    typealias Place = NearMarkerTests.Place

    /// What Python's email package shows of each postcard (one per line of its input, base64):
    /// every header field decoded, file names, and each text part's content with HTML's references
    /// resolved; also as NFKC reads it, lower-cased (a reader's view of full-width or mathematical
    /// letters is the letters). Read apart from mailsec's own parser, in one run for all.
    static func pythonShows(_ postcards: [[UInt8]]) throws -> [[String]] {
        let script = """
            import base64, email, html, json, sys, unicodedata
            from email import policy
            for line in sys.stdin:
                message = email.message_from_bytes(base64.b64decode(line), policy=policy.default)
                seen = []
                for part in message.walk():
                    seen += [str(value) for value in part.values()]
                    if part.get_filename(): seen.append(part.get_filename())
                    if part.get_content_maintype() == "text": seen.append(html.unescape(part.get_content()))
                seen += [unicodedata.normalize("NFKC", text).lower() for text in seen]
                print(json.dumps(seen))
            """
        let input = postcards.map { Data($0).base64EncodedString() + "\n" }.joined()
        let result = try run("python3", ["-c", script], input: Array(input.utf8))
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == postcards.count, "\(result.errors)")
        return try lines.map { try JSONDecoder().decode([String].self, from: Data($0.utf8)) }
    }

    @Test("generated mails: look-alike markers are censored (NFKC-equal) or refused (look-alike brackets, homoglyphs)")
    func lookAlikes() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_41)
        var issues = 0
        var sent: [(what: String, secret: String, postcard: [UInt8])] = []
        let kinds = Kind.allCases
        for round in 0..<(kinds.count * Place.allCases.count * 6) {
            let kind = kinds[round % kinds.count]
            let place = Place.allCases[(round / kinds.count) % Place.allCases.count]
            // Which marker is typed with look-alikes: the opening one, the closing one or both.
            let which = (round / (kinds.count * Place.allCases.count)) % 3
            let share = [30, 70, 100].randomElement(using: &random)!
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let open = which == 1 ? "[[private]]" : kind.typed("[[private]]", share: share, &random)
            let close = which == 0 ? "[[/private]]" : kind.typed("[[/private]]", share: share, &random)
            let shown = open + secret + close
            let real = Bool.random(using: &random)
            let text = NearMarkerTests.mail(place, shown, real: real, &random)
            let what = "round \(round) (\(kind), \(place), real span \(real)): \(shown.debugDescription)"
            do {
                let postcard = try Postcard.censored(try MIMEMessage.parse(Array(text.utf8)))
                sent.append((what, secret, postcard.serialize()))
                if !kind.folds {
                    issues += 1
                    Issue.record("\(what): went out (censored, but a look-alike marker must be refused)")
                }
            } catch let error as PolicyError {
                if kind.folds {
                    issues += 1
                    Issue.record("\(what): refused, where the marker is the marker: \(error)")
                } else {
                    #expect(error.marker != nil, "\(what): \(error)")
                }
            }
        }
        // What went out, read by Python: the marked text must not show, in any case or form.
        for (sent, shown) in zip(sent, try Self.pythonShows(sent.map(\.postcard))) where shown.contains(where: { $0.contains(sent.secret) }) {
            issues += 1
            Issue.record("\(sent.what): the marked text went out")
        }
        #expect(issues == 0)
    }

    /// `text` as UTF-16 (little- or big-endian, with or without a byte-order mark) in an
    /// `application/octet-stream` attachment beside a text part with a span of its own.
    static func utf16Mail(_ text: String, _ random: inout SeededRandom) -> (mail: String, attachment: [UInt8], form: String) {
        let little = Bool.random(using: &random), mark = Bool.random(using: &random)
        var bytes: [UInt8] = mark ? (little ? [0xFF, 0xFE] : [0xFE, 0xFF]) : []
        for unit in text.utf16 { bytes += little ? [UInt8(unit & 0xFF), UInt8(unit >> 8)] : [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        let mail = "From: a@example.org\r\nTo: b@example.org\r\nSubject: notes\r\nMIME-Version: 1.0\r\n"
            + "Content-Type: multipart/mixed; boundary=\"u\"\r\n\r\n--u\r\nContent-Type: text/plain\r\n\r\nsee [[private]]zqx[[/private]]\r\n"
            + "--u\r\nContent-Type: application/octet-stream; name=\"notes.txt\"\r\nContent-Disposition: attachment; filename=\"notes.txt\"\r\n"
            + "Content-Transfer-Encoding: base64\r\n\r\n" + Data(bytes).base64EncodedString(options: .lineLength76Characters) + "\r\n--u--\r\n"
        return (mail, bytes, (little ? "UTF-16LE" : "UTF-16BE") + (mark ? " with its mark" : ""))
    }

    @Test("a UTF-16 attachment with a look-alike marker of any class is refused with opaque parts passed, withheld by default; ordinary UTF-16 text passes as it came")
    func utf16Attachments() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_43)
        var issues = 0
        for round in 0..<(Kind.allCases.count * 4) {
            let kind = Kind.allCases[round % Kind.allCases.count]
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let open = round % 3 == 1 ? "[[private]]" : kind.typed("[[private]]", share: 70, &random)
            let close = round % 3 == 0 ? "[[/private]]" : kind.typed("[[/private]]", share: 70, &random)
            let (mail, attachment, form) = Self.utf16Mail("notes: " + open + secret + close + " end\n", &random)
            let what = "round \(round) (\(kind), \(form)): \((open + secret + close).debugDescription)"
            for opaque in [OpaqueParts.pass, .withhold] {
                do {
                    let postcard = try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: opaque)
                    if opaque == .pass || postcard.body?.children.contains(where: { $0.content == attachment }) != false {
                        issues += 1
                        Issue.record("\(what), opaque parts \(opaque): went out (the attachment withheld: \(opaque == .withhold))")
                    }
                } catch {
                    if opaque == .withhold {
                        issues += 1
                        Issue.record("\(what): refused where it is withheld: \(error)")
                    }
                }
            }
        }
        // Ordinary UTF-16 text without markers, passed: the attachment goes out as it came.
        for (round, text) in Self.ordinary.enumerated() {
            let (mail, attachment, form) = Self.utf16Mail(text + "\n", &random)
            do {
                let message = try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: .pass)
                let passed = message.body?.children.contains { $0.content == attachment } ?? false
                #expect(passed, "ordinary \(round) (\(form)): the attachment was changed")
            } catch {
                issues += 1
                Issue.record("ordinary \(round) (\(form)) \(text.debugDescription): refused: \(error)")
            }
        }
        #expect(issues == 0)
    }

    /// Ordinary text beyond ASCII without markers: CJK brackets, Turkish, Cyrillic, mathematics.
    static let ordinary = [
        "【注意】会議は明日です", "⟦x⟧ ∈ ℝ and ⟦ f ⟧", "〔注〕参照", "「かぎ」と『二重』", "《Private》 is a film", "【private】 notes",
        "Привет, мир: [[приватно]] и [[wiki]]", "İstanbul'da PRİVATE bir ıslak gün", "ＰＲＩＶＡＴＥ　ＮＯＴＥＳ（全角）",
        "𝐩𝐫𝐢𝐯𝐚𝐭𝐞 𝑥² ⓟⓡⓘⓥⓐⓣⓔ", "⸨aside⸩ ⦅x⦆", "［注］ and ［［wiki］］", "[[privаtely]]", "〚1〛 〖2〗", "(private) ((note))",
    ]

    @Test("ordinary CJK, Turkish, Cyrillic and mathematical text without markers passes unchanged")
    func ordinaryTextPasses() throws {
        var random = SeededRandom(seed: 2026_11_27_42)
        var sent: [(what: String, shown: String, postcard: [UInt8])] = []
        for round in 0..<(Self.ordinary.count * Place.allCases.count * 2) {
            let place = Place.allCases[round % Place.allCases.count]
            let shown = Self.ordinary[(round / Place.allCases.count) % Self.ordinary.count]
            let real = Bool.random(using: &random)
            let text = NearMarkerTests.mail(place, shown, real: real, &random)
            let what = "\(place), real span \(real): \(shown.debugDescription)"
            do {
                let postcard = try Postcard.censored(try MIMEMessage.parse(Array(text.utf8)))
                sent.append((what, shown, postcard.serialize()))
            } catch {
                Issue.record("\(what): refused: \(error)")
            }
        }
        // As Python reads the postcard (the rebuilt HTML writes text beyond ASCII as references).
        for (sent, seen) in zip(sent, try Self.pythonShows(sent.map(\.postcard))) {
            #expect(seen.contains { $0.contains(sent.shown) }, "\(sent.what): changed")
        }
    }

    @Test("fold: NFKC-equal scalars fold to the marker's, one scalar to one; look-alikes do not")
    func foldAgainstNFKC() {
        // Every scalar the generated table folds to ASCII agrees with Foundation's NFKC, lower-cased.
        for ascii in 0..<128 {
            for scalar in LookAlikes.folding[ascii] where scalar.value != 0x130 && scalar.value != 0x131 {
                let nfkc = String(scalar).precomposedStringWithCompatibilityMapping.lowercased()
                #expect(nfkc == String(Unicode.Scalar(UInt8(ascii))), "U+\(String(scalar.value, radix: 16))")
            }
        }
        #expect(fold("\u{130}") == "i" && fold("\u{131}") == "i" && fold("［") == "[" && fold("𝐩") == "p" && fold("ⓟ") == "p")
        #expect(fold("\u{430}") == "\u{430}" && fold("【") == "【" && fold("⸨") == "⸨")
        #expect(Redactor.standard.hasMarkers("［［ｐｒｉｖａｔｅ］］") && Redactor.standard.hasMarkers("[[PRİVATE]]"))
        #expect(!Redactor.standard.hasMarkers("【【private】】") && Redactor.standard.hasNearMarker("【【private】】"))
        #expect(!Redactor.standard.hasNearMarker("【注意】 ⟦x⟧ [[wiki]]"))
    }
}
