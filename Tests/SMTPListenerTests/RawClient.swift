import Foundation

/// A blocking TCP client for tests: writes exact octets (in any cut) and
/// reads replies line by line, with a deadline on every read.
final class RawClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeout: Double = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawClientError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { close(fd); throw RawClientError("connect failed: \(errno)") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EINTR { continue }; throw RawClientError("send failed: \(errno)") }
            done += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// One line (without CRLF); nil at end of stream; throws on time-out.
    func line() throws -> String? {
        while true {
            if let lf = buffer.firstIndex(of: 10) {
                var line = Array(buffer[..<lf])
                buffer.removeSubrange(...lf)
                if line.last == 13 { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return buffer.isEmpty ? nil : { defer { buffer = [] }; return String(decoding: buffer, as: UTF8.self) }() }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET { return nil }
                throw RawClientError("read timed out or failed: \(errno)")
            }
            buffer += chunk[..<n]
        }
    }

    /// One whole reply (all its lines); nil at end of stream.
    func reply() throws -> [String]? {
        var lines: [String] = []
        while let line = try line() {
            lines.append(line)
            if line.count < 4 || line[line.index(line.startIndex, offsetBy: 3)] != "-" { return lines }
        }
        return lines.isEmpty ? nil : lines
    }

    /// The reply's code (of its last line).
    func code() throws -> Int? {
        guard let reply = try reply(), let last = reply.last else { return nil }
        return Int(last.prefix(3))
    }

    /// Sends a command and returns its reply code.
    func command(_ line: String) throws -> Int? {
        try send(line + "\r\n")
        return try code()
    }

    /// Everything until the server closes (or the time-out).
    func readToEnd() throws -> [String] {
        var lines: [String] = []
        while let line = try line() { lines.append(line) }
        return lines
    }
}

struct RawClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
