import Foundation
import MIME
import OpenPGP
import Pipeline
import Policy
import TestSupport
import Testing

let mixedMailText = """
    From: Alice <alice@example.org>
    To: Bob <bob@example.org>
    Cc: nobody@example.org
    Bcc: carol@example.org
    Subject: Plan [[private]]Falcon[[/private]] review
    Date: Sat, 21 Nov 2026 10:00:00 +0100
    Message-ID: <mixed.1@example.org>
    In-Reply-To: <earlier.1@example.org>
    References: <earlier.1@example.org>
    MIME-Version: 1.0
    Content-Type: multipart/alternative; boundary="alt"

    --alt
    Content-Type: text/plain; charset=utf-8

    Hi all, the review is on Monday.
    [[private]]The launch code is 4711.[[/private]]
    Bye.
    --alt
    Content-Type: text/html; charset=utf-8

    <p>Hi all, the review is on Monday.</p>
    <p>[[private]]The launch code is <b>4711</b>.[[/private]]</p>
    --alt--

    """

/// The fixture homes: the sender's, and each recipient's.
let senderFixtures = ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]

func parse(_ text: String) throws -> MIMEMessage { try MIMEMessage.parse(Array(text.utf8)) }

/// gpg decrypts `letter` in a home holding `secret` (and Alice's public key).
func gpgOpen(_ letter: [UInt8], as secret: String) throws -> ProcessResult {
    let message = try MIMEMessage.parse(letter)
    let ciphertext = try #require(message.body.flatMap { PGPMIME.ciphertext(of: $0) })
    return try withGnuPGHome(importing: [secret, "alice.pub.asc"]) { home throws in
        try home.gpg(["--status-fd", "2", "--decrypt"], input: ciphertext)
    }
}

/// A compact, stable picture of a message's structure for golden files:
/// header names (Subject with its value), then the part tree with media
/// types and the parameters that matter; boundaries and ciphertext left out.
func skeleton(_ message: MIMEMessage) -> String {
    var lines = ["headers: " + message.headers.map { $0.name == "Subject" ? "Subject=\($0.value)" : $0.name }
        .joined(separator: ", ")]
    if let body = message.body { lines += skeleton(body) }
    return lines.joined(separator: "\n") + "\n"
}

func skeleton(_ entity: MIMEEntity) -> [String] {
    entity.walk().map { path, part in
        let type = part.contentType
        var line = String(repeating: "  ", count: path.count) + type.description
        for name in ["protocol", "micalg", "hp", "charset"] {
            if let value = type.parameters[name] { line += " \(name)=\(value)" }
        }
        if let filename = part.filename { line += " filename=\(filename)" }
        return line
    }
}

/// Compares with `Fixtures/golden/NAME.txt`; `UPDATE_GOLDEN=1` rewrites it.
func expectGolden(_ actual: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let url = Paths.fixtures.appendingPathComponent("golden/\(name).txt")
    if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
        try actual.write(to: url, atomically: true, encoding: .utf8)
        return
    }
    let expected = try? String(contentsOf: url, encoding: .utf8)
    #expect(expected == actual, "golden \(name).txt differs (UPDATE_GOLDEN=1 rewrites it)", sourceLocation: sourceLocation)
}

/// Every piece of text a reader could see in a message, decoded: header
/// values (raw and decoded), part contents, file names, embedded messages.
func everythingVisible(_ bytes: [UInt8]) throws -> [String] {
    var seen = [String(decoding: bytes, as: UTF8.self)]
    let message = try MIMEMessage.parse(bytes)
    func headers(_ message: MIMEMessage) {
        for header in message.headers { seen += [header.value, header.rawValue] }
    }
    headers(message)
    for (_, part) in message.body?.walk() ?? [] {
        seen += part.headers.flatMap { [$0.value, $0.rawValue] }
        if let text = part.text { seen.append(text) }
        if let content = part.content {
            seen.append(String(decoding: content, as: UTF8.self))
            seen.append(String(content.map { Character(Unicode.Scalar($0)) }))  // Latin-1 view
        }
        if let filename = part.filename { seen.append(filename) }
        if let embedded = part.embeddedMessage { headers(embedded) }
    }
    return seen
}

/// The Autocrypt header names Alice, asks for mutual, and its keydata (white
/// space ignored, as readers do) imports into gpg as her key.
func expectAutocryptKey(_ value: String, fingerprint: String?, sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(value.hasPrefix("addr=alice@example.org; prefer-encrypt=mutual; keydata="), sourceLocation: sourceLocation)
    let base64 = String(try #require(value.components(separatedBy: "keydata=").last)).filter { !$0.isWhitespace }
    let keydata = try #require(Data(base64Encoded: base64), sourceLocation: sourceLocation)
    try withGnuPGHome { home throws in
        let imported = try home.gpg(["--import"], input: Array(keydata))
        #expect(imported.status == 0, "\(imported.errors)", sourceLocation: sourceLocation)
        let listed = try home.gpg(["--with-colons", "--list-keys", "alice@example.org"]).output
        if let fingerprint { #expect(listed.contains(fingerprint), sourceLocation: sourceLocation) }
        #expect(listed.contains("alice@example.org"), sourceLocation: sourceLocation)
    }
}

/// The base64 of an OpenPGP message that is encrypted already as issue 21
/// defines it: a PKESK packet, then an SEIPD packet (their bodies are stand-ins;
/// only the packet headers are read).
let exactCiphertext = "wQoDAQIDBAUGBwgB0gUBCQkJCQ=="
