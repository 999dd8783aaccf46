import Crypto

/// Digests on swift-crypto, the one place mailsec hashes: a journal's or a
/// cache's file name, a copy's tag, a key packet's fingerprint, a token
/// compared without a timing leak. For mailsec's own targets, not a library API.
package enum Digest {
    /// The SHA-256 of `data`.
    package static func sha256(_ data: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: data))
    }

    /// The SHA-256 of `data`, as lower-case hex.
    package static func sha256Hex(_ data: [UInt8]) -> String {
        hex(sha256(data))
    }

    /// The HMAC-SHA-256 of `data` under `key`, as lower-case hex.
    package static func hmacSHA256Hex(key: [UInt8], data: [UInt8]) -> String {
        hex(Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key))))
    }

    /// The SHA-1 of `data`: only where a format defines an identifier by it
    /// (OpenPGP v4 fingerprints), never for a security decision of ours.
    package static func sha1(_ data: [UInt8]) -> [UInt8] {
        Array(Insecure.SHA1.hash(data: data))
    }

    /// `bytes` as hex digits, lower-case unless `uppercase`. By hand, not
    /// `String(format:)`: its CVarArg casts cost a process a runtime
    /// conformance scan of the whole binary the first time.
    package static func hex(_ bytes: [UInt8], uppercase: Bool = false) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return String(decoding: out, as: UTF8.self)
    }

    /// True when `a` and `b` are equal, in a time that depends only on their
    /// lengths (a tag compared byte by byte with an early exit tells an
    /// attacker how much of a forged tag was right).
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// The same for the UTF-8 of two strings.
    package static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        constantTimeEqual(Array(a.utf8), Array(b.utf8))
    }
}
