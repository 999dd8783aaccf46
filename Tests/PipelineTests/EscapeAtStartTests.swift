import Foundation
import MIME
import Pipeline
import TestSupport
import Testing

/// A hostile review: a bidirectional control written as an escape (`%E2%80%AE`, `\u202e`,
/// `&#x202E;`) as the very first bytes of a part made the line scan read the byte before the
/// part's buffer (a trap in a debug build, undefined behaviour in a release one).
@Suite("An escaped bidirectional control at the very start of a part")
struct EscapeAtStartTests {
    @Test("each escape of each control, first in a text part, with or without a span after it: read, never past the buffer")
    func escapeFirst() throws {
        var random = SeededRandom(seed: 2026_11_27_41)
        for escape in ["%E2%80%AE", "\\u202e", "\\u202E", "&#x202E;", "&#8238;", "\\x{202e}", "=E2=80=AE"] {
            for _ in 0..<4 {
                let after = ["", " plain words", " [[private]]Q\(random.next() % 1000)X[[/private]]", "\n%5B%5Bprivate%5D%5D"]
                    .randomElement(using: &random)!
                let mail = "From: a@example.org\nTo: b@example.org\nSubject: s\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n"
                    + escape + after + "\n"
                // Refused (a marker it cannot censor) or censored: either way it returns.
                _ = try? Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)))
            }
        }
    }
}
