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

/// True when the peer closed `fd` (EOF or reset), or its connection never
/// came about (refused, or timed out after the SYN was sent again and again).
func closedByPeer(_ fd: Int32) -> Bool {
    var byte: UInt8 = 0
    let got = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
    return got == 0 || (got < 0 && [ECONNRESET, EPIPE, ETIMEDOUT, ECONNREFUSED].contains(errno))
}

/// The TCP connections the process `pid` holds, counted by the peer's IPv4
/// address: those in two looks at it `apart` from each other. A server at
/// its cap still accepts a connection to close it at once; such a one is in
/// one look at most. This is the server's own view; a client's is wrong both
/// ways (a socket whose last handshake packet the full listen queue dropped
/// looks connected to its client for minutes, while the server holds nothing
/// for it).
func heldConnections(_ pid: Int32, apart: useconds_t = 300_000) -> [String: Int] {
    let first = connections(pid)
    usleep(apart)
    let second = connections(pid)
    return second.reduce(into: [:]) { held, entry in held[entry.value, default: 0] += first[entry.key] == entry.value ? 1 : 0 }
}

/// The established TCP connections of the process `pid`, by socket inode,
/// with their peer's IPv4 address: its socket descriptors matched to the
/// kernel's table of connections (`/proc/net/tcp`, and `tcp6` for
/// IPv4-mapped peers).
func connections(_ pid: Int32) -> [Substring: String] {
    let folder = "/proc/\(pid)/fd"
    var inodes = Set<Substring>()
    for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + name)) ?? ""
        if target.hasPrefix("socket:[") { inodes.insert(Substring(target.dropFirst(8).dropLast())) }
    }
    var found: [Substring: String] = [:]
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // Read to the end: a /proc file says its size is 0.
        guard let data = FileHandle(forReadingAtPath: table)?.readDataToEndOfFile() else { continue }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode; 01 is ESTABLISHED.
            guard fields.count > 9, fields[3] == "01", inodes.contains(fields[9]),
                  let remote = fields[2].split(separator: ":").first, remote.count >= 8,
                  let word = UInt32(remote.suffix(8), radix: 16) else { continue }
            // The kernel prints the address as a 32-bit word in host (little-endian) order.
            found[fields[9]] = "\(word & 0xff).\((word >> 8) & 0xff).\((word >> 16) & 0xff).\(word >> 24)"
        }
    }
    return found
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

    /// 600 sockets held open at once against a server's per-address cap. They connect in
    /// waves smaller than the listen queue, each wave settled (every connection kept or closed
    /// by the server) before the next: what is under test is the cap, not how Linux treats a
    /// SYN flood. Opened all at once, the connections past the listen queue came in as Linux
    /// sent their SYN again (after 1, 3, 7, 15, 31 s) or, with SYN cookies, looked open to
    /// their clients while the server held nothing for them: on a loaded machine the five small
    /// addresses reached 0 to 25 of their 32 in 90 s (CI: 0, 0, 8, 0, 0), and all 32 alone.
    /// scripts/test still runs it as a step of its own (`MAILSEC_CONNECTION_STORM=1`).
    @Test("400 slow clients from one address (and 40 from each of five more) hold at most 32 connections each: a request from another address is served while they still hold theirs",
          .timeLimit(.minutes(5)),
          .enabled(if: ProcessInfo.processInfo.environment["MAILSEC_CONNECTION_STORM"] != nil,
                   "a step of its own in scripts/test (MAILSEC_CONNECTION_STORM=1)"))
    func slowClientsFromOneAddress() throws {
        // Time-outs longer than the test may run: nothing is cut off by time, only by the caps.
        let server = try ReadingServerProcess(extraArguments: ["--request-timeout", "900", "--idle-timeout", "900"])
        defer { server.remove() }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        var clients: [(fd: Int32, from: String)] = []
        defer { for client in clients { close(client.fd) } }
        var most = 0
        var unsettled: [String] = []
        for (from, count) in [("127.0.0.2", 400)] + (3...7).map({ ("127.0.0.\($0)", 40) }) {
            var opened = 0
            while opened < count {
                let wave = min(50, count - opened)
                clients += (0..<wave).map { _ in (slowClient(port: server.port, from: from), from) }
                opened += wave
                // Settled: the server holds or has closed each connection from `from` (a connection
                // closed at the cap may show in one look at the server, never in two).
                let deadline = Date().addingTimeInterval(60)
                var settled = false
                repeat {
                    // Looks 300 ms apart: a connection over the cap, closed at once, is in one look at most.
                    let held = heldConnections(server.pid)
                    most = max(most, held.values.max() ?? 0)
                    let closed = clients.filter { $0.from == from && closedByPeer($0.fd) }.count
                    settled = held[from, default: 0] + closed == opened
                } while !settled && Date() < deadline
                if !settled { unsettled.append("\(from): \(opened)") }
            }
        }
        #expect(unsettled.isEmpty, "connections neither held nor closed by the server after 60 s: \(unsettled)")
        // Each drips the start of a request (never its end), a byte per round.
        for round in 0..<10 {
            for client in clients { _ = send(client.fd, [request[round]], 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            usleep(100_000)
        }
        // A normal request from 127.0.0.1 is answered while the slow ones are open.
        let answer = try HTTPExchange.send(host: "127.0.0.1", port: server.port, timeout: 60, method: "GET", path: "/healthz",
                                           bearer: nil, contentType: nil, body: [])
        #expect(answer.status == 200)
        let held = heldConnections(server.pid)
        most = max(most, held.values.max() ?? 0)
        let stillOpen = Dictionary(grouping: clients.filter { !closedByPeer($0.fd) }, by: \.from).mapValues(\.count)
        #expect(most <= 32, "at most \(most) connections from one address; now \(held)")
        #expect((2...7).allSatisfy { held["127.0.0.\($0)"] == 32 }, "the server holds \(held); open to the clients: \(stillOpen)")
        #expect((2...7).allSatisfy { stillOpen["127.0.0.\($0)"] == 32 }, "open to the clients: \(stillOpen)")
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
