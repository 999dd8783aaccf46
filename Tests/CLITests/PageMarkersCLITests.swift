import Foundation
import TestSupport
import Testing

/// Issue 21, classes a and d of the red team of 27 November, through `mailsec redact`:
/// a file a browser opens as a page, declared as something else, whose span only the
/// page shows (markers cut by tags and comments, reversed across such a cut, composed by
/// CSS). Default: 0 and a postcard in which Python's `email` shows no span (the file
/// withheld); `--opaque-parts pass`: 65 with one line.
@Suite("Spans only a page shows: mailsec redact")
struct PageMarkersCLITests {
    @Test("generated page mails through mailsec redact: withheld by default, 65 with one line under --opaque-parts pass")
    func redact() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27)
        for index in 0..<12 {
            let generated = index % 3 == 2 ? HiddenMarkerMails.styledPageMail(&random).mail : HiddenMarkerMails.pageMail(&random).mail
            let mail = Array(generated.mail.utf8)
            let what = "mail \(index): \(generated.variant)\n\(generated.mail)"
            let redacted = try mailsec(["redact", "-"], input: mail)
            #expect(redacted.status == 0, "redact: \(redacted.status) \(redacted.errors)\n\(what)")
            let reading = try run("python3", ["-c", HiddenMarkerMails.pythonReader], input: redacted.stdout)
            try #require(reading.status == 0, "python3: \(reading.errors)")
            #expect(!HiddenMarkerMails.leaks(generated, in: reading.output) && !reading.output.lowercased().contains(generated.shown),
                    "redact: the span shows\n\(what)")
            let passed = try mailsec(["redact", "--opaque-parts", "pass", "-"], input: mail)
            #expect(passed.status == 65, "redact --opaque-parts pass: \(passed.status)\n\(what)")
            if passed.status == 65 { expectOneLine(passed) }
        }
    }
}
