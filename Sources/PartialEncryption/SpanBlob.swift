import Crypto
import _CryptoExtras
import Foundation
import Platform

/// The encrypted spans of one postcard, in a format a browser can open with
/// WebCrypto alone. Version 1, all integers big-endian:
///
/// | bytes | content |
/// |---|---|
/// | 0–3 | magic `MSPE` |
/// | 4 | format version, 1 |
/// | 5 | key derivation, 1 = PBKDF2-HMAC-SHA256 |
/// | 6–9 | PBKDF2 iterations (at least 600,000) |
/// | 10–25 | salt, 16 random bytes |
/// | 26–37 | AES-GCM nonce, 12 random bytes |
/// | 38– | AES-256-GCM ciphertext, then its 16-byte tag |
///
/// The key is PBKDF2-HMAC-SHA256(password, salt, iterations, 32 bytes); the
/// password is the normalised characters (upper case, no dashes or spaces)
/// as UTF-8. Bytes 0–37 are the additional authenticated data, so nothing in
/// the header can be changed unnoticed. The plaintext is a JSON array of
/// strings, span 1, span 2, …, padded with spaces to a multiple of 256 bytes.
public struct SpanBlob: Sendable, Equatable {
    /// The blob's first four bytes.
    public static let magic = Array("MSPE".utf8)
    /// The blob format this code writes and reads.
    public static let version: UInt8 = 1
    /// The key derivation byte for PBKDF2-HMAC-SHA256.
    public static let pbkdf2SHA256: UInt8 = 1
    /// The iterations written and the fewest accepted.
    public static let minimumIterations = 600_000
    /// The most accepted, so that a crafted blob cannot keep a reader busy for minutes.
    public static let maximumIterations = 10_000_000
    static let headerSize = 38

    /// The whole blob.
    public let bytes: [UInt8]

    /// Reads a blob, checking its header. Nothing is decrypted yet.
    public init(bytes: [UInt8]) throws(SpanBlobError) {
        guard bytes.count >= Self.headerSize + 16 else { throw SpanBlobError(.malformed) }
        guard Array(bytes[0..<4]) == Self.magic else { throw SpanBlobError(.malformed) }
        guard bytes[4] == Self.version, bytes[5] == Self.pbkdf2SHA256 else { throw SpanBlobError(.unsupportedVersion) }
        let iterations = bytes[6..<10].reduce(0) { $0 << 8 | Int($1) }
        guard (Self.minimumIterations...Self.maximumIterations).contains(iterations) else {
            throw SpanBlobError(.unsupportedVersion)
        }
        self.bytes = bytes
    }

    /// Reads a blob from base64url (the transport form).
    public init(base64URL: String) throws(SpanBlobError) {
        guard let data = Base64URL.decode(base64URL) else { throw SpanBlobError(.malformed) }
        try self.init(bytes: data)
    }

    /// The transport form: base64url without padding.
    public var base64URL: String { Base64URL.encode(bytes) }

    /// The PBKDF2 iteration count stored in the header.
    public var iterations: Int { bytes[6..<10].reduce(0) { $0 << 8 | Int($1) } }

    /// Encrypts `spans` under `password` with a fresh salt and nonce.
    public static func seal(_ spans: [String], password: SpanPassword,
                            iterations: Int = minimumIterations) throws(SpanBlobError) -> SpanBlob {
        guard iterations >= minimumIterations, iterations <= maximumIterations else { throw SpanBlobError(.unsupportedVersion) }
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let nonce = (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var header = magic + [version, pbkdf2SHA256]
        header += withUnsafeBytes(of: UInt32(iterations).bigEndian, Array.init)
        header += salt + nonce
        var plaintext = Array((try? JSONEncoder().encode(spans)) ?? Data())
        // GCM does not hide length: pad with JSON white space to a multiple of
        // 256 bytes, so the blob tells a span's length only to that grain.
        plaintext += Array(repeating: UInt8(ascii: " "), count: (256 - plaintext.count % 256) % 256)
        defer { zeroize(&plaintext) }
        do {
            let key = try deriveKey(password, salt: salt, iterations: iterations)
            let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: nonce), authenticating: header)
            return try SpanBlob(bytes: header + Array(box.ciphertext) + Array(box.tag))
        } catch {
            throw SpanBlobError(.cryptoFailure)
        }
    }

    /// The spans, or `.wrongPassword` when the password (or the blob) is not right.
    public func open(password: SpanPassword) throws(SpanBlobError) -> [String] {
        let header = Array(bytes[0..<Self.headerSize])
        let salt = Array(bytes[10..<26])
        let nonce = Array(bytes[26..<38])
        let sealed = bytes[Self.headerSize...]
        let key: SymmetricKey
        do { key = try Self.deriveKey(password, salt: salt, iterations: iterations) } catch { throw SpanBlobError(.cryptoFailure) }
        var plaintext: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: sealed.dropLast(16),
                                            tag: sealed.suffix(16))
            plaintext = Array(try AES.GCM.open(box, using: key, authenticating: header))
        } catch {
            throw SpanBlobError(.wrongPassword)
        }
        defer { zeroize(&plaintext) }
        guard let spans = try? JSONDecoder().decode([String].self, from: Data(plaintext)) else {
            throw SpanBlobError(.malformed)
        }
        return spans
    }

    static func deriveKey(_ password: SpanPassword, salt: [UInt8], iterations: Int) throws -> SymmetricKey {
        try password.withNormalized { characters in
            try KDF.Insecure.PBKDF2.deriveKey(from: characters, salt: salt, using: .sha256,
                                              outputByteCount: 32, rounds: iterations)
        }
    }
}

/// Why a blob could not be made or opened. Never carries span text or the password.
public struct SpanBlobError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong with a blob.
    public enum Code: Sendable, Equatable { case malformed, unsupportedVersion, wrongPassword, cryptoFailure }
    /// What went wrong.
    public let code: Code
    /// An error with its code.
    public init(_ code: Code) { self.code = code }
    /// One line, never span text or the password.
    public var description: String {
        switch code {
        case .malformed: "the encrypted spans are malformed"
        case .unsupportedVersion: "the encrypted spans use an unsupported format or iteration count"
        case .wrongPassword: "wrong password"
        case .cryptoFailure: "the encryption library failed"
        }
    }
}

/// base64url without padding (RFC 4648 §5). For mailsec's own targets.
package enum Base64URL {
    /// The bytes as base64url, unpadded.
    package static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of unpadded base64url; nil for any other character.
    package static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 == 45 || $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) })
        else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }

    /// `count` random bytes, base64url: identifiers and tokens.
    package static func random(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return encode((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
