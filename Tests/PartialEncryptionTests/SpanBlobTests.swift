import Foundation
import Crypto
import _CryptoExtras
import HTTPRequests
@testable import PartialEncryption
import Platform
import TestSupport
import Testing

@Suite("Span blobs and passwords")
struct SpanBlobTests {
    @Test("zeroize overwrites every byte, whatever the length")
    func zeroizing() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 15, 16, 17, 255, 4096] {
            var secret = (0..<length).map { _ in UInt8.random(in: 1...255, using: &generator) }
            zeroize(&secret)
            #expect(secret.count == length && secret.allSatisfy { $0 == 0 }, "\(length)")
        }
    }

    @Test("a password has 16 characters of the 32-character alphabet in four groups: 80 bits")
    func passwordShape() {
        var seen = Set<UInt8>()
        for _ in 0..<200 {
            let grouped = SpanPassword().grouped
            let groups = grouped.split(separator: "-")
            #expect(groups.count == 4 && groups.allSatisfy { $0.count == 4 })
            let characters = grouped.utf8.filter { $0 != UInt8(ascii: "-") }
            #expect(characters.allSatisfy(SpanPassword.alphabet.contains))
            seen.formUnion(characters)
        }
        #expect(SpanPassword.alphabet.count == 32 && SpanPassword.length * 5 == SpanPassword.bits && SpanPassword.bits >= 80)
        #expect(seen.count == 32, "200 passwords use every character")
        for lookalike in "01IO".utf8 { #expect(!SpanPassword.alphabet.contains(lookalike)) }
        #expect(SpanPassword().description == "<password>", "never printed by accident")
        #expect(SpanPassword().grouped != SpanPassword().grouped)
    }

    @Test("typed passwords: case, dashes and spaces do not matter; other characters do")
    func typed() {
        #expect(SpanPassword(typed: "k7wd 9mzq-hx4c-2rpf")?.grouped == "K7WD-9MZQ-HX4C-2RPF")
        #expect(SpanPassword(typed: "k7wd\t9mzq\u{00A0}hx4c\n2rpf")?.grouped == "K7WD-9MZQ-HX4C-2RPF", "all white space, as the page")
        #expect(SpanPassword(typed: "K7WD-9MZQ-HX4C-2RP0") == nil)
        #expect(SpanPassword(typed: " - ") == nil)
    }

    @Test("sealed spans open with the right password and not with a wrong one")
    func roundTrip() throws {
        let password = SpanPassword()
        let spans = ["venue Villa Sonnenhof", "The door code is 4711,\nand the budget is 12 000 €.", "<b>&amp;</b>"]
        let blob = try SpanBlob.seal(spans, password: password)
        #expect(blob.iterations == 600_000)
        #expect(try blob.open(password: password) == spans)
        let typed = try #require(SpanPassword(typed: password.grouped.lowercased().replacingOccurrences(of: "-", with: " ")))
        #expect(try SpanBlob(base64URL: blob.base64URL).open(password: typed) == spans)
        let wrong = try #require(SpanPassword(typed: "ABCD-EFGH-JKLM-NPQR"))
        #expect(throws: SpanBlobError(.wrongPassword)) { try blob.open(password: wrong) }
        // The plaintext is nowhere in the blob, and two seals differ (fresh salt and nonce).
        let text = String(decoding: blob.bytes, as: UTF8.self)
        #expect(!text.contains("Villa") && !text.contains("4711"))
        #expect(try SpanBlob.seal(spans, password: password).bytes != blob.bytes)
    }

    @Test("the blob's length tells a span's length only to 256 bytes")
    func padding() throws {
        let password = SpanPassword()
        let short = try SpanBlob.seal(["4711"], password: password)
        let long = try SpanBlob.seal([String(repeating: "x", count: 200)], password: password)
        #expect(short.bytes.count == long.bytes.count)
        #expect(short.bytes.count == 38 + 256 + 16)
        #expect(try long.open(password: password) == [String(repeating: "x", count: 200)])
    }

    @Test("every header byte is authenticated: changing one fails to open")
    func tampering() throws {
        let password = SpanPassword()
        let blob = try SpanBlob.seal(["secret"], password: password)
        // Iterations (still in range), salt, nonce, ciphertext and tag.
        for index in [9, 12, 30, 40, blob.bytes.count - 1] {
            var bytes = blob.bytes
            bytes[index] ^= 0x01
            #expect(throws: SpanBlobError.self) { try SpanBlob(bytes: bytes).open(password: password) }
        }
        var version = blob.bytes
        version[4] = 2
        #expect(throws: SpanBlobError(.unsupportedVersion)) { try SpanBlob(bytes: version) }
        var weak = blob.bytes
        weak.replaceSubrange(6..<10, with: [0, 0, 0x03, 0xE8])  // 1,000 iterations
        #expect(throws: SpanBlobError(.unsupportedVersion)) { try SpanBlob(bytes: weak) }
        #expect(throws: SpanBlobError(.malformed)) { try SpanBlob(bytes: Array(blob.bytes.prefix(40))) }
        #expect(throws: SpanBlobError(.malformed)) { try SpanBlob(base64URL: "not base64!") }
        #expect(throws: SpanBlobError.self) { try SpanBlob.seal(["x"], password: password, iterations: 100_000) }
    }

    @Test("the key derivation is PBKDF2-HMAC-SHA256 as WebCrypto does it (RFC 7914 §11 test vector)")
    func kdfVector() throws {
        // PBKDF2-HMAC-SHA256("passwd", "salt", 1, 64) from RFC 7914; we check its first 32 bytes
        // through the same call the blob uses, with the round limit lifted only here.
        let key = try KDF.Insecure.PBKDF2.deriveKey(from: Array("passwd".utf8), salt: Array("salt".utf8), using: .sha256,
                                                     outputByteCount: 32, unsafeUncheckedRounds: 1)
        let hex = key.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
        #expect(hex == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc")
    }

    @Test("documents: JSON round trip, and validation of span numbers, version and blob")
    func documents() throws {
        let blob = try SpanBlob.seal(["a", "b"], password: SpanPassword())
        let document = ReadingDocument(from: [.text("Alice")], subject: [.text("Re: "), .span(1)],
                                       body: [.text("x "), .span(2), .text(" [#1] literal")], spanCount: 2, blob: blob, lifetime: 60)
        let decoded = try ReadingDocument.decode(document.json())
        #expect(decoded == document)
        try decoded.validate()
        #expect(ReadingDocument.fill(decoded.body, ["a", "b"]) == "x b [#1] literal")
        var bad = document
        bad.body.append(.span(3))
        #expect(throws: SpanBlobError.self) { try bad.validate() }
        bad = document
        bad.version = 2
        #expect(throws: SpanBlobError.self) { try bad.validate() }
        bad = document
        bad.blob = "AAAA"
        #expect(throws: SpanBlobError.self) { try bad.validate() }
        #expect(throws: SpanBlobError.self) { try ReadingDocument.decode(Array("{\"v\":1}".utf8)) }
    }

    @Test("base64url")
    func encodings() throws {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 251) & 0xFF) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("+") && !text.contains("/") && !text.contains("="))
            #expect(Base64URL.decode(text) == bytes)
        }
    }

    @Test("publish URLs: http or https, with host and port; the token must fit in a header")
    func publisherURLs() throws {
        let publisher = try HTTPPublisher(url: "http://127.0.0.1:8080/reading/", token: "t0ken")
        #expect(publisher.host == "127.0.0.1" && publisher.port == 8080 && publisher.prefix == "/reading")
        #expect(try HTTPPublisher(url: "http://localhost", token: "t").port == 80)
        let secure = try HTTPPublisher(url: "HTTPS://read.example/x", token: "t")
        #expect(secure.endpoint.tls && secure.port == 443 && secure.endpoint.url("/r/1") == "https://read.example:443/x/r/1")
        for url in ["ftp://x", "http://", "https://", "http://x:0", "http://x:99999", "http://a\r\nX: y:80",
                    "http://x/a b", "http://x/?q=1", "http://user@x", "read.example", "http://read.example"] {
            #expect(throws: PublishError.self, "\(url)") { try HTTPPublisher(url: url, token: "t") }
        }
        #expect(throws: PublishError.self) { try HTTPPublisher(url: "http://x", token: "a b") }
        #expect(throws: PublishError.self) { try HTTPPublisher(url: "http://x", token: "") }
    }

    @Test("plain http only to loopback (127.0.0.0/8, [::1], localhost), https anywhere; [::1] reaches a server listening there")
    func plainOnlyOnLoopback() throws {
        for url in ["http://127.0.0.1:8080", "http://127.1.2.3", "http://localhost:8080/x", "http://[::1]:8080", "http://[::1]",
                    "https://read.example", "https://192.0.2.1:8443", "https://[2001:db8::1]:443/r"] {
            #expect(throws: Never.self, "\(url)") { try HTTPEndpoint(url) }
        }
        #expect(try HTTPEndpoint("http://[::1]:8080/p").url("/r/1") == "http://[::1]:8080/p/r/1")
        #expect(try HTTPEndpoint("http://[::1]:8080").host == "::1")
        for url in ["http://read.example", "http://192.0.2.1:8080", "http://10.0.0.1", "http://0.0.0.0:8080", "http://[::]:8080",
                    "http://[2001:db8::1]", "http://127.0.0.1.example.org", "http://localhost.example.org", "http://[::1",
                    "http://[::1]x", "http://[::1]:", "http://[::1]:+80", "http://[nothost]:80", "http://::1:8080"] {
            #expect(throws: HTTPExchangeError.self, "\(url)") { try HTTPEndpoint(url) }
        }
        // A real server on [::1]: the address is used as written.
        let server = try ReadingServerProcessOnIPv6()
        defer { server.stop() }
        let answer = try HTTPExchange.send(HTTPEndpoint("http://[::1]:\(server.port)"), timeout: 10, method: "GET", path: "/healthz",
                                           bearer: nil, contentType: nil, body: [])
        #expect(answer.status == 200)
    }

    @Test("https refuses a server that offers TLS 1.0 or 1.1 only (openssl s_server), and takes its TLS 1.2", arguments: ["-tls1", "-tls1_1", "-tls1_2"])
    func oldTLS(version: String) throws {
        let certificates = try Certificates()
        defer { certificates.remove() }
        let server = try OpenSSLServer(certificates, version: version)
        defer { server.stop() }
        let endpoint = try HTTPEndpoint("https://localhost:\(server.port)")
        do {
            let answer = try HTTPExchange.send(endpoint, caFile: certificates.ca, timeout: 10, method: "GET", path: "/",
                                               bearer: "token", contentType: nil, body: [])
            #expect(version == "-tls1_2" && answer.status == 200, "\(version): answered \(answer.status)")
        } catch {
            #expect(version != "-tls1_2" && error.kind == .untrusted, "\(version): \(error)")
        }
    }

    @Test("publishing to a port where nobody listens fails with a clear error")
    func unreachable() throws {
        let publisher = try HTTPPublisher(url: "http://127.0.0.1:9", token: "t", timeout: 2)
        let document = ReadingDocument(from: [], subject: [], body: [.span(1)], spanCount: 1,
                                       blob: try SpanBlob.seal(["s"], password: SpanPassword()))
        #expect(throws: PublishError.self) { try publisher.publish(document) }
    }
}

/// `mailsec serve --listen ::1` on a port of its own.
final class ReadingServerProcessOnIPv6 {
    let process = Process()
    let folder: String
    private(set) var port = 0

    init() throws {
        folder = try makePrivateDirectory(prefix: "ms-serve6")
        FileManager.default.createFile(atPath: folder + "/token", contents: Data("0123456789abcdef0123".utf8), attributes: [.posixPermissions: 0o600])
        FileManager.default.createFile(atPath: folder + "/out", contents: nil)
        process.executableURL = Paths.mailsecExecutable
        process.arguments = ["serve", "--listen", "::1", "--port", "0", "--store", folder + "/store", "--token-file", folder + "/token"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/out"))
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<300 where port == 0 && process.isRunning {
            let out = String(decoding: FileManager.default.contents(atPath: folder + "/out") ?? Data(), as: UTF8.self)
            port = out.split(separator: "\n").first { $0.hasPrefix("listening on ") }.flatMap { $0.split(separator: ":").last }
                .flatMap { Int($0) } ?? 0
            if port == 0 { usleep(50_000) }
        }
        guard port != 0 else { stop(); throw CocoaError(.fileReadUnknown) }
    }

    func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// `openssl s_server -www` speaking only `version` (`-tls1`, `-tls1_1`, `-tls1_2`),
/// with every cipher allowed (security level 0), so that the old versions are offered.
final class OpenSSLServer {
    let process = Process()
    let port: Int

    init(_ certificates: Certificates, version: String) throws {
        port = try freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificates.path("server.pem"),
                             "-key", certificates.path("server.key"), version, "-cipher", "ALL:@SECLEVEL=0", "-www", "-quiet"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        do { try waitForListener(port) } catch {
            stop()
            throw error
        }
    }

    func stop() {
        // s_server does not end on SIGTERM.
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }
}
