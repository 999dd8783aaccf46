import Foundation
import TestSupport
import Testing

/// A mail with a marked span and a PDF mailsec does not read.
func opaqueMail(markedPDF: Bool = false) -> [UInt8] {
    let pdf = Data(Array("%PDF-1.4 zqpdfbody ".utf8) + (markedPDF ? Array("[[private]]zqinpdf[[/private]]".utf8) : []))
    return Array("""
        From: alice@example.org
        To: nobody@example.org
        Subject: report
        MIME-Version: 1.0
        Content-Type: multipart/mixed; boundary=b

        --b
        Content-Type: text/plain

        see [[private]]zqclispan[[/private]] attached
        --b
        Content-Type: application/pdf; name="r [[private]]zqfilename[[/private]].pdf"
        Content-Disposition: attachment; filename="r [[private]]zqfilename[[/private]].pdf"
        Content-Transfer-Encoding: base64

        \(pdf.base64EncodedString())
        --b--

        """.utf8)
}

@Suite("opaque_parts from the command line and the filter", .serialized)
struct OpaquePartsCLITests {
    /// What each setting must do with `opaqueMail()`, checked on the postcard's bytes (nil: refused, 65).
    func expectPostcard(_ postcard: String?, _ setting: String, status: Int32, errors: String, sourceLocation: SourceLocation = #_sourceLocation) {
        switch setting {
        case "refuse":
            #expect(status == 65 && postcard == nil, "\(errors)", sourceLocation: sourceLocation)
            #expect(errors.contains("opaque_parts") && !errors.contains("zq"), "\(errors)", sourceLocation: sourceLocation)
        default:
            #expect(status == 0, "\(errors)", sourceLocation: sourceLocation)
            let postcard = postcard ?? ""
            #expect(!postcard.contains("zqclispan") && !postcard.contains("zqfilename"), sourceLocation: sourceLocation)
            let pdf = Data("%PDF-1.4 zqpdfbody ".utf8).base64EncodedString()
            // Passed, the PDF may be written as it is (7-bit) or in base64.
            let hasPDF = postcard.contains("zqpdfbody") || postcard.contains(pdf)
            if setting == "pass" {
                #expect(hasPDF, "\(postcard)", sourceLocation: sourceLocation)
            } else {
                #expect(!hasPDF && postcard.contains("held back"), "\(postcard)", sourceLocation: sourceLocation)
                #expect(postcard.contains("r =E2=96=88") || postcard.contains("r █"), "the note names the file by its censored name", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("redact and encrypt: withhold (the default) replaces the PDF by a note, pass sends it, refuse refuses (65)")
    func commands() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            for setting in ["withhold", "pass", "refuse", nil] {
                let options = setting.map { ["--opaque-parts", $0] } ?? []
                let redacted = try mailsec(["redact"] + options + ["-"], input: opaqueMail(), home: home)
                expectPostcard(redacted.status == 0 ? redacted.output : nil, setting ?? "withhold", status: redacted.status,
                               errors: redacted.errors)
                let out = home.path + "/out-\(setting ?? "default")"
                let encrypted = try mailsec(["encrypt", "--out", out] + options + ["-"], input: opaqueMail(), home: home)
                let postcard = try? String(contentsOfFile: out + "/1-postcard.eml", encoding: .utf8)
                expectPostcard(postcard, setting ?? "withhold", status: encrypted.status, errors: encrypted.errors)
                if setting == "refuse" { #expect(!FileManager.default.fileExists(atPath: out)) }
            }
            // pass: a marker in the passed part's bytes refuses the mail.
            let marked = try mailsec(["redact", "--opaque-parts", "pass", "-"], input: opaqueMail(markedPDF: true), home: home)
            #expect(marked.status == 65 && marked.output.isEmpty)
            expectOneLine(marked)
            #expect(!marked.errors.contains("zq"))
            #expect(try mailsec(["redact", "--opaque-parts", "maybe", "-"], input: opaqueMail(), home: home).status == 64)
        }
    }

    @Test("plan lists what the postcard withholds, passes or refuses, in text and JSON")
    func plan() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let text = try mailsec(["plan", "-"], input: opaqueMail(), home: home)
            #expect(text.status == 0, "\(text.errors)")
            #expect(text.output.contains("postcard parts withheld") && text.output.contains("application/pdf"), "\(text.output)")
            #expect(!text.output.contains("zq"))
            let passed = try mailsec(["plan", "--opaque-parts", "pass", "-"], input: opaqueMail(), home: home)
            #expect(passed.status == 0 && passed.output.contains("postcard parts passed unread:\n  part 2 (application/pdf)"), "\(passed.output)")
            #expect(!passed.output.contains("withheld") && !passed.output.contains("zq"), "\(passed.output)")
            // What the HTML allow-list drops is listed too, in text and JSON, without the content.
            let html = Array("""
                From: alice@example.org
                To: nobody@example.org
                Subject: s
                MIME-Version: 1.0
                Content-Type: text/html; charset=utf-8

                <p onclick="zqhandler()">hi [[private]]zqhtmlspan[[/private]]</p><script>zqscript()</script>

                """.utf8)
            let dropped = try mailsec(["plan", "-"], input: html, home: home)
            #expect(dropped.status == 0, "\(dropped.errors)")
            let droppedLines = try #require(dropped.output.components(separatedBy: "postcard parts dropped by the HTML allow-list:\n").last)
            #expect(droppedLines.contains("part 1 (text/html)") && droppedLines.contains("script"), "\(dropped.output)")
            #expect(!dropped.output.contains("zq"), "\(dropped.output)")
            let droppedJSON = try mailsec(["plan", "--json", "-"], input: html, home: home)
            let droppedObject = try #require(try JSONSerialization.jsonObject(with: Data(droppedJSON.stdout)) as? [String: Any])
            let list = try #require(droppedObject["droppedByAllowList"] as? [String], "\(droppedJSON.output)")
            #expect(list.contains { $0.contains("script") } && list.allSatisfy { !$0.contains("zq") }, "\(list)")
            #expect((droppedObject["withheldParts"] as? [String])?.isEmpty == true, "\(droppedJSON.output)")
            for (setting, key) in [("withhold", "withheldParts"), ("pass", "passedParts"), ("refuse", "refusedParts")] {
                let json = try mailsec(["plan", "--json", "--opaque-parts", setting, "-"], input: opaqueMail(), home: home)
                #expect(json.status == 0, "\(json.errors)")
                let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [String: Any])
                let parts = try #require(object[key] as? [String], "\(json.output)")
                #expect(parts.count == 1 && parts[0].contains("part 2 (application/pdf)"), "\(parts)")
                #expect(object["droppedByAllowList"] is [String])
                #expect(!json.output.contains("zq"))
            }
        }
    }

    @Test("the filter follows opaque_parts in filter.toml")
    func filter() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            for setting in ["withhold", "pass", "refuse"] {
                let peer = try RecordingSMTPServer()
                let config = home.path + "/filter-\(setting).toml"
                try """
                    gnupg_home = "\(home.path)"
                    log = "none"
                    opaque_parts = "\(setting)"
                    [reinject]
                    method = "smtp"
                    port = \(peer.port)
                    [journal]
                    directory = "\(home.path)/journal-\(setting)"
                    """.write(toFile: config, atomically: true, encoding: .utf8)
                let result = try run(Paths.mailsecExecutable.path, ["filter", "--config", config, "-f", "alice@example.org", "--",
                                                                    "nobody@example.org"], input: opaqueMail(), environment: home.environment)
                let sent = peer.transactions.first?.data
                expectPostcard(result.status == 0 ? sent : nil, setting, status: result.status, errors: result.errors)
                if setting == "refuse" { #expect(peer.transactions.isEmpty) }
            }
        }
    }
}
