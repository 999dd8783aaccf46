import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// One HTTP request and its answer, through async-http-client (TLS by
/// swift-nio-ssl), waited for synchronously: the callers (the pipeline, the
/// command line) are not async. Each exchange has its own client, shut down
/// afterwards, and one deadline for all of it.
package enum HTTPExchange {
    /// An answer, read whole (at most `maximumResponse` bytes).
    package struct Response: Sendable {
        package let status: Int
        package let reason: String
        /// Field names lowercased.
        package let headers: [(String, String)]
        package let body: [UInt8]
    }

    /// The most an answer may hold.
    package static let maximumResponse = 16 << 20

    /// Sends `method path` to `endpoint`. Over https the server's certificate
    /// must chain to the system's trusted roots, or with `caFile` to the
    /// certificates in that PEM file alone. Redirects are not followed.
    package static func send(_ endpoint: HTTPEndpoint, caFile: String? = nil, timeout: Double, method: String, path: String,
                             bearer: String?, contentType: String?, body: [UInt8]) throws(HTTPExchangeError) -> Response {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12  // TLS 1.0 and 1.1 are broken (RFC 8996)
        if let caFile {
            do { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) } catch {
                throw HTTPExchangeError("cannot read the CA file \(caFile)", kind: .untrusted)
            }
        }
        let wait = TimeAmount.milliseconds(Int64(max(timeout, 0.001) * 1000))
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow,
                                                     timeout: .init(connect: wait, read: wait))
        configuration.connectionPool.retryConnectionEstablishment = false  // one request: a refusal is the answer
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer { try? client.syncShutdown() }
        var headers = HTTPHeaders()
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        if let bearer { headers.add(name: "Authorization", value: "Bearer " + bearer) }
        headers.add(name: "Connection", value: "close")
        let response: HTTPClient.Response
        do {
            let request = try HTTPClient.Request(url: endpoint.url(path.isEmpty ? "/" : path), method: HTTPMethod(rawValue: method),
                                                 headers: headers, body: body.isEmpty && method == "GET" ? nil : .bytes(body))
            let accumulator = ResponseAccumulator(request: request, maxBodySize: maximumResponse)
            response = try client.execute(request: request, delegate: accumulator, deadline: .now() + wait).wait()
        } catch {
            throw describe(error, endpoint)
        }
        return Response(status: Int(response.status.code), reason: response.status.reasonPhrase,
                        headers: response.headers.map { ($0.name.lowercased(), $0.value) },
                        body: response.body.map { Array($0.readableBytesView) } ?? [])
    }

    /// Plain http to `host:port` (tests, and callers that hold no endpoint).
    package static func send(host: String, port: Int, timeout: Double, method: String, path: String,
                             bearer: String?, contentType: String?, body: [UInt8]) throws(HTTPExchangeError) -> Response {
        try send(HTTPEndpoint("http://\(host.contains(":") ? "[\(host)]" : host):\(port)"), timeout: timeout, method: method, path: path,
                 bearer: bearer, contentType: contentType, body: body)
    }

    /// The error as one line that names the server, never a body or a token.
    static func describe(_ error: any Error, _ endpoint: HTTPEndpoint) -> HTTPExchangeError {
        let server = "\(endpoint.host):\(endpoint.port)"
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return HTTPExchangeError("the TLS connection to \(server) failed: its certificate is not trusted or not for that name",
                                     kind: .untrusted)
        }
        if error is ResponseAccumulator.ResponseTooBigError {
            return HTTPExchangeError("the answer of \(server) is too large", kind: .badAnswer)
        }
        if let error = error as? HTTPClientError {
            if [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error) {
                return HTTPExchangeError("\(server) did not answer in time", kind: .unreachable)
            }
            if error == .remoteConnectionClosed {
                return HTTPExchangeError("the connection to \(server) was lost", kind: .unreachable)
            }
            return HTTPExchangeError("the exchange with \(server) failed (\(error.shortDescription))", kind: .badAnswer)
        }
        return HTTPExchangeError("cannot connect to \(server)", kind: .unreachable)
    }
}
