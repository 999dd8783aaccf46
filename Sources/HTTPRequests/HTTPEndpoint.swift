import Platform

/// A server's address, `http://host[:port][/prefix]` or `https://…`: a host
/// name, an IPv4 address or an IPv6 address in brackets, no user, no query.
/// Plain http only to loopback: a publishing token must not cross a network
/// in clear, nor a document come from a server nobody authenticated.
public struct HTTPEndpoint: Sendable, Equatable {
    /// True for https.
    public let tls: Bool
    /// The host name or address (an IPv6 address without its brackets).
    public let host: String
    /// The port (80 or 443 when the address names none).
    public let port: Int
    /// The path the server is mounted at, without the final slash ("" for the root).
    public let prefix: String

    /// Parses `url`; throws for anything but an http or https address of the shape above.
    public init(_ url: String) throws(HTTPExchangeError) {
        let lowered = url.lowercased()
        if lowered.hasPrefix("https://") {
            tls = true
        } else if lowered.hasPrefix("http://") {
            tls = false
        } else {
            throw HTTPExchangeError("the address must start with http:// or https://", kind: .badAddress)
        }
        let rest = url.dropFirst(tls ? 8 : 7)
        let authority = rest.prefix { $0 != "/" }
        var path = String(rest.dropFirst(authority.count))
        while path.hasSuffix("/") { path.removeLast() }
        guard path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "?" && $0 != "#" }) else {
            throw HTTPExchangeError("the address's path must be plain (no query, no spaces)", kind: .badAddress)
        }
        let name: Substring, portText: Substring?
        if authority.hasPrefix("[") {
            // [IPv6]:port — the only place a colon belongs to the host.
            guard let close = authority.firstIndex(of: "]") else { throw HTTPExchangeError("the address has no host", kind: .badAddress) }
            name = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw HTTPExchangeError("the address has a bad port", kind: .badAddress) }
            portText = after.isEmpty ? nil : after.dropFirst()
            guard Loopback.isIPv6Address(String(name)) else {
                throw HTTPExchangeError("the address's host in brackets must be an IPv6 address", kind: .badAddress)
            }
        } else {
            let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
            guard !authority.isEmpty, parts.count <= 2, !parts[0].isEmpty else {
                throw HTTPExchangeError("the address has no host", kind: .badAddress)
            }
            name = parts[0]
            portText = parts.count == 2 ? parts[1] : nil
            guard name.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || ("a"..."z").contains($0)
                || ("A"..."Z").contains($0) || $0 == "." || $0 == "-" }) else {
                throw HTTPExchangeError("the address's host must be a name, an IPv4 address or [an IPv6 address]", kind: .badAddress)
            }
        }
        let port = portText.map { text in text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber) ? Int(text) : nil } ?? (tls ? 443 : 80)
        guard let port, (1...65535).contains(port) else { throw HTTPExchangeError("the address has a bad port", kind: .badAddress) }
        guard tls || Loopback.contains(String(name)) else {
            throw HTTPExchangeError("plain http only to loopback (127.0.0.1, [::1], localhost): use https for \(name)", kind: .badAddress)
        }
        host = String(name)
        self.port = port
        prefix = path
    }

    /// The address of `path` (which starts with `/`) on this server.
    public func url(_ path: String) -> String {
        "\(tls ? "https" : "http")://\(host.contains(":") ? "[\(host)]" : host):\(port)\(prefix)\(path)"
    }
}

/// Why an exchange failed. Never carries a body or a token.
public struct HTTPExchangeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, broadly.
    public enum Kind: Sendable, Equatable {
        /// The address is not one this client takes.
        case badAddress
        /// No answer: the server cannot be reached or did not answer in time.
        case unreachable
        /// The server's certificate is not trusted (or the CA file cannot be read).
        case untrusted
        /// The answer is not HTTP, or too large.
        case badAnswer
    }

    /// One line, for people.
    public let description: String
    /// What went wrong, broadly.
    public let kind: Kind

    /// An error with its line and kind.
    public init(_ description: String, kind: Kind) {
        self.description = description
        self.kind = kind
    }
}
