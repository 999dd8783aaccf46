import Foundation
import TestSupport
import Testing

let dinnerMail = Array("""
    From: Alice <alice@example.org>
    To: Bob <bob@example.org>, Dora <dora@example.net>
    Subject: Dinner at [[private]]Chez Zqxwv[[/private]]
    Message-ID: <cli.pe.1@example.org>
    MIME-Version: 1.0
    Content-Type: text/plain; charset=utf-8

    The secret ingredient is [[private]]saffron and zqvanilla[[/private]].

    """.utf8)

@Suite("Partially encrypted postcards on the command line", .serialized)
struct ReadingCLITests {
    @Test("encrypt publishes, prints the password on stderr only; reveal reads the spans with it and not without")
    func encryptAndReveal() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let out = home.path + "/out"
            FileManager.default.createFile(atPath: home.path + "/token", contents: Data(server.token.utf8))
            let result = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", out, "--extension", "partially-encrypted",
                                      "--publish-url", server.url, "--publish-token-file", home.path + "/token", "-"],
                                     input: dinnerMail, home: home)
            #expect(result.status == 0, "\(result.errors)")
            let password = try #require(result.errors.split(separator: "\n").first { $0.hasPrefix("mailsec: password: ") }
                .map { String($0.dropFirst("mailsec: password: ".count)) })
            let files = try FileManager.default.contentsOfDirectory(atPath: out)
            for name in files {
                let text = String(decoding: FileManager.default.contents(atPath: out + "/" + name) ?? Data(), as: UTF8.self)
                #expect(!text.contains(password), "\(name) holds the password")
                if !name.contains("letter") { #expect(!text.contains("saffron") && !text.contains("Zqxwv"), "\(name) leaks a span") }
            }
            let manifest = try JSONSerialization.jsonObject(with: FileManager.default.contents(atPath: out + "/manifest.json")!) as! [String: Any]
            let page = try #require(manifest["readingPage"] as? [String: Any])
            let url = try #require(page["url"] as? String)
            #expect(url.hasPrefix(server.url + "/r/"))

            let revealed = try mailsec(["reveal", url], input: Array((password.lowercased() + "\n").utf8))
            #expect(revealed.status == 0, "\(revealed.errors)")
            #expect(revealed.output.contains("Subject: Dinner at Chez Zqxwv"))
            #expect(revealed.output.contains("The secret ingredient is saffron and zqvanilla."))
            let wrong = try mailsec(["reveal", url], input: Array("ABCD-EFGH-JKLM-NPQR\n".utf8))
            #expect(wrong.status == 69 && !wrong.output.contains("saffron"))
            expectOneLine(wrong)

            // --password-to: a new private file instead of stderr; reveal reads it back with --password-from.
            let second = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", out + "2", "--extension", "partially-encrypted",
                                      "--publish-url", server.url, "--password-to", home.path + "/pw", "-"],
                                     input: dinnerMail, environment: ["MAILSEC_PUBLISH_TOKEN": server.token, "GNUPGHOME": home.path])
            #expect(second.status == 0, "\(second.errors)")
            #expect(!second.errors.contains("password: "))
            let mode = try FileManager.default.attributesOfItem(atPath: home.path + "/pw")[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let stored = try String(contentsOfFile: home.path + "/pw", encoding: .utf8)
            #expect(SpanPasswordShape.matches(stored))
            let secondManifest = try JSONSerialization.jsonObject(with: FileManager.default.contents(atPath: out + "2/manifest.json")!) as! [String: Any]
            let secondURL = try #require((secondManifest["readingPage"] as? [String: Any])?["url"] as? String)
            let fromFile = try mailsec(["reveal", "--password-from", home.path + "/pw", secondURL])
            #expect(fromFile.status == 0 && fromFile.output.contains("saffron and zqvanilla"), "\(fromFile.errors)")
            // An existing password file is refused before anything is published.
            let exists = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", out + "3", "--extension", "partially-encrypted",
                                      "--publish-url", server.url, "--password-to", home.path + "/pw", "-"],
                                     input: dinnerMail, environment: ["MAILSEC_PUBLISH_TOKEN": server.token, "GNUPGHOME": home.path])
            #expect(exists.status == 73 && !FileManager.default.fileExists(atPath: out + "3"))
            let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
            #expect(log.components(separatedBy: "POST /api/postcards 201").count == 3, "two publications, not three")
        }
        server.stop()
        let everything = String(decoding: server.everythingStored(), as: UTF8.self)
        #expect(!everything.contains("saffron") && !everything.contains("Zqxwv"))
    }

    @Test("encrypt --out: a folder that cannot be made after publishing (its parent is a file): 73, one line, the page withdrawn, no password file, no password on stderr")
    func folderFailsAfterPublishing() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            FileManager.default.createFile(atPath: home.path + "/token", contents: Data(server.token.utf8))
            FileManager.default.createFile(atPath: home.path + "/file", contents: Data("not a folder\n".utf8))
            let result = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", home.path + "/file/out", "--extension",
                                      "partially-encrypted", "--publish-url", server.url, "--publish-token-file", home.path + "/token",
                                      "--password-to", home.path + "/pw", "-"],
                                     input: dinnerMail, home: home)
            #expect(result.status == 73, "\(result.status) \(result.errors)")
            expectOneLine(result)
            #expect(!result.errors.contains("password") && !result.errors.contains("saffron"), "\(result.errors)")
            #expect(!FileManager.default.fileExists(atPath: home.path + "/pw"), "the password of a withdrawn page is not kept")
            let lines = try String(contentsOfFile: server.logPath, encoding: .utf8).split(separator: "\n")
            #expect(lines.filter { $0.contains("POST /api/postcards 201") }.count == 1, "published: the folder fails after the crypto")
            #expect(lines.filter { $0.contains("DELETE /api/postcards/") && $0.hasSuffix(" 204") }.count == 1, "and withdrawn")
        }
    }

    @Test("https: publish and reveal through a TLS proxy whose CA is given; refused (75) without it; an empty password is a usage error before any request")
    func overTLS() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        let proxy = try TLSProxy(backendPort: server.port)
        defer { proxy.stop() }
        let secure = "https://localhost:\(proxy.port)"
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let environment = ["MAILSEC_PUBLISH_TOKEN": server.token, "GNUPGHOME": home.path]
            let out = home.path + "/out"
            let published = try mailsec(["encrypt", "--out", out, "--extension", "partially-encrypted", "--publish-url", secure,
                                         "--publish-ca-file", proxy.caFile, "-"], input: dinnerMail, environment: environment)
            #expect(published.status == 0, "\(published.errors)")
            let password = try #require(published.errors.split(separator: "\n").first { $0.hasPrefix("mailsec: password: ") }
                .map { String($0.dropFirst("mailsec: password: ".count)) })
            let manifest = try JSONSerialization.jsonObject(with: FileManager.default.contents(atPath: out + "/manifest.json")!) as! [String: Any]
            let link = try #require((manifest["readingPage"] as? [String: Any])?["url"] as? String)
            let id = try #require(link.components(separatedBy: "/r/").last)
            for page in [secure + "/r/" + id, "https://127.0.0.1:\(proxy.port)/r/" + id] {
                let revealed = try mailsec(["reveal", "--ca-file", proxy.caFile, page], input: Array((password + "\n").utf8))
                #expect(revealed.status == 0, "\(page): \(revealed.errors)")
                #expect(revealed.output.contains("The secret ingredient is saffron and zqvanilla."))
            }
            // The system's roots do not hold the test CA: no answer is taken from that server.
            let untrusted = try mailsec(["reveal", secure + "/r/" + id], input: Array((password + "\n").utf8))
            #expect(untrusted.status == 75, "\(untrusted.errors)")
            expectOneLine(untrusted)
            #expect(untrusted.errors.contains("not trusted") && untrusted.stdout.isEmpty)
            let unpublished = try mailsec(["encrypt", "--out", out + "2", "--extension", "partially-encrypted", "--publish-url", secure,
                                           "-"], input: dinnerMail, environment: environment)
            #expect(unpublished.status == 75 && !FileManager.default.fileExists(atPath: out + "2"), "\(unpublished.errors)")
            // An empty password: 64, and the server saw no request for it.
            let fetches = { (try? String(contentsOfFile: server.logPath, encoding: .utf8))?.components(separatedBy: "GET /api/postcards/").count }
            let before = fetches()
            for typed in ["\n", "   \n", ""] {
                let empty = try mailsec(["reveal", "--ca-file", proxy.caFile, secure + "/r/" + id], input: Array(typed.utf8))
                #expect(empty.status == 64, "\(empty.errors)")
                expectOneLine(empty)
            }
            FileManager.default.createFile(atPath: home.path + "/empty", contents: Data("\n".utf8))
            #expect(try mailsec(["reveal", "--password-from", home.path + "/empty", "https://127.0.0.1:9/r/" + id]).status == 64)
            #expect(fetches() == before)
        }
    }

    @Test("without a publish URL it is a usage error; with the server down 75 and nothing written")
    func failures() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let out = home.path + "/out"
            let usage = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", out, "--extension", "partially-encrypted", "-"],
                                    input: dinnerMail, home: home)
            #expect(usage.status == 64)
            expectOneLine(usage)
            let down = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", out, "--extension", "partially-encrypted",
                                    "--publish-url", "http://127.0.0.1:9", "-"],
                                   input: dinnerMail, environment: ["MAILSEC_PUBLISH_TOKEN": "x", "GNUPGHOME": home.path])
            #expect(down.status == 75)
            expectOneLine(down)
            #expect(down.errors.contains("nothing was sent"))
            #expect(!FileManager.default.fileExists(atPath: out))
            let noToken = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", out, "--extension", "partially-encrypted",
                                       "--publish-url", "http://127.0.0.1:9", "-"], input: dinnerMail, environment: ["GNUPGHOME": home.path])
            #expect(noToken.status == 64)
        }
    }

    @Test("serve refuses a missing or short token file and a bad port")
    func serveArguments() throws {
        let folder = try makePrivateDirectory(prefix: "ms-serve-args")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        FileManager.default.createFile(atPath: folder + "/short", contents: Data("abc".utf8))
        #expect(try mailsec(["serve", "--token-file", folder + "/missing", "--store", folder + "/s"]).status == 66)
        #expect(try mailsec(["serve", "--token-file", folder + "/short", "--store", folder + "/s"]).status == 64)
        #expect(try mailsec(["serve", "--token-file", folder + "/short", "--port", "70000"]).status == 64)
    }
}

/// The grouped password format, checked without the library.
enum SpanPasswordShape {
    static func matches(_ text: String) -> Bool {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let groups = trimmed.split(separator: "-")
        return groups.count == 4 && groups.allSatisfy { $0.count == 4 && $0.allSatisfy { "23456789ABCDEFGHJKLMNPQRSTUVWXYZ".contains($0) } }
    }
}
