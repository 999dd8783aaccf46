internal import CGMime

/// SHA-256 and HMAC-SHA-256 from GLib (`GChecksum`, `g_compute_hmac_for_data`),
/// which GMime brings along: no further library for a journal key or a tag.
public enum Digest {
    /// The SHA-256 of `data`, as lower-case hex.
    public static func sha256Hex(_ data: [UInt8]) -> String {
        takeString(data.withUnsafeBufferPointer { g_compute_checksum_for_data(G_CHECKSUM_SHA256, $0.baseAddress, gsize($0.count)) }) ?? ""
    }

    /// The HMAC-SHA-256 of `data` under `key`, as lower-case hex.
    public static func hmacSHA256Hex(key: [UInt8], data: [UInt8]) -> String {
        takeString(key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                g_compute_hmac_for_data(G_CHECKSUM_SHA256, k.baseAddress, gsize(k.count), d.baseAddress, gsize(d.count))
            }
        }) ?? ""
    }
}
