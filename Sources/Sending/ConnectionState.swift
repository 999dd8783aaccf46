import Foundation

/// The connection to the submission server, as Wire shows it.
public enum ConnectionState: String, Sendable, Hashable, Codable {
    /// The server answers.
    case online
    /// No route to anywhere (no network at all).
    case offline
    /// The network is up, but the server does not answer.
    case unreachable
}

/// Looks at the network without sending mail: is there a route to the
/// server, and does its port take a TCP connection?
package enum Reachability {
    /// Tries `host:port`: resolving its name, then a route to any of its
    /// addresses (a UDP `connect`, which sends nothing), then a TCP connection
    /// within `timeout` seconds (closed at once).
    package static func check(host: String, port: Int, timeout: TimeInterval = 10) -> ConnectionState {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, list != nil else {
            // Without a name service answer: offline when there is no route at all.
            return hasDefaultRoute() ? .unreachable : .offline
        }
        defer { freeaddrinfo(list) }
        var routed = false
        var node = list
        while let info = node {
            defer { node = info.pointee.ai_next }
            if route(info.pointee) { routed = true } else { continue }
            if connects(info.pointee, timeout: timeout) { return .online }
        }
        return routed ? .unreachable : .offline
    }

    /// A default route in /proc/net/route or /proc/net/ipv6_route.
    static func hasDefaultRoute() -> Bool {
        if let table = try? String(contentsOfFile: "/proc/net/route", encoding: .utf8) {
            for line in table.split(separator: "\n").dropFirst() {
                let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
                if fields.count > 1, fields[1] == "00000000" { return true }
            }
        }
        if let table = try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8) {
            for line in table.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 9, fields[0] == String(repeating: "0", count: 32), fields[1] == "00", fields[9] != "lo" {
                    return true
                }
            }
        }
        return false
    }

    private static func route(_ info: addrinfo) -> Bool {
        let fd = socket(info.ai_family, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connect(fd, info.ai_addr, info.ai_addrlen) == 0
    }

    private static func connects(_ info: addrinfo, timeout: TimeInterval) -> Bool {
        let fd = socket(info.ai_family, info.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                        info.ai_protocol)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&poller, 1, Int32(min(max(0, timeout), 86_400) * 1000)) == 1 else { return false }  // no Int32 trap
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error == 0
    }
}
