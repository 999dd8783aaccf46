import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import Monitoring
import PartialEncryption
import Platform
import Synchronization

/// How `mailsec serve` runs.
package struct ReadingServerConfiguration: Sendable {
    /// Address to bind; 127.0.0.1 by default (put a TLS proxy in front).
    package var host: String
    /// Port to bind; 0 picks a free one (reported through `onListening`).
    package var port: Int
    /// The SQLite file of published postcards.
    package var storePath: String
    /// The token publishers must present.
    package var publishToken: String
    /// The address readers reach the server at, e.g. `https://read.example.org`;
    /// nil for `http://host:port`.
    package var publicURL: String?
    /// How long an entry lives when the publisher does not ask for less.
    package var lifetime: Int
    /// The largest document accepted, in bytes.
    package var maximumDocument: Int
    /// Time-outs and the cap on concurrent connections.
    package var limits: ConnectionLimits = .standard
    /// Where Prometheus scrapes `GET /metrics`; nil (the default): no endpoint.
    package var metrics: (host: String, port: Int)?

    /// A configuration; the store at `storePath`, publishing allowed with `publishToken`.
    package init(host: String = "127.0.0.1", port: Int = 8080, storePath: String, publishToken: String,
                publicURL: String? = nil, lifetime: Int = 30 * 86400, maximumDocument: Int = 1 << 20) {
        self.host = host
        self.port = port
        self.storePath = storePath
        self.publishToken = publishToken
        self.publicURL = publicURL
        self.lifetime = lifetime
        self.maximumDocument = maximumDocument
    }
}

/// The reading server: publishing, the reading page, deletion and expiry.
///
/// | request | answer |
/// |---|---|
/// | `POST /api/postcards` (bearer publish token, JSON `ReadingDocument`) | 201 `Publication`; 401 no token, 403 wrong token, 400 bad document, 413 too large |
/// | `GET /api/postcards/<id>` | 200 the document (+ `expires`); 404 unknown, expired or deleted |
/// | `DELETE /api/postcards/<id>` (bearer deletion token) | 204; 401, 403, 404 |
/// | `GET /r/<id>` | 200 the reading page; 404 |
/// | `GET /assets/reader.js`, `/assets/reader.css`, `/healthz` | 200 |
package final class ReadingServer: Sendable {
    /// The configuration it was made with.
    package let configuration: ReadingServerConfiguration
    let store: any DocumentStore
    let log: @Sendable (String) -> Void
    let tokenDigest: [UInt8]
    /// The port actually bound (differs from the configured one for port 0).
    let boundPort: Mutex<Int>
    /// Counted whether or not they are served (cheap); served only with ``ReadingServerConfiguration/metrics``.
    let metrics = ReadingMetrics()

    /// A server with `configuration`, opening its store; `log` gets one line per request.
    package convenience init(configuration: ReadingServerConfiguration, log: @escaping @Sendable (String) -> Void) throws(StoreError) {
        self.init(configuration: configuration, store: try PostcardStore(path: configuration.storePath), log: log)
    }

    /// A server with `configuration` keeping its documents in `store` (the
    /// configuration's `storePath` is not opened): the shared store, so that
    /// several servers serve what any one of them published.
    package init(configuration: ReadingServerConfiguration, store: any DocumentStore, log: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.boundPort = Mutex(configuration.port)
        self.store = store
        self.log = log
        self.tokenDigest = Digest.sha256(Array(configuration.publishToken.utf8))
    }

    /// Serves until SIGTERM or SIGINT. `onListening` gets the bound port;
    /// `onMetrics` the metrics endpoint's, when there is one.
    package func run(onListening: @escaping @Sendable (Int) -> Void, onMetrics: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        try await purge(now: Self.now())
        let router = Router()
        router.add(middleware: AccessLog(write: log, count: metrics.request))
        router.get("/healthz") { _, _ in Self.plain(.ok, "ok\n") }
        router.get("/assets/reader.js") { _, _ in Self.asset(Page.script, type: "text/javascript; charset=utf-8") }
        router.get("/assets/reader.css") { _, _ in Self.asset(Page.css, type: "text/css; charset=utf-8") }
        router.get("/r/:id") { _, context in try await self.page(context.parameters.get("id") ?? "") }
        router.get("/api/postcards/:id") { _, context in try await self.read(context.parameters.get("id") ?? "") }
        router.post("/api/postcards") { request, _ in try await self.publish(request) }
        router.delete("/api/postcards/:id") { request, context in try await self.delete(request, id: context.parameters.get("id") ?? "") }
        var logger = Logger(label: "mailsec-serve")
        logger.logLevel = .warning
        let limits = configuration.limits
        let addresses = AddressCounts(limit: limits.maximumPerAddress)
        let app = Application(router: router,
                              server: .http1(configuration: .init(
                                  additionalChannelHandlers: [AddressCapHandler(addresses), RequestDeadlineHandler(limit: limits.requestTimeout),
                                                              SecurityHeadersHandler()],
                                  idleTimeout: .nanoseconds(Int64(limits.idleTimeout.components.seconds) * 1_000_000_000))),
                              configuration: .init(address: .hostname(configuration.host, port: configuration.port),
                                                   serverName: "mailsec",
                                                   availableConnectionsDelegate: MaximumAvailableConnections(limits.maximumConnections)),
                              onServerRunning: { channel in
                                  let port = channel.localAddress?.port ?? self.configuration.port
                                  self.boundPort.withLock { $0 = port }
                                  onListening(port)
                              },
                              logger: logger)
        guard let address = configuration.metrics else {
            try await app.runService()
            return
        }
        let endpoint = MetricsEndpoint(registry: metrics.registry) { self.metrics.refresh(connections: addresses.total) }
        // Both stop on SIGTERM or SIGINT; either failing stops the other.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            group.addTask { try await endpoint.run(host: address.host, port: address.port, signals: true, onListening: onMetrics) }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Removes the expired entries, counting them.
    func purge(now: Int64) async throws(StoreError) {
        let removed = try await store.purge(now: now)
        if removed > 0 { metrics.expired.increment(by: Int64(removed)) }
    }

    // MARK: Handlers

    func page(_ id: String) async throws -> Response {
        guard Self.isIdentifier(id), try await store.find(id: id, now: Self.now()) != nil else {
            return Self.html(.notFound, "<!DOCTYPE html><meta charset=\"utf-8\"><title>Not found</title><p>There is no such mail here: it has expired or was deleted.</p>\n")
        }
        return Self.html(.ok, Page.html)
    }

    func read(_ id: String) async throws -> Response {
        try await purge(now: Self.now())
        guard Self.isIdentifier(id), let entry = try await store.find(id: id, now: Self.now()),
              var document = try? ReadingDocument.decode(entry.document) else {
            return Self.failure(.notFound, "no such postcard: it has expired or was deleted")
        }
        document.lifetime = nil
        metrics.opened.increment()
        return Self.json(.ok, Self.encode(StoredDocument(document: document, expires: Self.iso(entry.expires))))
    }

    func publish(_ request: Request) async throws -> Response {
        guard let presented = Self.bearer(request) else {
            return Self.failure(.unauthorized, "publishing needs the publish token (Authorization: Bearer …)")
        }
        guard Digest.constantTimeEqual(Digest.sha256(Array(presented.utf8)), tokenDigest) else {
            return Self.failure(.forbidden, "wrong publish token")
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > configuration.maximumDocument {
            return Self.failure(.contentTooLarge, "the document is larger than \(configuration.maximumDocument) bytes")
        }
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: configuration.maximumDocument) } catch {
            return Self.failure(.contentTooLarge, "the document is larger than \(configuration.maximumDocument) bytes")
        }
        let bytes = Array(body.readableBytesView)
        let document: ReadingDocument
        do {
            document = try ReadingDocument.decode(bytes)
            try document.validate()
        } catch {
            return Self.failure(.badRequest, "not a reading document: \(error)")
        }
        let now = Self.now()
        try await purge(now: now)
        let lifetime = min(document.lifetime ?? configuration.lifetime, configuration.lifetime)
        let id = Base64URL.random(16)
        let deleteToken = Base64URL.random(32)
        var stored = document
        stored.lifetime = nil
        try await store.insert(id: id, document: stored.json(), deleteTokenDigest: Digest.sha256(Array(deleteToken.utf8)),
                         created: now, expires: now + Int64(lifetime))
        let base = configuration.publicURL ?? "http://\(configuration.host):\(boundPort.withLock { $0 })"
        let publication = Publication(id: id, url: base.trimmingSuffix("/") + "/r/" + id, deleteToken: deleteToken,
                                      expires: Self.iso(now + Int64(lifetime)))
        metrics.published.increment()
        return Self.json(.created, Self.encode(publication))
    }

    func delete(_ request: Request, id: String) async throws -> Response {
        guard let presented = Self.bearer(request) else {
            return Self.failure(.unauthorized, "deleting needs the deletion token (Authorization: Bearer …)")
        }
        guard Self.isIdentifier(id), let digest = try await store.deleteTokenDigest(id: id) else {
            return Self.failure(.notFound, "no such postcard: it has expired or was deleted")
        }
        guard Digest.constantTimeEqual(Digest.sha256(Array(presented.utf8)), digest) else {
            return Self.failure(.forbidden, "wrong deletion token")
        }
        try await store.delete(id: id)
        metrics.deleted.increment()
        return Response(status: .noContent)
    }

    // MARK: Helpers

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    static func iso(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// 16 random bytes in base64url: 22 characters.
    static func isIdentifier(_ id: String) -> Bool {
        id.utf8.count == 22 && Base64URL.decode(id) != nil
    }

    static func bearer(_ request: Request) -> String? {
        guard let value = request.headers[.authorization], value.lowercased().hasPrefix("bearer ") else { return nil }
        let token = value.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Compares two digests in time independent of where they differ.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        .xContentTypeOptions: "nosniff",
        .cacheControl: "no-store",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("X-Frame-Options")!: "DENY",
    ]

    static func respond(_ status: HTTPResponse.Status, _ type: String, _ bytes: [UInt8]) -> Response {
        var headers = securityHeaders
        headers[.contentType] = type
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func html(_ status: HTTPResponse.Status, _ text: String) -> Response { respond(status, "text/html; charset=utf-8", Array(text.utf8)) }
    static func plain(_ status: HTTPResponse.Status, _ text: String) -> Response { respond(status, "text/plain; charset=utf-8", Array(text.utf8)) }
    static func asset(_ text: String, type: String) -> Response { respond(.ok, type, Array(text.utf8)) }
    static func json(_ status: HTTPResponse.Status, _ bytes: [UInt8]) -> Response { respond(status, "application/json", bytes) }

    /// An error answer: `{"error": "…"}`.
    static func failure(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json(status, encode(["error": message]))
    }

    /// Every JSON answer goes through JSONEncoder (sorted keys, so answers are stable).
    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data("{}".utf8))
    }
}

/// A stored document as `GET /api/postcards/ID` answers it: its fields and `expires`.
struct StoredDocument: Encodable {
    let document: ReadingDocument
    let expires: String

    enum CodingKeys: String, CodingKey { case expires }

    func encode(to encoder: any Encoder) throws {
        try document.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(expires, forKey: .expires)
    }
}

/// One line per request: method, path, status. Never a body, a token or a query.
struct AccessLog<Context: RequestContext>: RouterMiddleware {
    let write: @Sendable (String) -> Void
    /// Counts each answer's status (the metrics).
    let count: @Sendable (Int) -> Void

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            write("\(request.method) \(request.uri.path) \(response.status.code)")
            count(response.status.code)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            write("\(request.method) \(request.uri.path) \(status)")
            count(status)
            throw error
        }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
