import Foundation
import TestSupport
import Testing

@Suite("Read it or refuse it, from the command line")
struct ReadOrRefuseCLITests {
    @Test("redact and encrypt refuse a mail with spans and a part they cannot read: 65, one line naming the part, nothing written")
    func refusesUnreadable() throws {
        let mail = Array("""
            From: alice@example.org
            To: nobody@example.org
            Subject: s
            MIME-Version: 1.0
            Content-Type: multipart/mixed; boundary=b

            --b
            Content-Type: text/plain

            [[private]]zqcliunreadablesecret[[/private]]
            --b
            Content-Type: text/plain; charset=x-no-such-charset
            Content-Transfer-Encoding: base64

            cGxhaW4gd29yZHMK
            --b--

            """.utf8)
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let redacted = try mailsec(["redact", "-"], input: mail, home: home)
            #expect(redacted.status == 65)
            expectOneLine(redacted)
            #expect(redacted.errors.contains("part 2 (text/plain) (charset x-no-such-charset)"), "\(redacted.errors)")
            #expect(redacted.output.isEmpty && !redacted.errors.contains("zq"))
            let out = home.path + "/out"
            let encrypted = try mailsec(["encrypt", "--out", out, "-"], input: mail, home: home)
            #expect(encrypted.status == 65)
            expectOneLine(encrypted)
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }
}
