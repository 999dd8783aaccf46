import Foundation
import HTTPRequests
import PartialEncryption
import TestSupport
import Testing

/// Sends `request` as it stands over a fresh connection to 127.0.0.1:`port`
/// and reads the answer until the server closes: its status and its header
/// fields (names lowercased).
func rawExchange(port: Int, _ request: [UInt8]) -> (status: Int, headers: [String: String]) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var wait = timeval(tv_sec: 15, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }) == 0 else { return (0, [:]) }
    _ = send(fd, request, request.count, Int32(MSG_NOSIGNAL))
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let got = recv(fd, &buffer, buffer.count, 0)
        if got <= 0 { break }
        answer += buffer[..<got]
        if let end = String(decoding: answer, as: UTF8.self).range(of: "\r\n\r\n"), answer.count > 0 {
            // The head is enough; the body may be long or absent.
            _ = end
            break
        }
    }
    let head = String(decoding: answer, as: UTF8.self).components(separatedBy: "\r\n\r\n").first ?? ""
    var lines = head.components(separatedBy: "\r\n")
    let status = lines.isEmpty ? 0 : Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
    var headers: [String: String] = [:]
    for line in lines {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return (status, headers)
}

@Suite("Every answer of the reading server carries the page's security headers", .serialized)
struct SecurityHeaderTests {
    static let required = ["content-security-policy", "x-content-type-options", "cache-control", "referrer-policy", "x-frame-options"]

    @Test("200, 201, 204, 400, 401, 403, 404 (route and id), 405, 413 and a request the server cannot parse")
    func everyStatus() throws {
        let server = try ReadingServerProcess(extraArguments: ["--max-size", "2K"])
        defer { server.remove() }
        let document = ReadingDocument(from: [.text("a")], subject: [.text("s")], body: [.text("x"), .span(1)], spanCount: 1,
                                       blob: try SpanBlob.seal(["secret"], password: SpanPassword()))
        let publication = try HTTPPublisher(url: server.url, token: server.token).publish(document)
        let id = try #require(publication.url.components(separatedBy: "/r/").last)
        func request(_ method: String, _ path: String, bearer: String? = nil, body: String = "") -> [UInt8] {
            var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            if let bearer { text += "Authorization: Bearer \(bearer)\r\n" }
            if !body.isEmpty || method == "POST" { text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
            return Array((text + "\r\n" + body).utf8)
        }
        let big = String(repeating: "x", count: 4096)
        let cases: [(Int, [UInt8])] = [
            (200, request("GET", "/healthz")), (200, request("GET", "/r/" + id)), (200, request("GET", "/api/postcards/" + id)),
            (200, request("GET", "/assets/reader.js")),
            (201, request("POST", "/api/postcards", bearer: server.token, body: String(decoding: document.json(), as: UTF8.self))),
            (400, request("POST", "/api/postcards", bearer: server.token, body: "{}")),
            (401, request("POST", "/api/postcards", body: "{}")), (403, request("POST", "/api/postcards", bearer: "wrong", body: "{}")),
            (404, request("GET", "/nothing-here")), (404, request("GET", "/r/AAAAAAAAAAAAAAAAAAAAAA")), (404, request("GET", "/")),
            (404, request("GET", "/api/postcards/x")), (405, request("PUT", "/healthz")),
            (413, request("POST", "/api/postcards", bearer: server.token, body: big)),
            (400, Array("GARBAGE\u{1} / HTTP/9\r\n\r\n".utf8)),
        ]
        for (status, bytes) in cases {
            let answer = rawExchange(port: server.port, bytes)
            // The framework's status for a method it has no route for may be 404 or 405; every other is exact.
            #expect(answer.status == status || (status == 405 && answer.status == 404),
                    "\(String(decoding: bytes.prefix(40), as: UTF8.self)): \(answer.status)")
            for name in Self.required {
                #expect(answer.headers[name] != nil, "\(answer.status) for \(String(decoding: bytes.prefix(40), as: UTF8.self)) lacks \(name)")
            }
            #expect(answer.headers["x-content-type-options"] == "nosniff" || answer.status == 0)
        }
        let deleteToken = publication.deleteToken
        let deleted = rawExchange(port: server.port, request("DELETE", "/api/postcards/" + id, bearer: deleteToken))
        #expect(deleted.status == 204)
        for name in Self.required { #expect(deleted.headers[name] != nil, "204 lacks \(name)") }
    }
}
