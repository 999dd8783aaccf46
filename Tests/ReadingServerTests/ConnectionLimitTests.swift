import Foundation
import HTTPRequests
import PartialEncryption
import TestSupport
import Testing

/// Sockets the process `pid` holds open (its listener included).
func openSockets(_ pid: Int32) -> Int {
    let folder = "/proc/\(pid)/fd"
    return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter {
        ((try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)) ?? "").hasPrefix("socket:")
    }.count
}

/// A loopback client socket, connected without blocking (past the server's
/// listen queue a connect may wait for a long time); from the loopback
/// address `source` when given (127.0.0.2, …: another client address).
func slowClient(port: Int, from source: String? = nil) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    return fd
}

/// True when the peer closed `fd` (EOF or reset).
func closedByPeer(_ fd: Int32) -> Bool {
    var byte: UInt8 = 0
    let got = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
    return got == 0 || (got < 0 && (errno == ECONNRESET || errno == EPIPE))
}

@Suite("The reading server's connection limits", .serialized)
struct ConnectionLimitTests {
    @Test("300 clients dripping a request byte by byte: never more than the cap open at once, each cut off, and the server still answers")
    func slowClients() throws {
        let cap = 60
        // The cap in all is under test here: one address may hold all of it.
        let server = try ReadingServerProcess(extraArguments: ["--request-timeout", "1", "--idle-timeout", "2",
                                                               "--max-connections", "\(cap)", "--max-connections-per-address", "1000"])
        defer { server.remove() }
        let baseline = openSockets(server.pid)
        var generator = SystemRandomNumberGenerator()
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: yes\r\n\r\n".utf8)
        var clients = (0..<300).map { _ in (fd: slowClient(port: server.port), sent: 0, closedAt: nil as Date?) }
        defer { for client in clients { close(client.fd) } }
        let started = Date()
        var most = 0
        // Drip one byte to each open client every ~100 ms (random order), sampling the server.
        while Date().timeIntervalSince(started) < 25 && clients.contains(where: { $0.closedAt == nil }) {
            for index in clients.indices.shuffled(using: &generator) where clients[index].closedAt == nil {
                if closedByPeer(clients[index].fd) { clients[index].closedAt = Date(); continue }
                // Never the final CRLF: the request is never complete.
                if clients[index].sent < request.count - 2 {
                    let sent = send(clients[index].fd, [request[clients[index].sent]], 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                    if sent == 1 { clients[index].sent += 1 }
                }
            }
            most = max(most, openSockets(server.pid) - baseline)
            usleep(100_000)
        }
        // NIO accepts a few connections per read of the listener before the cap pauses it.
        #expect(most <= cap + 4, "the server held \(most) client connections at once")
        #expect(most >= cap / 2, "the storm did fill the server (\(most))")
        #expect(clients.allSatisfy { $0.closedAt != nil }, "\(clients.filter { $0.closedAt == nil }.count) slow clients still open")
        let health = try HTTPExchange.send(host: "127.0.0.1", port: server.port, timeout: 10, method: "GET", path: "/healthz",
                                           bearer: nil, contentType: nil, body: [])
        #expect(health.status == 200)
    }

    @Test("400 slow clients from one address (and 40 from each of five more) hold at most 32 connections each: a request from another address is served while they still hold theirs",
          .timeLimit(.minutes(3)))
    func slowClientsFromOneAddress() throws {
        // Long time-outs: nothing is cut off by time during the test, only by the caps.
        let server = try ReadingServerProcess(extraArguments: ["--request-timeout", "120", "--idle-timeout", "120"])
        defer { server.remove() }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        var clients: [(fd: Int32, from: String)] = (0..<400).map { _ in (slowClient(port: server.port, from: "127.0.0.2"), "127.0.0.2") }
        for host in 3...7 { clients += (0..<40).map { _ in (slowClient(port: server.port, from: "127.0.0.\(host)"), "127.0.0.\(host)") } }
        defer { for client in clients { close(client.fd) } }
        // Each drips the start of a request (never its end), a byte per round.
        for round in 0..<10 {
            for client in clients where round < request.count {
                _ = send(client.fd, [request[round]], 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            usleep(100_000)
        }
        // A normal request from 127.0.0.1 is answered while the slow ones are open (their time-outs are 120 s).
        let answer = try HTTPExchange.send(host: "127.0.0.1", port: server.port, timeout: 60, method: "GET", path: "/healthz",
                                           bearer: nil, contentType: nil, body: [])
        #expect(answer.status == 200)
        // Connections still in the listen queue look open until the server has taken and closed them: wait for it.
        // Those past the listen backlog wait for their SYN to be sent again (after 1, 3, 7, 15, 31, 63 s with
        // Linux's six retries): up to 100 s, and a loaded machine takes them later still.
        var open: [String: Int] = [:]
        for _ in 0..<2000 {
            open = [:]
            for client in clients where !closedByPeer(client.fd) { open[client.from, default: 0] += 1 }
            if open.values.allSatisfy({ $0 <= 32 }) { break }
            usleep(50_000)
        }
        #expect(open.values.allSatisfy { $0 <= 32 }, "\(open)")
        #expect(open["127.0.0.2"] == 32, "\(open)")
        #expect((3...7).allSatisfy { open["127.0.0.\($0)"] == 32 }, "\(open)")
    }

    @Test("a connection that sends nothing, or goes quiet after a response, is closed")
    func idle() throws {
        let server = try ReadingServerProcess(extraArguments: ["--request-timeout", "1", "--idle-timeout", "2"])
        defer { server.remove() }
        let silent = slowClient(port: server.port)
        defer { close(silent) }
        let keptAlive = slowClient(port: server.port)
        defer { close(keptAlive) }
        usleep(100_000)
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        #expect(send(keptAlive, request, request.count, Int32(MSG_NOSIGNAL)) == request.count)
        let started = Date()
        var closed = (silent: nil as TimeInterval?, keptAlive: nil as TimeInterval?)
        var answered = false
        while Date().timeIntervalSince(started) < 10 && (closed.silent == nil || closed.keptAlive == nil) {
            if closed.silent == nil && closedByPeer(silent) { closed.silent = Date().timeIntervalSince(started) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let got = recv(keptAlive, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if got > 0 { answered = answered || String(decoding: buffer[..<got], as: UTF8.self).hasPrefix("HTTP/1.1 200") }
            if got == 0 && closed.keptAlive == nil { closed.keptAlive = Date().timeIntervalSince(started) }
            usleep(50_000)
        }
        #expect(answered, "the complete request was answered")
        #expect((closed.silent ?? 99) < 5, "silent client closed after \(closed.silent ?? -1) s")
        #expect((closed.keptAlive ?? 99) < 5, "quiet keep-alive client closed after \(closed.keptAlive ?? -1) s")
        #expect((closed.silent ?? 0) >= 0.8, "not before the time-out")
    }
}
