import Foundation
import Platform

/// A buffer for building protocol lines that hold a secret (AUTH); zeroed
/// when the last reference goes.
///
/// `@unchecked Sendable`: filled by one function, then only read (handed to
/// the event loop that writes it).
final class SecretBuffer: @unchecked Sendable {
    private(set) var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    func append(_ byte: UInt8) { bytes.append(byte) }
    func append(contentsOf other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }
    func append(_ secret: SecretBytes) {
        secret.withUnsafeBytes { bytes.append(contentsOf: $0) }
    }

    /// Base64 (RFC 4648) of the bytes, itself a secret.
    func base64() -> SecretBuffer {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let out = SecretBuffer(capacity: (bytes.count + 2) / 3 * 4 + 2)
        var index = 0
        while index < bytes.count {
            let b0 = bytes[index]
            let b1 = index + 1 < bytes.count ? bytes[index + 1] : 0
            let b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(index + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return out
    }

    deinit {
        // The array's capacity was reserved up front, so it was never moved
        // (and no unzeroed copy left behind) while it was filled.
        zeroize(&bytes)
    }
}
