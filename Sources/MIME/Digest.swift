internal import CGMime

/// SHA-256 and HMAC-SHA-256 from GLib (`GChecksum`, `g_compute_hmac_for_data`),
/// which GMime brings along: no further library for a journal key or a tag.
/// For mailsec's own targets, not a library API.
package enum Digest {
    /// The SHA-256 of `data`, as lower-case hex.
    package static func sha256Hex(_ data: [UInt8]) -> String {
        takeString(data.withUnsafeBufferPointer { g_compute_checksum_for_data(G_CHECKSUM_SHA256, $0.baseAddress, gsize($0.count)) }) ?? ""
    }

    /// The HMAC-SHA-256 of `data` under `key`, as lower-case hex.
    package static func hmacSHA256Hex(key: [UInt8], data: [UInt8]) -> String {
        takeString(key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                g_compute_hmac_for_data(G_CHECKSUM_SHA256, k.baseAddress, gsize(k.count), d.baseAddress, gsize(d.count))
            }
        }) ?? ""
    }

    /// True when `a` and `b` are equal, in a time that depends only on their
    /// lengths (a tag compared byte by byte with an early exit tells an
    /// attacker how much of a forged tag was right).
    package static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8), right = Array(b.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
