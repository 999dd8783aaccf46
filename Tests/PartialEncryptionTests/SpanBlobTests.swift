import Foundation
import Crypto
import _CryptoExtras
@testable import PartialEncryption
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
        #expect(try HTTPPublisher(url: "http://read.example", token: "t").port == 80)
        let secure = try HTTPPublisher(url: "HTTPS://read.example/x", token: "t")
        #expect(secure.endpoint.tls && secure.port == 443 && secure.endpoint.url("/r/1") == "https://read.example:443/x/r/1")
        for url in ["ftp://x", "http://", "https://", "http://x:0", "http://x:99999", "http://a\r\nX: y:80",
                    "http://x/a b", "http://x/?q=1", "http://user@x", "read.example"] {
            #expect(throws: PublishError.self, "\(url)") { try HTTPPublisher(url: url, token: "t") }
        }
        #expect(throws: PublishError.self) { try HTTPPublisher(url: "http://x", token: "a b") }
        #expect(throws: PublishError.self) { try HTTPPublisher(url: "http://x", token: "") }
    }

    @Test("publishing to a port where nobody listens fails with a clear error")
    func unreachable() throws {
        let publisher = try HTTPPublisher(url: "http://127.0.0.1:9", token: "t", timeout: 2)
        let document = ReadingDocument(from: [], subject: [], body: [.span(1)], spanCount: 1,
                                       blob: try SpanBlob.seal(["s"], password: SpanPassword()))
        #expect(throws: PublishError.self) { try publisher.publish(document) }
    }
}
