import Foundation

/// The name this host gives in EHLO.
package enum HeloName {
    /// This host's fully qualified name: `gethostname`, then its canonical
    /// name from `getaddrinfo` (`AI_CANONNAME`), when that has a dot. Nil
    /// when neither is a dotted domain name; the session then uses the
    /// address literal of its own end of the connection ("[192.0.2.1]"),
    /// which RFC 5321 allows and servers accept. Looked up once per process.
    package static func local() -> String? { cached }

    private static let cached: String? = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var hints = addrinfo()
        hints.ai_flags = AI_CANONNAME
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        var canonical: String?
        if getaddrinfo(host, nil, &hints, &list) == 0, let list {
            canonical = list.pointee.ai_canonname.map { String(cString: $0) }
            freeaddrinfo(list)
        }
        return [canonical, host].compactMap { $0 }.first { isDomain($0) && $0.contains(".") }
    }()

    /// True for a name EHLO may carry: a domain (``isDomain(_:)``) or an
    /// address literal in brackets of printable ASCII without spaces. Anything
    /// else (a line break above all, which would inject commands) is refused.
    package static func isAcceptable(_ name: String) -> Bool {
        if isDomain(name) { return true }
        guard name.hasPrefix("["), name.hasSuffix("]"), name.count > 2, name.utf8.count <= 255 else { return false }
        return name.dropFirst().dropLast().unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && $0 != "[" && $0 != "]" }
    }

    /// Letters, digits, hyphens and dots, as RFC 5321's Domain.
    static func isDomain(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 253 && !name.hasPrefix(".") && !name.hasSuffix(".") && !name.contains("..")
            && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".") }
    }
}
