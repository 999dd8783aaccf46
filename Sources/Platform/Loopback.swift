import Glibc

/// Loopback addresses: where a connection without TLS is allowed (the
/// resident filter's listener, re-injection, plain http to a reading server).
package enum Loopback {
    /// True for "localhost", 127.0.0.0/8 and ::1 (also written `[::1]`).
    package static func contains(_ host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) } == Array(repeating: 0, count: 15) + [1]
        }
        return false
    }

    /// True when `text` is an IPv6 address as `inet_pton` reads it (no brackets).
    package static func isIPv6Address(_ text: String) -> Bool {
        var v6 = in6_addr()
        return inet_pton(AF_INET6, text, &v6) == 1
    }
}
