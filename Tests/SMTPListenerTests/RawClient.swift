import Foundation

/// A TCP client for tests: writes exact octets (in any cut) and reads replies
/// line by line, with a deadline on every read. The socket is non-blocking
/// and waits with Task.sleep, so a test waiting for a reply never holds a
/// thread of the cooperative pool that the listener's handler needs.
final class RawClient {
    let fd: Int32
    private let timeout: Duration
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`, from the loopback address `source` when
    /// given (127.0.0.2, …: another client address on this machine).
    init(port: Int, timeout: Duration = .seconds(300), from source: String? = nil) throws {
        self.timeout = timeout
        // A local until connected: once every stored property is set, a throw runs
        // deinit, which closed the socket a second time (another thread's descriptor
        // by then: NIO crashed on EBADF in a full test run).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawClientError("socket failed") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { close(fd); throw RawClientError("bind to \(source) failed: \(errno)") }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { close(fd); throw RawClientError("connect failed: \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) async throws {
        var done = 0
        let deadline = ContinuousClock.now + timeout
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                guard errno == EAGAIN, ContinuousClock.now < deadline else { throw RawClientError("send failed: \(errno)") }
                try await Task.sleep(for: .milliseconds(1))
                continue
            }
            done += n
        }
    }

    func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// Writes as much of `bytes` as the kernel takes until it has taken
    /// nothing for `stall`; returns how much that was.
    func sendUntilStalled(_ bytes: [UInt8], stall: Duration) async throws -> Int {
        var done = 0
        var lastProgress = ContinuousClock.now
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { done += n; lastProgress = .now; continue }
            if n < 0 && errno != EAGAIN && errno != EINTR { throw RawClientError("send failed: \(errno)") }
            if ContinuousClock.now - lastProgress > stall { break }
            try await Task.sleep(for: .milliseconds(1))
        }
        return done
    }

    /// One line (without CRLF); nil at end of stream; throws on time-out.
    func line() async throws -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let lf = buffer.firstIndex(of: 10) {
                var line = Array(buffer[..<lf])
                buffer.removeSubrange(...lf)
                if line.last == 13 { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 {
                defer { buffer = [] }
                return buffer.isEmpty ? nil : String(decoding: buffer, as: UTF8.self)
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET { return nil }
                guard errno == EAGAIN, ContinuousClock.now < deadline else { throw RawClientError("read timed out or failed: \(errno)") }
                try await Task.sleep(for: .milliseconds(1))
                continue
            }
            buffer += chunk[..<n]
        }
    }

    /// One whole reply (all its lines); nil at end of stream.
    func reply() async throws -> [String]? {
        var lines: [String] = []
        while let line = try await line() {
            lines.append(line)
            if line.count < 4 || line[line.index(line.startIndex, offsetBy: 3)] != "-" { return lines }
        }
        return lines.isEmpty ? nil : lines
    }

    /// The reply's code (of its last line).
    func code() async throws -> Int? {
        guard let reply = try await reply(), let last = reply.last else { return nil }
        return Int(last.prefix(3))
    }

    /// Sends a command and returns its reply code.
    func command(_ line: String) async throws -> Int? {
        try await send(line + "\r\n")
        return try await code()
    }

    /// The whole lines that have arrived so far, without waiting; nil once the server closed.
    func available() -> [String]? {
        var closed = false
        while true {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { buffer += chunk[..<n]; continue }
            if n == 0 || (errno != EAGAIN && errno != EINTR) { closed = true }
            break
        }
        var lines: [String] = []
        while let lf = buffer.firstIndex(of: 10) {
            var line = Array(buffer[..<lf])
            buffer.removeSubrange(...lf)
            if line.last == 13 { line.removeLast() }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        return closed && lines.isEmpty ? nil : lines
    }

    /// Everything until the server closes.
    func readToEnd() async throws -> [String] {
        var lines: [String] = []
        while let line = try await line() { lines.append(line) }
        return lines
    }
}

struct RawClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
