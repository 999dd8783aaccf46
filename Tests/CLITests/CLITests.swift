import Foundation
import TestSupport
import Testing

func mailsec(_ arguments: [String], input: [UInt8] = [], home: TemporaryGnuPGHome? = nil) throws -> ProcessResult {
    try run(Paths.mailsecExecutable.path, arguments, input: input, environment: home?.environment)
}

func mailsec(_ arguments: [String], input: [UInt8] = [], environment: [String: String]) throws -> ProcessResult {
    try run(Paths.mailsecExecutable.path, arguments, input: input,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
}

/// Error output must be exactly one line.
func expectOneLine(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) {
    let lines = result.errors.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    #expect(lines.count == 1, "stderr: \(result.errors)", sourceLocation: sourceLocation)
    #expect(result.errors.hasPrefix("mailsec: "), sourceLocation: sourceLocation)
}

let demoMail = Array("""
    From: Alice <alice@example.org>
    To: Bob <bob@example.org>
    Subject: Dinner
    Message-ID: <cli.1@example.org>
    MIME-Version: 1.0
    Content-Type: text/plain; charset=utf-8

    The secret ingredient is saffron.

    """.utf8)

@Suite("The mailsec command line", .serialized)
struct CLITests {
    @Test("--version names mailsec, GPGME and GMime")
    func version() throws {
        let result = try mailsec(["--version"])
        #expect(result.status == 0)
        #expect(result.output.hasPrefix("mailsec 0.1.0 (GPGME 1."))
        #expect(result.output.contains("GMime 3."))
    }

    @Test("keys import, then keys lookup in text and JSON")
    func importAndLookup() throws {
        try withGnuPGHome { home throws in
            let files = ["alice.pub.asc", "expired.pub.asc", "malice.pub.asc"].map { Paths.key($0).path }
            let imported = try mailsec(["keys", "import", "--gnupg-home", home.path] + files)
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(imported.output.split(separator: "\n").count == 3)
            #expect(imported.output.contains("alice.pub.asc: 1 considered, 1 imported"))

            let colons = try home.gpg(["--with-colons", "--list-keys", "alice@example.org"]).output
            let aliceFingerprint = try #require(colons.split(separator: "\n").first { $0.hasPrefix("fpr:") }?
                .split(separator: ":", omittingEmptySubsequences: false)[9])

            // The global option may also stand before the subcommand.
            let text = try mailsec(["--gnupg-home", home.path, "keys", "lookup",
                                    "alice@example.org", "expired@example.org", "nobody@example.org"])
            #expect(text.status == 0, "\(text.errors)")
            let lines = text.output.split(separator: "\n")
            #expect(lines.count == 3)
            #expect(lines[0].hasPrefix("alice@example.org: \(aliceFingerprint) (ed25519/cv25519"))
            #expect(lines[1].hasPrefix("expired@example.org: no usable key (") && lines[1].hasSuffix(" expired)"))
            #expect(lines[2] == "nobody@example.org: no key")

            let json = try mailsec(["keys", "lookup", "--json", "--gnupg-home", home.path,
                                    "alice@example.org", "expired@example.org"])
            #expect(json.status == 0)
            let reports = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [[String: Any]])
            #expect(reports.count == 2)
            #expect(reports[0]["chosen"] as? String == String(aliceFingerprint))
            #expect(reports[1]["chosen"] is NSNull)
            let expired = try #require((reports[1]["candidates"] as? [[String: Any]])?.first)
            #expect(expired["verdict"] as? String == "expired")

            // The default home is $GNUPGHOME.
            let fromEnvironment = try mailsec(["keys", "lookup", "alice@example.org"], home: home)
            #expect(fromEnvironment.output.hasPrefix("alice@example.org: \(aliceFingerprint)"))
        }
    }

    @Test("usage errors exit 64 with one line; unreadable input exits 66")
    func usageErrors() throws {
        try withGnuPGHome { home throws in
            for arguments in [["keys", "lookup"], ["keys", "lookup", "--bogus", "a@example.org"],
                              ["keys", "lookup", "not an address"], ["frobnicate"],
                              ["keys", "lookup", "--gnupg-home", "/nonexistent/home", "a@example.org"],
                              ["keys", "lookup", "--min-validity", "sometimes", "a@example.org"]] {
                let result = try mailsec(arguments, home: home)
                #expect(result.status == 64, "\(arguments): \(result.errors)")
                expectOneLine(result)
            }
            let hostile = try mailsec(["keys", "lookup", "a\u{1B}[31m@example.org"], home: home)
            #expect(hostile.status == 64)
            #expect(!hostile.errors.contains("\u{1B}") && hostile.errors.contains("\\u{1b}"))
            expectOneLine(hostile)
            let missing = try mailsec(["keys", "import", "/nonexistent/key.asc"], home: home)
            #expect(missing.status == 66)
            expectOneLine(missing)
            let garbage = try mailsec(["keys", "import", "-"], input: Array("not a key".utf8), home: home)
            #expect(garbage.status == 65)
            expectOneLine(garbage)
        }
    }

    @Test("encrypt writes a letter that gpg opens; decrypt opens it again")
    func encryptDecrypt() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { sender throws in
            let out = sender.path + "/out"
            let written = try mailsec(["encrypt", "--out", out, "-"], input: demoMail, home: sender)
            #expect(written.status == 0, "\(written.errors)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["1-letter.eml", "manifest.json"])
            let letter = Array(try Data(contentsOf: URL(fileURLWithPath: out + "/1-letter.eml")))
            let text = String(decoding: letter, as: UTF8.self)
            #expect(!text.contains("saffron") && !text.contains("Dinner"))
            #expect(text.contains("multipart/encrypted"))
            for file in ["1-letter.eml", "manifest.json"] {
                let mode = try FileManager.default.attributesOfItem(atPath: out + "/" + file)[.posixPermissions] as? Int
                #expect(mode == 0o600)
            }
            try withGnuPGHome(importing: ["bob.sec.asc", "alice.pub.asc"]) { recipient throws in
                let outFile = recipient.path + "/opened.eml"
                let toFile = try mailsec(["decrypt", "-o", outFile, "-"], input: letter, home: recipient)
                #expect(toFile.status == 0)
                let mode = try FileManager.default.attributesOfItem(atPath: outFile)[.posixPermissions] as? Int
                #expect(mode == 0o600)
                let opened = try mailsec(["decrypt", "-"], input: letter, home: recipient)
                #expect(opened.status == 0, "\(opened.errors)")
                #expect(opened.output.contains("The secret ingredient is saffron."))
                #expect(opened.output.contains("Subject: Dinner"))
                #expect(opened.errors.hasPrefix("signature: good "))
                let plain = try mailsec(["decrypt", "-"], input: demoMail, home: recipient)
                #expect(plain.status == 65)
                expectOneLine(plain)
            }
        }
    }

    @Test("encrypt reads a file by name, and a pipe by name; an encrypted mail goes out unchanged either way; parts without content warn nothing; empty and oversized input")
    func encryptFromFiles() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            // A letter, made first, is the encrypted mail to pass on.
            let first = try mailsec(["encrypt", "--out", home.path + "/first", "-"], input: demoMail, home: home)
            #expect(first.status == 0, "\(first.errors)")
            let letter = Array(try Data(contentsOf: URL(fileURLWithPath: home.path + "/first/1-letter.eml")))
            let letterFile = home.path + "/letter.eml"
            FileManager.default.createFile(atPath: letterFile, contents: Data(letter))
            let fromFile = try mailsec(["encrypt", "--out", home.path + "/again", letterFile], home: home)
            #expect(fromFile.status == 0, "\(fromFile.errors)")
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: home.path + "/again/1-unchanged.eml"))) == letter)
            // The same through a named pipe (not a regular file: read once, into memory).
            let fifo = home.path + "/fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            let feeder = Thread { if let handle = FileHandle(forWritingAtPath: fifo) { handle.write(Data(letter)); try? handle.close() } }
            feeder.start()
            let fromPipe = try mailsec(["encrypt", "--out", home.path + "/piped", fifo], home: home)
            #expect(fromPipe.status == 0, "\(fromPipe.errors)")
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: home.path + "/piped/1-unchanged.eml"))) == letter)
            // Parts without any content (empty between boundaries): a letter, and not a word on stderr.
            let hollow = Array("""
                From: alice@example.org
                To: bob@example.org
                Subject: hollow
                Content-Type: multipart/mixed; boundary=":foo"

                --:foo
                --:foo
                Content-Type: text/plain
                --:foo
                Content-Type: text/html
                --:foo--

                """.utf8)
            let hollowFile = home.path + "/hollow.eml"
            FileManager.default.createFile(atPath: hollowFile, contents: Data(hollow))
            let sealed = try mailsec(["encrypt", "--out", home.path + "/hollow", hollowFile], home: home)
            #expect(sealed.status == 0)
            #expect(sealed.errors.isEmpty, "\(sealed.errors)")
            // A folder is not a message.
            let folder = try mailsec(["encrypt", "--out", home.path + "/none", home.path], home: home)
            #expect(folder.status == 66)
            expectOneLine(folder)
            // An empty file can be read: it is just not a message (65, not 66).
            FileManager.default.createFile(atPath: home.path + "/empty.eml", contents: Data())
            let empty = try mailsec(["redact", home.path + "/empty.eml"], home: home)
            #expect(empty.status == 65, "\(empty.errors)")
            expectOneLine(empty)
            // Standard input past --max-size is refused without being read whole.
            let large = Array("From: a@example.org\nTo: b@example.org\n\n".utf8) + [UInt8](repeating: 65, count: 2 << 20)
            let tooLarge = try mailsec(["redact", "--max-size", "1", "-"], input: large, home: home)
            #expect(tooLarge.status == 65)
            #expect(tooLarge.errors.contains("larger than the limit"), "\(tooLarge.errors)")
        }
    }

    @Test("encrypt --require-letter refuses, naming who has no usable key, and writes nothing")
    func encryptRefuses() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "expired.pub.asc"]) { home throws in
            var mail = String(decoding: demoMail, as: UTF8.self)
            mail = mail.replacingOccurrences(of: "To: Bob <bob@example.org>",
                                             with: "To: Bob <bob@example.org>, expired@example.org\nCc: nobody@example.org")
            let out = home.path + "/out"
            let result = try mailsec(["encrypt", "--require-letter", "--out", out, "-"], input: Array(mail.utf8), home: home)
            #expect(result.status == 69)
            #expect(result.stdout.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: out), "nothing is written")
            expectOneLine(result)
            #expect(result.errors.contains("expired@example.org"))
            #expect(result.errors.contains("nobody@example.org"))
            #expect(!result.errors.contains("bob@example.org"))
            #expect(!result.errors.contains("saffron"))
        }
    }
}
