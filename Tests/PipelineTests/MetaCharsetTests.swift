import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21 (a red team's round): an HTML part declared `charset=us-ascii` in MIME and
/// ISO-2022-JP in a `<meta>`. A browser opening the part as a file reads the `<meta>`, in
/// which the inner markers of `[[private]]a ESC$B[[/private]]ESC(B SECRET ESC$B[[private]]ESC(B b[[/private]]`
/// are kanji and the secret stands inside one span; mailsec read the MIME charset only,
/// censored two spans and sent the secret. An HTML part with markers whose `<meta>` charset
/// reads its bytes otherwise than the text the rebuild read is now refused (65), and the part
/// is read in its `<meta>` charsets too, so that markers only they show mark the mail.
@Suite("HTML <meta> charset against the MIME charset")
struct MetaCharsetTests {
    enum Kind: CaseIterable {
        /// The same charset in both, maybe spelt otherwise: passes.
        case same
        /// Two ASCII-compatible charsets, ASCII text: every reading is the same; passes.
        case asciiText
        /// Two ASCII-compatible charsets, text with a letter beyond ASCII: read otherwise; refused.
        case otherLetters
        /// ISO-2022-JP in the `<meta>` hides the inner markers of two spans: refused.
        case iso2022
        /// UTF-7 in the `<meta>` shows a span the MIME charset does not: refused.
        case utf7
        /// No MIME charset: the `<meta>` is the charset read; passes.
        case noMIMECharset
    }

    static let escJIS: [UInt8] = [0x1B, 0x24, 0x42], escASCII: [UInt8] = [0x1B, 0x28, 0x42]

    /// A `<meta>` declaring `label`, in one of the ways pages write it.
    static func meta(_ label: String, _ random: inout SeededRandom) -> String {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: "<meta charset=\"\(label)\">"
        case 1: "<META CharSet=\(label) >"
        case 2: "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=\(label)\">"
        case 3: "<meta content='text/html;charset=\(label)' http-equiv='content-type'/>"
        default: "<meta name=\"x\" charset = '\(label)'>"
        }
    }

    static func word(_ random: inout SeededRandom) -> String {
        String((0..<Int.random(in: 3...8, using: &random)).map { _ in "abcdefghijkmnopqrstuvwxyz".randomElement(using: &random)! })
    }

    /// A mail of `kind`, its secret, and what the part's bytes were.
    static func mail(_ kind: Kind, _ random: inout SeededRandom) -> (mail: [UInt8], secret: String) {
        let secret = "zq" + word(&random) + "x"
        var mimeCharset: String? = ["us-ascii", "utf-8", "iso-8859-1", "windows-1252"].randomElement(using: &random)!
        var metaLabel = mimeCharset!
        var body: [UInt8] = []
        func text(_ string: String, _ charset: String) -> [UInt8] {
            let encoding: String.Encoding = charset == "utf-8" ? .utf8 : charset == "us-ascii" ? .ascii : .isoLatin1
            return Array(string.data(using: encoding)!)
        }
        let filler = (0..<Int.random(in: 1...4, using: &random)).map { _ in word(&random) }.joined(separator: " ")
        switch kind {
        case .same:
            metaLabel = ["utf-8": ["UTF-8", "utf8", "utf-8"], "us-ascii": ["US-ASCII", "ascii", "us-ascii"],
                         "iso-8859-1": ["ISO-8859-1", "latin1", "iso_8859-1"], "windows-1252": ["Windows-1252", "cp1252"]][mimeCharset!]!
                .randomElement(using: &random)!
            let letters = mimeCharset == "us-ascii" ? "" : " Grüße"
            body = text("<p>\(filler)\(letters) [[private]]\(secret)[[/private]] \(filler)</p>", mimeCharset!)
        case .asciiText, .otherLetters:
            mimeCharset = ["utf-8", "iso-8859-1", "windows-1252"].randomElement(using: &random)!
            metaLabel = mimeCharset == "utf-8" ? ["iso-8859-1", "windows-1252", "iso-8859-15"].randomElement(using: &random)! : "utf-8"
            let letters = kind == .otherLetters ? " Grüße" : ""
            body = text("<p>\(filler)\(letters) [[private]]\(secret)[[/private]] \(filler)</p>", mimeCharset!)
        case .iso2022:
            mimeCharset = ["us-ascii", "utf-8", "iso-8859-1"].randomElement(using: &random)!
            metaLabel = ["iso-2022-jp", "ISO-2022-JP", "csISO2022JP"].randomElement(using: &random)!
            body = Array("<p>[[private]]\(word(&random))".utf8) + escJIS + Array("[[/private]]".utf8) + escASCII
                + Array(" \(secret) ".utf8) + escJIS + Array("[[private]]".utf8) + escASCII + Array("\(word(&random))[[/private]]</p>".utf8)
        case .utf7:
            mimeCharset = ["us-ascii", "utf-8"].randomElement(using: &random)!
            metaLabel = ["utf-7", "UTF-7"].randomElement(using: &random)!
            body = Array("<p>\(filler) +AFsAWw-private+AF0AXQ-\(secret)+AFsAWw-/private+AF0AXQ- \(filler)</p>".utf8)
        case .noMIMECharset:
            mimeCharset = nil
            metaLabel = ["iso-8859-1", "windows-1252", "iso-8859-15"].randomElement(using: &random)!
            body = text("<p>\(filler) Grüße [[private]]\(secret)[[/private]] \(filler)</p>", "iso-8859-1")
        }
        let metaTag = Array(meta(metaLabel, &random).utf8)
        let html = Bool.random(using: &random)
            ? Array("<html><head>".utf8) + metaTag + Array("</head><body>".utf8) + body + Array("</body></html>\n".utf8)
            : body + metaTag + Array("\n".utf8)
        let type = "text/html" + (mimeCharset.map { "; charset=" + $0 } ?? "")
        let head = "From: a@example.org\nTo: b@example.org\nSubject: notes\nMessage-ID: <meta@example.org>\nMIME-Version: 1.0\n"
            + "Content-Type: \(type)\nContent-Transfer-Encoding: base64\n\n"
        return (Array((head + Data(html).base64EncodedString(options: .lineLength76Characters) + "\n").utf8), secret)
    }

    /// The MIME charset of a generated mail.
    static func mimeCharsetOf(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let range = text.range(of: "charset=") else { return nil }
        return String(text[range.upperBound...].prefix { $0 != "\n" })
    }

    @Test("generated HTML parts whose <meta> charset agrees with MIME, or reads them the same, pass censored; those it reads otherwise are refused")
    func metaAgainstMIME() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_21)
        var issues = 0
        for round in 0..<300 {
            let kind = Kind.allCases[round % Kind.allCases.count]
            let (bytes, secret) = Self.mail(kind, &random)
            let refused = [.otherLetters, .iso2022, .utf7].contains(kind)
            let what = "round \(round) (\(kind))"
            do {
                let postcard = try Postcard.censored(try MIMEMessage.parse(bytes))
                let leaves = postcard.body?.walk().map(\.entity).filter { $0.kind == .leaf } ?? []
                let shown = leaves.map { String(decoding: $0.content ?? [], as: UTF8.self) }.joined()
                if refused || shown.contains(secret) {
                    issues += 1
                    Issue.record("\(what): went out\(shown.contains(secret) ? " with its secret" : "")")
                    continue
                }
                // One charset: UTF-8, in MIME and in the one <meta> the rebuild writes.
                let html = leaves.filter { $0.contentType.is("text", "html") }
                #expect(html.count == 1 && html.allSatisfy { $0.contentType.parameters["charset"]?.lowercased() == "utf-8" }, "\(what)")
                #expect(shown.components(separatedBy: "charset").count == 2 && shown.contains("<meta charset=\"utf-8\">"), "\(what): \(shown)")
                if kind == .noMIMECharset || kind == .same && Self.mimeCharsetOf(bytes) != "us-ascii" {
                    // The rebuild writes letters beyond ASCII as references.
                    #expect(shown.contains("Gr&#xFC;&#xDF;e"), "\(what): the letters were read in another charset")
                }
            } catch let error as PolicyError {
                if !refused {
                    issues += 1
                    Issue.record("\(what): refused: \(error)")
                } else {
                    #expect(error.marker?.problem == .charsetsDisagree || kind == .utf7 && error.marker != nil, "\(what): \(error)")
                }
            } catch {
                issues += 1
                Issue.record("\(what): \(error)")
            }
        }
        #expect(issues == 0)
    }

    @Test("without a marker, a <meta charset=utf-8> over Latin-1 bytes (a template's, common in ordinary mail) is no reason to refuse: redact sends the mail as it came")
    func mismatchWithoutMarkers() throws {
        // The adversarial run's control: such a part was refused (65) though nothing in the mail was marked.
        var random = SeededRandom(seed: 2026_11_27_13)
        for round in 0..<40 {
            let words = (0..<Int.random(in: 2...12, using: &random)).map { _ in Self.word(&random) }.joined(separator: " ")
            let latin1 = Array("<!DOCTYPE html>\n<html><head>\(Self.meta("utf-8", &random))</head><body>\n<p>".utf8)
                + [0x47, 0x72, 0xFC, 0xDF, 0x65, 0x20, 0x70, 0x6C, 0xAD, 0x61, 0x69, 0x6E, 0x20] + Array(words.utf8) + Array("</p>\n</body></html>\n".utf8)
            let mail = Array("From: a@example.org\nTo: b@example.org\nSubject: s\nMIME-Version: 1.0\nContent-Type: text/html; charset=iso-8859-1\nContent-Transfer-Encoding: 8bit\n\n".utf8) + latin1
            let folder = try makePrivateDirectory(prefix: "ms-meta")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let result = try run(Paths.mailsecExecutable.path, ["redact", "-"], input: mail, environment: ["HOME": folder, "PATH": "/usr/bin:/bin"])
            #expect(result.status == 0 && result.stdout == mail, "round \(round): \(result.status) \(result.errors)")
        }
    }
}
