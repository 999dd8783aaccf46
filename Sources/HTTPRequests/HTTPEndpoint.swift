/// A server's address, `http://host[:port][/prefix]` or `https://…`: a host
/// name or IPv4 address, no user, no query.
public struct HTTPEndpoint: Sendable, Equatable {
    /// True for https.
    public let tls: Bool
    /// The host name or address.
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
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard !authority.isEmpty, parts.count <= 2, !parts[0].isEmpty else {
            throw HTTPExchangeError("the address has no host", kind: .badAddress)
        }
        let port = parts.count == 2 ? Int(parts[1]) : (tls ? 443 : 80)
        guard let port, (1...65535).contains(port) else { throw HTTPExchangeError("the address has a bad port", kind: .badAddress) }
        guard parts[0].unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || ("a"..."z").contains($0)
            || ("A"..."Z").contains($0) || $0 == "." || $0 == "-" }) else {
            throw HTTPExchangeError("the address's host must be a name or an IPv4 address", kind: .badAddress)
        }
        host = String(parts[0])
        self.port = port
        prefix = path
    }

    /// The address of `path` (which starts with `/`) on this server.
    public func url(_ path: String) -> String {
        "\(tls ? "https" : "http")://\(host):\(port)\(prefix)\(path)"
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
