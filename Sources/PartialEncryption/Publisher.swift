import Foundation
import HTTPRequests

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

    /// A publication as the server described it.
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
    /// One line, for people.
    public let description: String
    /// The HTTP status when the server answered, nil when it could not be reached.
    public let status: Int?
    /// An error with its line, and the HTTP status when there was an answer.
    public init(_ description: String, status: Int? = nil) {
        self.description = description
        self.status = status
    }
}

/// Publishes to `mailsec serve`: `POST <base>/api/postcards` with the
/// publishing token as a bearer token, over http (the server's own address,
/// loopback or a private network) or https (through a TLS proxy; `caFile`
/// names the CA to trust instead of the system's). The links in the postcards
/// carry the public address the server is configured with.
public struct HTTPPublisher: SpanPublisher {
    /// The server's host.
    public var host: String { endpoint.host }
    /// The server's port.
    public var port: Int { endpoint.port }
    /// The path the server is mounted at, without the final slash ("" for the root).
    public var prefix: String { endpoint.prefix }
    /// Where the server listens.
    public let endpoint: HTTPEndpoint
    private let token: String
    /// Seconds for one exchange, everything included.
    public let timeout: Double
    /// A PEM file of the CA certificates to trust for https, instead of the system's.
    public let caFile: String?

    /// `url` is `http[s]://host[:port][/prefix]`.
    public init(url: String, token: String, timeout: Double = 30, caFile: String? = nil) throws(PublishError) {
        do { endpoint = try HTTPEndpoint(url) } catch { throw PublishError("the publish URL: \(error.description)") }
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw PublishError("the publishing token is empty or has characters a header cannot carry")
        }
        self.token = token
        self.timeout = timeout
        self.caFile = caFile
    }

    /// Sends `document` to the server; the publication it answers with, checked.
    public func publish(_ document: ReadingDocument) throws(PublishError) -> Publication {
        let response = try exchange("POST", prefix + "/api/postcards", bearer: token, contentType: "application/json",
                                    body: document.json())
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

    /// Deletes the publication with its delete token; an entry already gone counts as deleted.
    public func withdraw(_ publication: Publication) throws(PublishError) {
        guard Self.isToken(publication.id, length: 22), Self.isToken(publication.deleteToken, length: 43) else {
            throw PublishError("not a publication of this server")
        }
        let response = try exchange("DELETE", prefix + "/api/postcards/" + publication.id, bearer: publication.deleteToken,
                                    contentType: nil, body: [])
        guard response.status == 204 || response.status == 404 else {
            throw PublishError("the reading server refused the deletion: HTTP \(response.status)", status: response.status)
        }
    }

    private func exchange(_ method: String, _ path: String, bearer: String?, contentType: String?,
                          body: [UInt8]) throws(PublishError) -> HTTPExchange.Response {
        do {
            return try HTTPExchange.send(endpoint, caFile: caFile, timeout: timeout, method: method, path: path,
                                         bearer: bearer, contentType: contentType, body: body)
        } catch {
            throw PublishError("the reading server: \(error.description)")
        }
    }
}

/// Fetches a published document, as `mailsec reveal` and the reading page do:
/// `GET <base>/api/postcards/ID` for the reading page's address `<base>/r/ID`.
public struct DocumentFetcher: Sendable {
    /// Where the server is.
    public let endpoint: HTTPEndpoint
    /// The entry's identifier.
    public let id: String
    /// A PEM file of the CA certificates to trust for https, instead of the system's.
    public let caFile: String?

    /// `pageURL` is the reading page's address, `http[s]://host[:port][/prefix]/r/ID`.
    public init(pageURL: String, caFile: String? = nil) throws(PublishError) {
        guard let range = pageURL.range(of: "/r/", options: .backwards),
              HTTPPublisher.isToken(String(pageURL[range.upperBound...]), length: 22) else {
            throw PublishError("\(pageURL) is not a reading page address (…/r/ID)")
        }
        do { endpoint = try HTTPEndpoint(String(pageURL[..<range.lowerBound])) } catch {
            throw PublishError("\(pageURL): \(error.description)")
        }
        id = String(pageURL[range.upperBound...])
        self.caFile = caFile
    }

    /// The document; `PublishError.status` is 404 when the server has no such entry.
    public func fetch(timeout: Double = 30) throws(PublishError) -> ReadingDocument {
        let response: HTTPExchange.Response
        do {
            response = try HTTPExchange.send(endpoint, caFile: caFile, timeout: timeout, method: "GET",
                                             path: endpoint.prefix + "/api/postcards/" + id, bearer: nil, contentType: nil, body: [])
        } catch {
            throw PublishError("the reading server: \(error.description)")
        }
        guard response.status == 200 else {
            throw PublishError("the reading server answered HTTP \(response.status)", status: response.status)
        }
        // Checked as the server checks what it stores: every number in range, from any server.
        do throws(SpanBlobError) {
            let document = try ReadingDocument.decode(response.body)
            try document.validate()
            return document
        } catch {
            throw PublishError("the reading server's answer is not a reading document", status: response.status)
        }
    }
}
