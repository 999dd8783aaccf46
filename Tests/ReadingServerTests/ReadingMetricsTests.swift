import Foundation
import HTTPRequests
import PartialEncryption
import TestSupport
import Testing

/// Issue 25, item 3: `mailsec serve --metrics-listen`, scraped over TCP.
@Suite("The reading server's metrics", .serialized)
struct ReadingMetricsTests {
    static func metricsPort(_ server: ReadingServerProcess) throws -> Int {
        for _ in 0..<200 {
            let out = String(decoding: FileManager.default.contents(atPath: server.folder + "/out") ?? Data(), as: UTF8.self)
            if let line = out.split(separator: "\n").first(where: { $0.hasPrefix("metrics on http://127.0.0.1:") }),
               let port = line.dropFirst("metrics on http://127.0.0.1:".count).split(separator: "/").first.flatMap({ Int($0) }) {
                return port
            }
            usleep(50_000)
        }
        throw HTTPExchangeError("mailsec serve never said where its metrics are", kind: .badAnswer)
    }

    static func scrape(_ port: Int) throws -> [String: Double] {
        let response = try HTTPExchange.send(host: "127.0.0.1", port: port, timeout: 10, method: "GET", path: "/metrics",
                                             bearer: nil, contentType: nil, body: [])
        #expect(response.status == 200)
        #expect(response.headers.contains { $0.0 == "content-type" && $0.1.hasPrefix("text/plain; version=0.0.4") })
        return try parseExposition(String(decoding: response.body, as: UTF8.self))
    }

    @Test("requests by status, documents published, opened, deleted and expired: each moves by exactly what was done")
    func counted() throws {
        let server = try ReadingServerProcess(extraArguments: ["--metrics-listen", "127.0.0.1:0"])
        defer { server.remove() }
        let port = try Self.metricsPort(server)
        let before = try Self.scrape(port)
        #expect(before.sum("mailsec_serve_requests_total") == 0)
        let publisher = try HTTPPublisher(url: server.url, token: server.token)
        let published = Int.random(in: 2...4), opened = Int.random(in: 1...3), missing = Int.random(in: 1...3)
        var publications: [Publication] = []
        for _ in 0..<published { publications.append(try publisher.publish(try sampleDocument().0)) }
        let short = try publisher.publish(try sampleDocument(lifetime: 1).0)
        for _ in 0..<opened { #expect(try get(server, "/api/postcards/" + publications[0].id).status == 200) }
        for _ in 0..<missing { #expect(try get(server, "/api/postcards/AAAAAAAAAAAAAAAAAAAAAA").status == 404) }
        _ = try post(server, try sampleDocument().0.json(), token: "wrong-token-wrong-token")
        try publisher.withdraw(publications[1])
        sleep(2)
        #expect(try get(server, "/api/postcards/" + short.id).status == 404, "expired")
        let after = try Self.scrape(port)
        #expect(after.value("mailsec_serve_requests_total{status=\"201\"}") == Double(published + 1))
        #expect(after.value("mailsec_serve_requests_total{status=\"200\"}") == Double(opened))
        #expect(after.value("mailsec_serve_requests_total{status=\"404\"}") == Double(missing + 1))
        #expect(after.value("mailsec_serve_requests_total{status=\"403\"}") == 1)
        #expect(after.value("mailsec_serve_requests_total{status=\"204\"}") == 1)
        #expect(after.value("mailsec_serve_documents_published_total") == Double(published + 1))
        #expect(after.value("mailsec_serve_documents_opened_total") == Double(opened))
        #expect(after.value("mailsec_serve_documents_deleted_total") == 1)
        #expect(after.value("mailsec_serve_documents_expired_total") == 1)
        // Scrapes are not requests of the reading server.
        #expect(after.sum("mailsec_serve_requests_total") == Double(published + 1 + opened + missing + 1 + 1 + 1))
    }

    @Test("--metrics-listen that is not ADDRESS:PORT, or a port out of range: a usage error (64) naming the option")
    func badAddress() throws {
        for address in ["127.0.0.1", "127.0.0.1:65536", "127.0.0.1:-1", "[::1]9125", "a b:1"] {
            let result = try run(Paths.mailsecExecutable.path, ["serve", "--token-file", "/nonexistent", "--metrics-listen", address])
            let errors = String(decoding: result.stderr, as: UTF8.self)
            #expect(result.status == 64 && errors.contains("--metrics-listen"), "\(address): \(errors)")
        }
    }

    @Test("a metrics port already in use: mailsec serve fails with 75, one line")
    func metricsPortInUse() throws {
        let other = try ReadingServerProcess()
        defer { other.remove() }
        let folder = try makePrivateDirectory(prefix: "ms-serve-busy")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        FileManager.default.createFile(atPath: folder + "/token", contents: Data(String(repeating: "t", count: 32).utf8),
                                       attributes: [.posixPermissions: 0o600])
        let result = try run(Paths.mailsecExecutable.path, ["serve", "--port", "0", "--store", folder + "/store.sqlite",
                                                            "--token-file", folder + "/token", "--metrics-listen", "127.0.0.1:\(other.port)"])
        let errors = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 75, "\(errors)")
        #expect(errors.split(separator: "\n").filter { $0.contains("cannot serve") }.count == 1, "\(errors)")
    }

    @Test("open connections: idle clients held open are counted while open, and not after they closed")
    func connections() throws {
        let server = try ReadingServerProcess(extraArguments: ["--metrics-listen", "127.0.0.1:0"])
        defer { server.remove() }
        let port = try Self.metricsPort(server)
        let count = Int.random(in: 2...5)
        var sockets: [Int32] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(server.port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(connected == 0)
            sockets.append(fd)
        }
        var open = 0.0
        for _ in 0..<100 {  // accepted by the server's event loop a moment after connect returns
            open = try Self.scrape(port).value("mailsec_serve_open_connections")
            if open == Double(count) { break }
            usleep(50_000)
        }
        #expect(open == Double(count))
        for fd in sockets { close(fd) }
        for _ in 0..<100 {
            open = try Self.scrape(port).value("mailsec_serve_open_connections")
            if open == 0 { break }
            usleep(50_000)
        }
        #expect(open == 0)
    }
}
