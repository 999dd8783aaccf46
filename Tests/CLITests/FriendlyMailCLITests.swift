import Foundation
import TestSupport
import Testing

/// Ordinary mail that mailsec refused (65) because a name in it was not
/// read as what it means: charsets under their mail-client names, identity
/// transfer encodings that disagree only in name, comments in structured
/// fields (issue 21, "Friendly mail must not be refused").
@Suite("Friendly mail is censored, not refused")
struct FriendlyMailCLITests {
    static let secret = "zqfriendlysecret"
    static let span = "[[private]]\(secret)[[/private]]"
    static let head = "From: alice@example.org\nTo: nobody@example.org\nMIME-Version: 1.0\n"

    /// The mails, by name: each as a sender's software writes it, with a span.
    static let mails: [(String, [UInt8])] = {
        func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed]) }
        // "회의 " and "똠방각하 " in code page 949: 똠 is in UHC only, not in EUC-KR.
        let meeting: [UInt8] = [0xC8, 0xB8, 0xC0, 0xC7, 0x20]
        let uhc: [UInt8] = [0x8C, 0x63, 0xB9, 0xE6, 0xB0, 0xA2, 0xC7, 0xCF, 0x20]
        let hebrew: [UInt8] = [0xF9, 0xEC, 0xE5, 0xED, 0x20]          // שלום in ISO-8859-8
        let mac: [UInt8] = Array("Caf".utf8) + [0x8E, 0x20]           // Café in Mac OS Roman
        return [
            ("Outlook's ks_c_5601-1987, body and Subject", Array((head + "Subject: =?ks_c_5601-1987?B?"
                + base64(meeting + Array(span.utf8)) + "?=\nContent-Type: text/plain; charset=\"ks_c_5601-1987\"\n"
                + "Content-Transfer-Encoding: base64\n\n" + base64(uhc + Array((span + "\n").utf8)) + "\n").utf8)),
            ("iso-8859-8-i", Array((head + "Subject: =?iso-8859-8-i?Q?=F9=EC=E5=ED?=\nContent-Type: text/plain; charset=iso-8859-8-i\n"
                + "Content-Transfer-Encoding: 8bit\n\n").utf8) + hebrew + Array((span + "\n").utf8)),
            ("x-mac-roman", Array((head + "Subject: menu\nContent-Type: text/plain; charset=x-mac-roman\n"
                + "Content-Transfer-Encoding: 8bit\n\n").utf8) + mac + Array((span + "\n").utf8)),
            ("unknown-8bit in a forwarded Subject", Array((head + "Subject: Fwd: =?unknown-8bit?Q?R=E9union?= "
                + span + "\nContent-Type: text/plain; charset=utf-8\n\nforwarded\n").utf8)),
            ("charset=binary on an attachment (PHP)", Array((head + "Subject: report\nContent-Type: multipart/mixed; boundary=b\n\n"
                + "--b\nContent-Type: text/plain; charset=utf-8\n\nsee " + span + "\n--b\n"
                + "Content-Type: application/pdf; charset=binary; name=r.pdf\nContent-Disposition: attachment; filename=r.pdf\n"
                + "Content-Transfer-Encoding: base64\n\n" + base64(Array("%PDF-1.4\n%\u{E2}\n1 0 obj\n<<>>\nendobj\n".utf8))
                + "\n--b--\n").utf8)),
            ("a 7bit and an 8bit Content-Transfer-Encoding field (forwarded)", Array((head + "Subject: Fwd: x\n"
                + "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 7bit\nContent-Transfer-Encoding: 8bit\n\n"
                + "forwarded " + span + "\n").utf8)),
            ("Content-Transfer-Encoding: 7bit (plain text)", Array((head + "Subject: x\nContent-Type: text/plain; charset=us-ascii\n"
                + "Content-Transfer-Encoding: 7bit (plain text)\n\nhello " + span + "\n").utf8)),
            ("a .txt sent as application/octet-stream", Array((head + "Subject: notes\nContent-Type: multipart/mixed; boundary=b\n\n"
                + "--b\nContent-Type: text/plain\n\nsee " + span + " and the notes\n--b\n"
                + "Content-Type: application/octet-stream; name=notes.txt\nContent-Disposition: attachment; filename=notes.txt\n"
                + "Content-Transfer-Encoding: base64\n\n" + base64(Array("plain notes\n".utf8)) + "\n--b--\n").utf8)),
        ]
    }()

    /// Every header field and every part of `bytes` as Python's `email`
    /// (policy.default) decodes them: what a recipient's software shows.
    static func pythonReading(_ bytes: [UInt8]) throws -> String {
        let script = """
            import email, email.policy, sys
            m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
            for part in m.walk():
                for name, value in part.items():
                    print(name, str(value))
                if not part.is_multipart():
                    payload = part.get_payload(decode=True) or b""
                    try:
                        print(part.get_content() if part.get_content_maintype() == "text" else payload.decode("latin-1"))
                    except Exception:
                        print(payload.decode("latin-1"))
            """
        let result = try run("python3", ["-c", script], input: bytes)
        guard result.status == 0 else { throw ToolFailure(description: "python3 email failed: \(result.errors)") }
        return result.output
    }

    @Test("redact censors each friendly mail: exit 0, the span gone from the postcard as written and as Python reads it",
          arguments: Array(mails.indices))
    func censored(_ index: Int) throws {
        let (name, mail) = Self.mails[index]
        try withGnuPGHome { home throws in
            let result = try mailsec(["redact", "-"], input: mail, home: home)
            #expect(result.status == 0, "\(name): \(result.errors)")
            #expect(result.errors.isEmpty, "\(name): \(result.errors)")
            #expect(!result.output.isEmpty, "\(name)")
            #expect(!result.output.contains(Self.secret), "\(name)")
            let read = try Self.pythonReading(result.stdout)
            #expect(!read.lowercased().contains(Self.secret) && !read.contains("[[private]]"), "\(name): \(read)")
            #expect(read.contains("█████"), "\(name): the placeholder stands where the span was: \(read)")
        }
    }
}

/// A mail whose line ends are bare CRs in places: Python's `email` ends a
/// line at each, and so does mailsec on input, on every path (issue 21: one
/// decision for every path; a mail is not refused by one command and passed by
/// another). The part only a reader ending lines at CR sees is read, its span censored.
@Suite("Bare CR line ends: redact, encrypt and the filter agree", .serialized)
struct BareCarriageReturnCLITests {
    /// Headers with LF; inside the multipart a second part that only a reader
    /// ending lines at CR sees, its span in base64.
    static let mail: [UInt8] = {
        let encoded = Data("[[private]]zqbarecrsecret[[/private]]".utf8).base64EncodedString()
        return Array(("From: alice@example.org\nTo: nobody@example.org\nSubject: s\nMIME-Version: 1.0\n"
            + "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhello\r--b\r"
            + "Content-Type: text/plain\rContent-Transfer-Encoding: base64\r\r" + encoded + "\r--b--\n").utf8)
    }()

    /// The same mail with every line ending in a bare CR, and no span: a control every command passes.
    static let control: [UInt8] = Array(("From: alice@example.org\rTo: nobody@example.org\rSubject: s\rMIME-Version: 1.0\r"
        + "Content-Type: text/plain\r\rhello\rbye\r").utf8)

    @Test("redact, encrypt and filter each read a bare CR as a line end: the hidden part censored, the control passed, the same postcard")
    func readAlikeByEach() throws {
        let peer = try RecordingSMTPServer()
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let config = home.path + "/filter.toml"
            try """
                gnupg_home = "\(home.path)"
                log = "none"
                [reinject]
                method = "smtp"
                port = \(peer.port)
                [journal]
                directory = "\(home.path)/journal"
                """.write(toFile: config, atomically: true, encoding: .utf8)
            for (index, mail) in [Self.mail, Self.control].enumerated() {
                let redacted = try mailsec(["redact", "-"], input: mail, home: home)
                #expect(redacted.status == 0, "\(index): \(redacted.errors)")
                #expect(!redacted.output.contains("zqbarecrsecret") && !redacted.output.contains("[[private]]"), "\(index): \(redacted.output)")
                if index == 0 {
                    let read = try FriendlyMailCLITests.pythonReading(redacted.stdout)
                    #expect(!read.contains("zqbarecrsecret") && read.contains("█████"), "\(read)")
                }

                let out = home.path + "/out\(index)"
                let encrypted = try mailsec(["encrypt", "--out", out, "-"], input: mail, home: home)
                #expect(encrypted.status == 0, "\(index): \(encrypted.errors)")
                let written = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
                #expect(!written.isEmpty, "\(index)")
                for name in written {
                    let bytes = try String(decoding: Data(contentsOf: URL(fileURLWithPath: out + "/" + name)), as: UTF8.self)
                    #expect(!bytes.contains("zqbarecrsecret"), "\(index): \(name)")
                }

                let before = peer.transactions.count
                let filtered = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--", "nobody@example.org"],
                                           input: mail, home: home)
                #expect(filtered.status == 0, "\(index): \(filtered.errors)")
                #expect(peer.transactions.count == before + 1, "\(index): one postcard handed on")
                #expect(!peer.transactions.map(\.data).joined().contains("zqbarecrsecret"))
            }
        }
    }
}
