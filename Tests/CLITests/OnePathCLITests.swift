import Foundation
import TestSupport
import Testing

/// One path (issue 21, item 8): `redact`, `encrypt` and the pipe filter make
/// byte-identical postcards of the same mail, because each goes through the
/// one rebuild (`Postcard.rebuilt`, from `MailPipeline.prepare`/`write` or
/// `Postcard.censored`). What differs by design is taken out before the
/// comparison: the MIME boundaries (GMime makes them at random for every
/// multipart written) and the filter's own `X-Mailsec-Copy` tag on the first line.
@Suite("One path: redact, encrypt and the filter write the same postcard", .serialized)
struct OnePathCLITests {
    /// A mail with marked spans in the Subject, the text (in a random transfer
    /// encoding and charset), maybe an HTML alternative, a forwarded mail and
    /// a PDF the rebuild withholds.
    static func mail(_ random: inout SeededRandom, index: Int) -> (mail: [UInt8], secrets: [String]) {
        var secrets: [String] = []
        func secret() -> String {
            let word = "zq" + String((0..<8).map { _ in "bcdfghjkmnpqrstvwxz".randomElement(using: &random)! })
            secrets.append(word)
            return word
        }
        func span() -> String { "[[private]]" + secret() + "[[/private]]" }
        let text = "Hello Dora,\nthe plan: \(span()) and café.\n\(Bool.random(using: &random) ? "More: \(span())\n" : "")"
        var textPart: String
        switch Int.random(in: 0..<3, using: &random) {
        case 0: textPart = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n" + text
        case 1: textPart = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"
            + quotedPrintable(Array(text.utf8))
        default: textPart = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
            + Data(text.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) + "\n"
        }
        if Bool.random(using: &random) {
            let html = "<html><body><p onclick=\"x()\">Hi <b>\(span())</b></p><script>var s='\(secret())';</script></body></html>\n"
            textPart = "Content-Type: multipart/alternative; boundary=alt\n\n--alt\n" + textPart + "\n--alt\n"
                + "Content-Type: text/html; charset=utf-8\n\n" + html + "--alt--\n"
        }
        var parts = [textPart]
        if Bool.random(using: &random) {
            parts.append("Content-Type: message/rfc822\n\nFrom: carol@example.com\nTo: alice@example.org\nSubject: "
                         + "=?utf-8?q?fwd_" + span().replacingOccurrences(of: " ", with: "_") + "?=\n\nforwarded \(span())\n")
        }
        if Bool.random(using: &random) {
            let pdf = Data("%PDF-1.4 \(secret())".utf8).base64EncodedString()
            parts.append("Content-Type: application/pdf; name=\"r \(span()).pdf\"\nContent-Disposition: attachment; "
                         + "filename=\"r \(span()).pdf\"\nContent-Transfer-Encoding: base64\n\n\(pdf)\n")
        }
        if Bool.random(using: &random) {
            // Rich text whose commands cut a marker: paired as a reader renders it, not in the raw
            // text. The rebuild withholds it; the letter keeps it as it came (encrypt exited 65).
            let (type, open, close) = Bool.random(using: &random) ? ("richtext", "<bold>", "</bold>") : ("enriched", "<italic>", "</italic>")
            parts.append("Content-Type: text/\(type); charset=utf-8\n\nSee [[private]]\(open)\(secret())\(close)[[\(open)/pri\(close)vate]] now.\n")
        }
        let body = parts.count == 1 ? parts[0]
            : "Content-Type: multipart/mixed; boundary=outer\n\n" + parts.map { "--outer\n" + $0 + "\n" }.joined() + "--outer--\n"
        let head = "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nCc: Dora <dora@example.net>\n"
            + "Subject: notes \(span())\nDate: Wed, 25 Nov 2026 10:00:00 +0000\nMessage-ID: <one-path.\(index).\(UUID())@example.org>\n"
            + "MIME-Version: 1.0\n"
        return (Array((head + body).utf8), secrets)
    }

    /// `bytes` with every MIME boundary (declared in a Content-Type field)
    /// replaced by `BOUNDARY-n`, n in the order the boundaries are declared.
    static func normalized(_ bytes: [UInt8]) -> String {
        var text = String(decoding: bytes, as: UTF8.self)
        let pattern = try! NSRegularExpression(pattern: #"boundary="?([^";\s]+)"?"#, options: [.caseInsensitive])
        let found = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
        var seen: [String] = []
        for boundary in found where !seen.contains(boundary) { seen.append(boundary) }
        for (index, boundary) in seen.enumerated() { text = text.replacingOccurrences(of: boundary, with: "BOUNDARY-\(index)") }
        return text
    }

    /// A pipe filter's configuration whose MTA (a script in `mta`) files each
    /// copy it is handed (`n.eml`) and its arguments (`n.args`).
    static func recordingFilter(_ home: TemporaryGnuPGHome) throws -> (config: String, mta: String) {
        let mta = home.path + "/mta"
        mkdir(mta, 0o700)
        let sendmail = mta + "/sendmail"
        try """
            #!/bin/sh
            n=$(ls '\(mta)' | grep -c '\\.eml$')
            cat > '\(mta)'/$n.eml
            printf '%s\\n' "$*" > '\(mta)'/$n.args
            """.write(toFile: sendmail, atomically: true, encoding: .utf8)
        chmod(sendmail, 0o700)
        let config = home.path + "/filter.toml"
        try """
            gnupg_home = "\(home.path)"
            log = "none"
            [reinject]
            method = "sendmail"
            sendmail = ["\(sendmail)"]
            [journal]
            directory = "\(home.path)/journal"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        return (config, mta)
    }

    /// `mail` through the pipe filter (``recordingFilter(_:)``) from alice to
    /// bob (a key) and dora (none): its result, and the copy handed on for dora
    /// (the postcard), if any. The MTA's folder is emptied first.
    static func filtered(_ mail: [UInt8], config: String, mta: String, home: TemporaryGnuPGHome) throws -> (ProcessResult, [UInt8]?) {
        for name in try FileManager.default.contentsOfDirectory(atPath: mta) where name != "sendmail" {
            try FileManager.default.removeItem(atPath: mta + "/" + name)
        }
        let result = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--", "bob@example.org", "dora@example.net"],
                                 input: mail, home: home)
        var handed: [UInt8]?
        for number in 0..<2 {
            guard let arguments = try? String(contentsOfFile: mta + "/\(number).args", encoding: .utf8) else { continue }
            if arguments.hasSuffix("dora@example.net\n") && !arguments.contains("bob@") {
                handed = Array(try Data(contentsOf: URL(fileURLWithPath: mta + "/\(number).eml")))
            }
        }
        return (result, handed)
    }

    @Test("generated mails with marked spans: the postcard of redact, of encrypt --out and the one the pipe filter hands on are the same bytes (boundaries aside)")
    func samePostcard() throws {
        var random = SeededRandom(seed: 2611)
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let (config, mta) = try Self.recordingFilter(home)
            for index in 0..<8 {
                let (mail, secrets) = Self.mail(&random, index: index)
                let what = "mail \(index):\n\(String(decoding: mail, as: UTF8.self))"

                let redacted = try mailsec(["redact", "-"], input: mail, home: home)
                try #require(redacted.status == 0, "\(what)\n\(redacted.errors)")

                let out = home.path + "/out-\(index)"
                let encrypted = try mailsec(["encrypt", "--out", out, "-"], input: mail, home: home)
                try #require(encrypted.status == 0, "\(what)\n\(encrypted.errors)")
                let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                    as? [String: Any])
                let copies = try #require(manifest["copies"] as? [[String: Any]])
                #expect(copies.map { $0["kind"] as? String } == ["letter", "postcard"], "\(what)")
                let postcardFile = try #require(copies.first { $0["kind"] as? String == "postcard" }?["file"] as? String)
                let encryptedPostcard = Array(try Data(contentsOf: URL(fileURLWithPath: out + "/" + postcardFile)))

                let (filtered, handed) = try Self.filtered(mail, config: config, mta: mta, home: home)
                try #require(filtered.status == 0, "\(what)\n\(filtered.errors)")
                var filterPostcard = try #require(handed, "the filter handed a postcard to dora")
                // The filter's loop tag comes first, a line of its own.
                let firstLine = try #require(filterPostcard.firstIndex(of: 10))
                #expect(String(decoding: filterPostcard[..<firstLine], as: UTF8.self).hasPrefix("X-Mailsec-Copy: "))
                filterPostcard.removeSubrange(...firstLine)

                let postcards = [("redact", redacted.stdout), ("encrypt", encryptedPostcard), ("filter", filterPostcard)]
                for (command, bytes) in postcards {
                    let text = String(decoding: bytes, as: UTF8.self)
                    #expect(!secrets.contains { text.contains($0) }, "\(command): a secret in the postcard\n\(text)")
                    #expect(text.contains("█") || text.contains("=E2=96=88") || text.contains("4paI"), "\(command): the placeholder")
                }
                let reference = Self.normalized(redacted.stdout)
                #expect(Self.normalized(encryptedPostcard) == reference, "encrypt differs from redact, \(what)")
                #expect(Self.normalized(filterPostcard) == reference, "the filter differs from redact, \(what)")
            }
        }
    }
}
