import Foundation
import HTTPRequests
import PartialEncryption
@testable import ReadingServer
import TestSupport
import Testing

func get(_ server: ReadingServerProcess, _ path: String) throws -> HTTPExchange.Response {
    try HTTPExchange.send(host: "127.0.0.1", port: server.port, timeout: 10, method: "GET", path: path,
                          bearer: nil, contentType: nil, body: [])
}

func post(_ server: ReadingServerProcess, _ body: [UInt8], token: String?) throws -> HTTPExchange.Response {
    try HTTPExchange.send(host: "127.0.0.1", port: server.port, timeout: 10, method: "POST", path: "/api/postcards",
                          bearer: token, contentType: "application/json", body: body)
}

func sampleDocument(lifetime: Int? = nil, spans: [String] = ["the secret venue"]) throws -> (ReadingDocument, SpanPassword) {
    let password = SpanPassword()
    let document = ReadingDocument(from: [.text("Alice <alice@example.org>")], subject: [.text("Offsite: "), .span(1)],
                                   body: [.text("Meet at "), .span(1), .text(".")], spanCount: spans.count,
                                   blob: try SpanBlob.seal(spans, password: password), lifetime: lifetime)
    return (document, password)
}

@Suite("The reading server", .serialized)
struct ReadingServerTests {
    @Test("publishing needs the token: none is 401, a wrong one 403; bad and oversize documents 400 and 413")
    func refusals() throws {
        let server = try ReadingServerProcess(extraArguments: ["--max-size", "20000"])
        defer { server.remove() }
        let (document, _) = try sampleDocument()
        #expect(try post(server, document.json(), token: nil).status == 401)
        #expect(try post(server, document.json(), token: "wrong-token-wrong-token").status == 403)
        #expect(try post(server, Array("{\"v\":1}".utf8), token: server.token).status == 400)
        #expect(try post(server, Array("not json".utf8), token: server.token).status == 400)
        let (big, _) = try sampleDocument(spans: [String(repeating: "x", count: 30000)])
        let tooLarge = try post(server, big.json(), token: server.token)
        #expect(tooLarge.status == 413)
        #expect(String(decoding: tooLarge.body, as: UTF8.self).contains("larger than 20000 bytes"))
        // Nothing of it was stored.
        #expect(try PostcardStore(path: server.storePath).count() == 0)
        for path in ["/r/AAAAAAAAAAAAAAAAAAAAAA", "/api/postcards/AAAAAAAAAAAAAAAAAAAAAA", "/api/postcards/../../etc", "/nothing"] {
            #expect(try get(server, path).status == 404, "\(path)")
        }
    }

    @Test("a published postcard is served with its page; deleting needs its own token")
    func publishReadDelete() throws {
        let server = try ReadingServerProcess(extraArguments: ["--public-url", "https://read.example.org/"])
        defer { server.remove() }
        let (document, password) = try sampleDocument()
        let publisher = try HTTPPublisher(url: server.url, token: server.token)
        let publication = try publisher.publish(document)
        #expect(publication.url == "https://read.example.org/r/" + publication.id)
        let page = try get(server, "/r/" + publication.id)
        #expect(page.status == 200 && String(decoding: page.body, as: UTF8.self).contains("reader.js"))
        let policy = page.headers.first { $0.0 == "content-security-policy" }?.1 ?? ""
        #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"))
        let script = try get(server, "/assets/reader.js")
        #expect(script.status == 200 && String(decoding: script.body, as: UTF8.self).contains("PBKDF2"))

        let read = try get(server, "/api/postcards/" + publication.id)
        #expect(read.status == 200)
        let served = try ReadingDocument.decode(read.body)
        #expect(served.body == document.body && served.blob == document.blob)
        #expect(try SpanBlob(base64URL: served.blob).open(password: password) == ["the secret venue"])

        let stranger = Publication(id: publication.id, url: publication.url, deleteToken: Base64URL.random(32), expires: "")
        #expect(throws: PublishError.self) { try publisher.withdraw(stranger) }
        #expect(try get(server, "/api/postcards/" + publication.id).status == 200, "a wrong deletion token deletes nothing")
        let missing = try HTTPExchange.send(host: "127.0.0.1", port: server.port, timeout: 10, method: "DELETE",
                                            path: "/api/postcards/" + publication.id, bearer: nil, contentType: nil, body: [])
        #expect(missing.status == 401)
        try publisher.withdraw(publication)
        #expect(try get(server, "/api/postcards/" + publication.id).status == 404)
        #expect(try get(server, "/r/" + publication.id).status == 404)
        #expect(try PostcardStore(path: server.storePath).count() == 0)
    }

    @Test("entries expire: a lifetime of two seconds is gone after three; the server caps longer lifetimes")
    func expiry() throws {
        let server = try ReadingServerProcess(extraArguments: ["--lifetime-days", "2"])
        defer { server.remove() }
        let publisher = try HTTPPublisher(url: server.url, token: server.token)
        let short = try publisher.publish(try sampleDocument(lifetime: 2).0)
        #expect(try get(server, "/api/postcards/" + short.id).status == 200)
        let long = try publisher.publish(try sampleDocument(lifetime: 400 * 86400).0)
        let formatter = ISO8601DateFormatter()
        let expires = try #require(formatter.date(from: long.expires))
        #expect(expires.timeIntervalSinceNow < 2 * 86400 + 60 && expires.timeIntervalSinceNow > 2 * 86400 - 60)
        sleep(3)
        #expect(try get(server, "/api/postcards/" + short.id).status == 404)
        #expect(try get(server, "/r/" + short.id).status == 404)
        // Expired entries are removed from the file, not just hidden.
        #expect(try PostcardStore(path: server.storePath).count() == 1)
    }

    @Test("the server log has one line per request and never a token or a body")
    func log() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        let (document, _) = try sampleDocument()
        let publication = try HTTPPublisher(url: server.url, token: server.token).publish(document)
        _ = try post(server, document.json(), token: "wrong-token-wrong-token")
        server.stop()
        let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
        #expect(log.contains("POST /api/postcards 201") && log.contains("POST /api/postcards 403"))
        for secret in [server.token, "wrong-token-wrong-token", publication.deleteToken, document.blob, "Offsite"] {
            #expect(!log.contains(secret))
        }
    }
}

@Suite("The store")
struct PostcardStoreTests {
    @Test("a private file; insert, find, delete and purge; deleted content is overwritten")
    func lifecycle() throws {
        let folder = try makePrivateDirectory(prefix: "ms-store")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/s.sqlite"
        let store = try PostcardStore(path: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let marker = Array("MARKER-zqxjkvbw-".utf8) + Array(repeating: UInt8(ascii: "m"), count: 200)
        try store.insert(id: "a", document: marker, deleteTokenDigest: [1, 2], created: 100, expires: 200)
        try store.insert(id: "b", document: [1], deleteTokenDigest: [3], created: 100, expires: 300)
        #expect(try store.find(id: "a", now: 150)?.document == marker)
        #expect(try store.find(id: "a", now: 200) == nil, "expired at its expiry time")
        #expect(try store.deleteTokenDigest(id: "b") == [3])
        #expect(try store.purge(now: 250) == 1)
        #expect(try store.count() == 1)
        let bytes = try #require(FileManager.default.contents(atPath: path))
        #expect(bytes.range(of: Data("MARKER-zqxjkvbw".utf8)) == nil, "secure_delete overwrote the purged entry")
        #expect(try store.delete(id: "b") && !(try store.delete(id: "b")))
        #expect(throws: StoreError.self) { try PostcardStore(path: folder + "/missing/s.sqlite") }
        var caught = false
        // Through an untyped closure: Swift 6.3's SILGen crashes on a code pattern
        // in a catch of the typed `throws(StoreError)` initialiser.
        let open: () throws -> PostcardStore = { try PostcardStore(path: folder + "/missing/s.sqlite") }
        do { _ = try open() } catch StoreError.Code.busy {
            Issue.record("matched the wrong code")
        } catch StoreError.Code.cannotOpen {
            caught = true
        }
        #expect(caught, "a missing folder is SQLITE_CANTOPEN")
        // 266 is SQLITE_IOERR_READ, an extended code of SQLITE_IOERR (10).
        #expect(StoreError.Code.ioError ~= StoreError(266, "reading"), "an extended code matches its primary one")
        #expect(!(StoreError.Code.busy ~= StoreError(266, "reading")))
    }
}
