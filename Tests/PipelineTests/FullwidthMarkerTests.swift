import Foundation
import MIME
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// Issue 21, class b of the red team of 27 November: markers written in compatibility
/// forms (fullwidth `［［ｐｒｉｖａｔｅ］］`, vertical presentation forms `﹇`), which NFKC
/// folds to the markers, in ISO-2022-JP, Shift_JIS, EUC-JP and UTF-8 text parts and
/// attachments. Such a marker is a marker (``fold(_:)`` takes a scalar to its NFKC form
/// where that is one scalar, since the fifth red team): in the search that decides whether
/// a mail has spans, in the rebuild and in the check of the postcard. The test guards that
/// the sides agree: a mail no reading finds a marker in goes as it came, one mailsec finds
/// marked never shows its secret, and an ASCII marker closed by a fullwidth one is a span,
/// censored.
@Suite("Markers in compatibility forms (fullwidth, JIS encodings)")
struct FullwidthMarkerTests {
    /// Python writes the mail: `charset`, the text (the part's content), as a text part or an attachment.
    static let script = #"""
        import sys, base64
        charset, text, attached = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
        data = ("こんにちは " + text + "\n").encode(charset)
        b = base64.encodebytes(data).decode()
        if attached:
            part = ('Content-Type: application/octet-stream; name="memo.txt"\nContent-Disposition: attachment; filename="memo.txt"\n'
                    'Content-Transfer-Encoding: base64\n\n' + b)
        else:
            part = "Content-Type: text/plain; charset=" + charset + "\nContent-Transfer-Encoding: base64\n\n" + b
        sys.stdout.write("From: a@example.org\nTo: b@example.org\nSubject: notes\nMessage-ID: <fw@example.org>\nMIME-Version: 1.0\n" + part)
        """#

    /// `marker` with a random non-empty set of its scalars in a compatibility form.
    static func widened(_ marker: String, vertical: Bool, _ random: inout SeededRandom) -> String {
        var out = "", any = false
        let scalars = Array(marker.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            let last = index == scalars.count - 1
            if Bool.random(using: &random) || last && !any {
                any = true
                if vertical && scalar == "[" { out += "\u{FE47}" } else if vertical && scalar == "]" { out += "\u{FE48}" } else {
                    out.unicodeScalars.append(Unicode.Scalar(scalar.value - 0x20 + 0xFF00)!)
                }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    @Test("generated mails with markers in compatibility forms (JIS encodings and UTF-8; text parts and attachments): no side of mailsec reads a marker the other does not")
    func compatibilityForms() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27)
        for round in 0..<24 {
            let charset = ["iso-2022-jp", "shift_jis", "euc-jp", "utf-8"][round % 4]
            let vertical = charset == "utf-8" && Bool.random(using: &random)
            let secret = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            let mixed = round % 3 == 0
            let text = (mixed ? "[[private]]" : Self.widened("[[private]]", vertical: vertical, &random)) + secret + Self.widened("[[/private]]", vertical: vertical, &random)
            let attached = Bool.random(using: &random)
            let made = try run("python3", ["-c", Self.script, charset, text, attached ? "1" : "0"])
            try #require(made.status == 0, "python3: \(made.errors)")
            let message = try MIMEMessage.parse(made.stdout)
            let what = "round \(round): \(charset), \(attached ? "attachment" : "text part"), \(text)"
            let marked = Redactor.standard.readings(of: message).marker != nil
            if mixed && !attached {
                // An ASCII open marker closed by one in compatibility forms: one span, as a reader shows it, censored.
                let postcard = try Postcard.censored(try MIMEMessage.parse(made.stdout))
                let leaves = postcard.body?.walk().map(\.entity).filter { $0.kind == .leaf } ?? []
                #expect(marked, "\(what): the span not read")
                #expect(!leaves.map { String(decoding: $0.content ?? [], as: UTF8.self) }.joined().contains(secret), "\(what): the secret shows")
                continue
            }
            do {
                let postcard = try Postcard.censored(try MIMEMessage.parse(made.stdout))
                let written = postcard.serialize()
                if marked {
                    let leaves = postcard.body?.walk().map(\.entity).filter { $0.kind == .leaf } ?? []
                    let shown = leaves.map { String(decoding: $0.content ?? [], as: UTF8.self) }.joined()
                    #expect(!shown.contains(secret), "\(what): marked, yet the secret shows")
                } else {
                    #expect(!String(decoding: written, as: UTF8.self).contains("held back"), "\(what): no marker read, yet rebuilt")
                }
            } catch {
                #expect(marked, "\(what): refused without a marker read: \(error)")
            }
        }
    }
}
