import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a published postcard can be read, and how to withdraw it.
public struct Publication: Sendable, Equatable, Codable {
    /// The entry's identifier.
    public let id: String
    /// The reading page, as the postcard shows it.
    public let url: String
    /// The token that deletes the entry (the publisher's alone).
    public let deleteToken: String
    /// When the entry expires, ISO 8601.
    public let expires: String

    public init(id: String, url: String, deleteToken: String, expires: String) {
        self.id = id
        self.url = url
        self.deleteToken = deleteToken
        self.expires = expires
    }
}

/// Something that stores a reading document and returns where it can be read.
public protocol SpanPublisher: Sendable {
    /// Stores `document`; throws when it was not stored.
    func publish(_ document: ReadingDocument) throws(PublishError) -> Publication
    /// Deletes a publication, e.g. when the mail it belongs to was not sent after all.
    func withdraw(_ publication: Publication) throws(PublishError)
}

/// Why publishing failed. Never carries the document, the password or a token.
public struct PublishError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    /// The HTTP status when the server answered, nil when it could not be reached.
    public let status: Int?
    public init(_ description: String, status: Int? = nil) {
        self.description = description
        self.status = status
    }
}

/// Publishes to `mailsec serve` over HTTP: `POST <base>/api/postcards` with
/// the publishing token as a bearer token. Plain `http://` only: publish to
/// the server's own address (loopback or a private network); the links in the
/// postcards carry the public (TLS) address the server is configured with.
public struct HTTPPublisher: SpanPublisher {
    public var host: String { endpoint.host }
    public var port: Int { endpoint.port }
    /// The path the server is mounted at, without the final slash ("" for the root).
    public var prefix: String { endpoint.prefix }
    /// Where the server listens.
    public let endpoint: HTTPEndpoint
    private let token: String
    public let timeout: Double

    /// `url` is `http://host[:port][/prefix]`.
    public init(url: String, token: String, timeout: Double = 30) throws(PublishError) {
        endpoint = try HTTPEndpoint(url)
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw PublishError("the publishing token is empty or has characters a header cannot carry")
        }
        self.token = token
        self.timeout = timeout
    }

    public func publish(_ document: ReadingDocument) throws(PublishError) -> Publication {
        let response = try HTTPExchange.send(host: host, port: port, timeout: timeout, method: "POST",
                                             path: prefix + "/api/postcards", bearer: token,
                                             contentType: "application/json", body: document.json())
        guard response.status == 201 else {
            throw PublishError("the reading server refused to publish: HTTP \(response.status) \(response.reason)", status: response.status)
        }
        guard let publication = try? JSONDecoder().decode(Publication.self, from: Data(response.body)),
              Self.isToken(publication.id, length: 22), Self.isToken(publication.deleteToken, length: 43),
              publication.url.hasPrefix("https://") || publication.url.hasPrefix("http://"),
              publication.url.hasSuffix("/r/" + publication.id),
              publication.url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw PublishError("the reading server's answer is not a publication", status: response.status)
        }
        return publication
    }

    /// base64url of the given length: what the server's identifiers and tokens are.
    static func isToken(_ text: String, length: Int) -> Bool {
        text.utf8.count == length && Base64URL.decode(text) != nil
    }

    public func withdraw(_ publication: Publication) throws(PublishError) {
        guard Self.isToken(publication.id, length: 22), Self.isToken(publication.deleteToken, length: 43) else {
            throw PublishError("not a publication of this server")
        }
        let response = try HTTPExchange.send(host: host, port: port, timeout: timeout, method: "DELETE",
                                             path: prefix + "/api/postcards/" + publication.id, bearer: publication.deleteToken,
                                             contentType: nil, body: [])
        guard response.status == 204 || response.status == 404 else {
            throw PublishError("the reading server refused the deletion: HTTP \(response.status)", status: response.status)
        }
    }
}

/// A reading server's own address, `http://host[:port][/prefix]`. Plain
/// http only: a host name or IPv4 address, no user, no query.
public struct HTTPEndpoint: Sendable, Equatable {
    public let host: String
    public let port: Int
    /// The path the server is mounted at, without the final slash ("" for the root).
    public let prefix: String

    public init(_ url: String) throws(PublishError) {
        guard url.lowercased().hasPrefix("http://") else {
            throw PublishError("the publish URL must be http://host:port (publish to the server directly; its public https address goes into the links)")
        }
        let rest = url.dropFirst(7)
        let authority = rest.prefix { $0 != "/" }
        var path = String(rest.dropFirst(authority.count))
        while path.hasSuffix("/") { path.removeLast() }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard !authority.isEmpty, parts.count <= 2, !parts[0].isEmpty else { throw PublishError("the publish URL has no host") }
        let port = parts.count == 2 ? Int(parts[1]) : 80
        guard let port, (1...65535).contains(port) else { throw PublishError("the publish URL has a bad port") }
        guard parts[0].unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || ("a"..."z").contains($0)
            || ("A"..."Z").contains($0) || $0 == "." || $0 == "-" }) else {
            throw PublishError("the publish URL's host must be a name or an IPv4 address")
        }
        host = String(parts[0])
        self.port = port
        prefix = path
    }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`), with a
/// time limit on every wait.
public enum HTTPExchange {
    public struct Response: Sendable {
        public let status: Int
        public let reason: String
        public let headers: [(String, String)]
        public let body: [UInt8]
    }

    /// The most a response may hold.
    static let maximumResponse = 16 << 20

    public static func send(host: String, port: Int, timeout: Double, method: String, path: String,
                            bearer: String?, contentType: String?, body: [UInt8]) throws(PublishError) -> Response {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            throw PublishError("cannot resolve the reading server \(host)")
        }
        defer { freeaddrinfo(list) }
        // One deadline for the whole exchange, however the server trickles.
        let deadline = Date().addingTimeInterval(timeout)
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        var fd: Int32 = -1
        var candidate: UnsafeMutablePointer<addrinfo>? = info
        while let address = candidate, fd < 0 {   // every address (localhost may be ::1 first)
            fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            if fd >= 0 {
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
                if connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 {
                    close(fd)
                    fd = -1
                }
            }
            candidate = address.pointee.ai_next
        }
        guard fd >= 0 else { throw PublishError("cannot connect to the reading server \(host):\(port)") }
        defer { close(fd) }
        var head = "\(method) \(path.isEmpty ? "/" : path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        head += "Content-Length: \(body.count)\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if let bearer { head += "Authorization: Bearer \(bearer)\r\n" }
        head += "\r\n"
        let request = Array(head.utf8) + body
        var offset = 0
        while offset < request.count {
            let sent = request[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw PublishError("the connection to the reading server was lost") }
            offset += sent
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline.timeIntervalSinceNow
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&ready, 1, Int32(left * 1000)) > 0 else {
                throw PublishError("the reading server did not answer in time")
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw PublishError("the reading server did not answer in time") }
            received += chunk[0..<count]
            guard received.count <= maximumResponse else { throw PublishError("the reading server's answer is too large") }
        }
        return try parse(received)
    }

    static func parse(_ bytes: [UInt8]) throws(PublishError) -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else {
            throw PublishError("the reading server's answer is not HTTP")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines[0].split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw PublishError("the reading server's answer is not HTTP")
        }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Array(bytes[(end + 4)...])
        if headers.contains(where: { $0.0 == "transfer-encoding" && $0.1.lowercased().contains("chunked") }) {
            body = try dechunk(body)
        } else if let length = headers.first(where: { $0.0 == "content-length" }).flatMap({ Int($0.1) }), length <= body.count {
            body = Array(body[..<length])
        }
        return Response(status: status, reason: statusLine.count > 2 ? String(statusLine[2]) : "", headers: headers, body: body)
    }

    static func dechunk(_ bytes: [UInt8]) throws(PublishError) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = bytes[index...].indices.first(where: { bytes[$0] == 10 }) else { break }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(sizeText, radix: 16) else { throw PublishError("the reading server's answer is badly chunked") }
            if size == 0 { break }
            let start = lineEnd + 1
            guard start + size <= bytes.count else { throw PublishError("the reading server's answer is cut short") }
            out += bytes[start..<(start + size)]
            index = start + size + 2
        }
        return out
    }
}
