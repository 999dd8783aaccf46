import Foundation
import TestSupport
import Testing

/// Issue 21, after the rebuild: markers that only a viewer's decoding shows
/// (escapes in a file named `.html`, JSON, RTF, Markdown, `unicode_escape`
/// charsets, UTF-7) or that show reversed under a bidirectional override, in
/// a mail with no other span. `redact`, `encrypt --out` and the pipe filter
/// each either refuse with 65 and one line or send a postcard in which
/// Python's `email` package, reading as a recipient's reader does, sees no span.
@Suite("Markers only a decoding or an override shows: every path", .serialized)
struct HiddenMarkersCLITests {
    @Test("generated mails of every hidden-marker class, with and without other parts: 65 with one line, or a postcard whose Python reading shows no span")
    func everyPath() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_01)
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let (config, mta) = try OnePathCLITests.recordingFilter(home)
            for index in 0..<10 {
                let generated = index % 2 == 0 ? HiddenMarkerMails.escapedMail(&random) : HiddenMarkerMails.bidiMail(&random)
                let mail = Array(generated.mail.utf8)
                let what = "mail \(index): \(generated.variant)\n\(generated.mail)"
                func checkPostcard(_ command: String, _ bytes: [UInt8]) throws {
                    let reading = try run("python3", ["-c", HiddenMarkerMails.pythonReader], input: bytes)
                    try #require(reading.status == 0, "python3: \(reading.errors)")
                    #expect(!HiddenMarkerMails.leaks(generated, in: reading.output), "\(command): the span shows\n\(what)\n-- postcard:\n\(String(decoding: bytes, as: UTF8.self))")
                }

                let redacted = try mailsec(["redact", "-"], input: mail, home: home)
                #expect([0, 65].contains(redacted.status), "redact: \(redacted.status) \(redacted.errors)\n\(what)")
                if redacted.status == 0 { try checkPostcard("redact", redacted.stdout) } else { expectOneLine(redacted) }

                let out = home.path + "/out-\(index)"
                let encrypted = try mailsec(["encrypt", "--out", out, "-"], input: mail, home: home)
                #expect(encrypted.status == redacted.status, "encrypt: \(encrypted.status) \(encrypted.errors)\n\(what)")
                if encrypted.status == 0 {
                    let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                        as? [String: Any])
                    let copies = try #require(manifest["copies"] as? [[String: Any]])
                    let postcardFile = try #require(copies.first { $0["kind"] as? String == "postcard" }?["file"] as? String)
                    try checkPostcard("encrypt", Array(try Data(contentsOf: URL(fileURLWithPath: out + "/" + postcardFile))))
                } else {
                    expectOneLine(encrypted)
                }

                let (filtered, handed) = try OnePathCLITests.filtered(mail, config: config, mta: mta, home: home)
                #expect(filtered.status == redacted.status, "filter: \(filtered.status) \(filtered.errors)\n\(what)")
                if filtered.status == 0 {
                    try checkPostcard("filter", try #require(handed, "the filter handed a postcard to dora"))
                } else {
                    expectOneLine(filtered)
                    #expect((try FileManager.default.contentsOfDirectory(atPath: mta)).filter { $0.hasSuffix(".eml") }.isEmpty, "nothing sent")
                }
            }
        }
    }
}
