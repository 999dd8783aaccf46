import Foundation
import TestSupport
import Testing

/// Issue 22, item 15: with `pubring.kbx` intact and `trustdb.gpg` garbled,
/// cut, emptied or a folder, gpg died after part of the listing and Bob —
/// who has a key — got a plain postcard: `send` exited 0, the pipe filter
/// handed a postcard on. Every kind of damage × every way in: 75, one line,
/// nothing sent; restored, Bob gets a letter.
@Suite("A damaged trust database: send, encrypt and the pipe filter defer (75), never a postcard", .serialized)
struct TrustDamageCLITests {
    let mail = Array("""
        From: Alice <alice@example.org>
        To: Bob <bob@example.org>, nobody@example.org
        Subject: s
        Message-ID: <trust.\(UUID())@example.org>

        hello

        """.utf8)

    /// Every kind of damage, each as a function that does it to `path`.
    func damages(_ good: [UInt8]) -> [(String, (String) throws -> Void)] {
        func write(_ bytes: [UInt8]) -> (String) throws -> Void {
            { path in try? FileManager.default.removeItem(atPath: path); try Data(bytes).write(to: URL(fileURLWithPath: path)) }
        }
        var random = SystemRandomNumberGenerator()
        return [
            ("garbled", write((0..<good.count).map { _ in UInt8.random(in: 0...255, using: &random) })),
            ("a folder", { path in try? FileManager.default.removeItem(atPath: path); mkdir(path, 0o700) }),
            ("emptied", write([])),
            ("cut", write(Array(good.prefix(good.count / 2 + 7)))),
            ("cut after the hash table's first record", write(Array(good.prefix(80)))),
            ("a symbolic link to nothing", { path in try? FileManager.default.removeItem(atPath: path); symlink(path + ".gone", path) }),
        ]
    }

    @Test("encrypt, plan and the pipe filter, for each kind of damage: 75, one line naming the trust database, nothing handed on")
    func commandLine() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let folder = home.path + "/mta"
            mkdir(folder, 0o700)
            mkdir(folder + "/outbox", 0o700)
            let sendmail = folder + "/sendmail"
            try "#!/bin/sh\ncat > \"$(mktemp '\(folder)/outbox/copy.XXXXXX')\"\n".write(toFile: sendmail, atomically: true, encoding: .utf8)
            chmod(sendmail, 0o700)
            let config = home.path + "/filter.toml"
            try """
                gnupg_home = "\(home.path)"
                log = "none"
                [reinject]
                sendmail = ["\(sendmail)"]
                [journal]
                directory = "\(home.path)/state/journal"
                """.write(toFile: config, atomically: true, encoding: .utf8)
            let path = home.path + "/trustdb.gpg"
            let good = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            for (what, damage) in damages(good) {
                try damage(path)
                for arguments in [["encrypt", "--out", home.path + "/out", "-"], ["plan", "-"],
                                  ["filter", "--config", config, "-f", "alice@example.org", "--", "bob@example.org", "nobody@example.org"]] {
                    try? FileManager.default.removeItem(atPath: home.path + "/out")
                    let result = try mailsec(arguments, input: mail, home: home)
                    #expect(result.status == 75, "\(what): \(arguments[0]): \(result.status) \(result.errors)")
                    expectOneLine(result)
                    #expect(result.errors.contains("trustdb.gpg") || result.errors.contains("did not end cleanly"), "\(what): \(result.errors)")
                }
                let copies = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/outbox")) ?? []
                #expect(copies.isEmpty, "\(what): \(copies.count) copies handed on")
                try? FileManager.default.removeItem(atPath: path)
                try Data(good).write(to: URL(fileURLWithPath: path))
            }
            let mended = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--", "bob@example.org"], input: mail, home: home)
            #expect(mended.status == 0, "\(mended.errors)")
            let names = try FileManager.default.contentsOfDirectory(atPath: folder + "/outbox")
            #expect(names.count == 1)
            let letter = try String(contentsOfFile: folder + "/outbox/" + names[0], encoding: .utf8)
            #expect(letter.contains("multipart/encrypted"))
        }
    }

    @Test("send, for each kind of damage: 75, one line, nothing queued that goes out as a postcard, the server sees no mail")
    func send() throws {
        let setup = try SendingSetup()
        defer { setup.close() }
        let path = setup.home.path + "/trustdb.gpg"
        let good = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for (what, damage) in damages(good) {
            try damage(path)
            let result = try setup.mailsec(["send"], input: mail)
            #expect(result.status == 75, "\(what): \(result.status) \(result.errors)")
            expectOneLine(result)
            #expect(!setup.peer.sawMail, "\(what): the server got a mail")
            try? FileManager.default.removeItem(atPath: path)
            try Data(good).write(to: URL(fileURLWithPath: path))
        }
        let flushed = try setup.mailsec(["outbox", "flush"])
        #expect(flushed.status == 0, "\(flushed.errors)")
        #expect(!setup.peer.sawMail, "nothing was queued while the look-up could not be trusted")
    }
}
