import Foundation

/// A copy could not be handed on. Always temporary for the filter (75).
public struct HandoverError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// Hands written copies back to the mail system. Over SMTP all copies of a
/// mail share one connection, one transaction each (the greeting and EHLO
/// are paid once per mail, not per copy); with sendmail each copy is a run
/// of its own. Close the handover when the mail is done.
final class Handover {
    private let method: Reinjection
    private let timeout: TimeInterval
    private var connection: SMTPClient?

    init(via method: Reinjection, timeout: TimeInterval) {
        self.method = method
        self.timeout = timeout
    }

    deinit { close() }

    /// Hands on one copy; when this returns, the mail system has taken it.
    func send(_ bytes: [UInt8], sender: String, recipients: [String]) throws(HandoverError) {
        switch method {
        case .sendmail(let command):
            try Self.sendmail(command, bytes, sender: sender, recipients: recipients, timeout: timeout)
        case .smtp(let host, let port):
            let client: SMTPClient
            if let connection { client = connection } else {
                client = try SMTPClient(host: host, port: port, timeout: timeout)
                do { try client.greet() } catch {
                    client.close()  // no QUIT on a session that never began
                    throw error
                }
                connection = client
            }
            do { try client.send(bytes, sender: sender, recipients: recipients) } catch {
                // A connection in an unknown state is not used again.
                client.close()
                connection = nil
                throw error
            }
        }
    }

    /// Ends the SMTP session, if one is open.
    func close() {
        connection?.quit()
        connection = nil
    }

    /// Runs `command -f SENDER -- RCPT…` with the copy on stdin, in a process
    /// group of its own that is killed as a whole after `timeout` (or when a
    /// stop was asked for and its grace is over). The copy passes through a
    /// private temporary file.
    static func sendmail(_ command: [String], _ bytes: [UInt8], sender: String, recipients: [String],
                         timeout: TimeInterval) throws(HandoverError) {
        guard let executable = command.first else { throw HandoverError(description: "no sendmail command") }
        var template = Array("/tmp/mailsec-copy.XXXXXX".utf8CString)
        let fd = mkstemp(&template)   // 0600
        guard fd >= 0 else { throw HandoverError(description: "cannot make a temporary file") }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { Glibc.close(fd); unlink(path) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw HandoverError(description: "cannot write a temporary file") }
            offset += written
        }
        lseek(fd, 0, SEEK_SET)

        let arguments = [executable] + Array(command.dropFirst()) + ["-f", sender, "--"] + recipients
        let pid = try spawnInOwnGroup(executable, arguments, stdin: fd)
        Stop.register(pid)
        defer { Stop.unregister() }
        let deadline = Stop.now() + UInt64(timeout * 1e9)
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { break }
            if done < 0 && errno != EINTR { throw HandoverError(description: "lost track of \(executable)") }
            if Stop.graceIsOver {
                killGroup(pid)
                throw HandoverError(description: "\(executable) was stopped by a signal")
            }
            if Stop.now() >= deadline {
                killGroup(pid)
                throw HandoverError(description: "\(executable) did not finish within \(Int(timeout)) s")
            }
            usleep(5_000)
        }
        // WIFEXITED and WEXITSTATUS are macros Swift does not import.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw HandoverError(description: "\(executable) failed with status \(status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + status & 0x7F)")
        }
    }

    /// Starts `executable` as the leader of a new process group (so that it
    /// and everything it starts can be killed together), with `stdin` as its
    /// standard input, /dev/null for output, and default signal handling.
    private static func spawnInOwnGroup(_ executable: String, _ arguments: [String], stdin: Int32) throws(HandoverError) -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let err = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        guard err == 0 else { throw HandoverError(description: "cannot run \(executable)") }
        return pid
    }

    /// Ends the child's whole group: SIGTERM, up to 2 s for the leader, then
    /// SIGKILL for whatever is left of the group, and the leader reaped.
    private static func killGroup(_ pid: pid_t) {
        kill(-pid, SIGTERM)
        var status: Int32 = 0
        let until = Stop.now() + 2_000_000_000
        while waitpid(pid, &status, WNOHANG) == 0 && Stop.now() < until { usleep(5_000) }
        kill(-pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }
}

/// A small SMTP client for re-injection on loopback: one connection, one
/// transaction per copy.
final class SMTPClient {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let peer: String

    init(host: String, port: Int, timeout: TimeInterval) throws(HandoverError) {
        peer = "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            throw HandoverError(description: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { throw HandoverError(description: "cannot open a socket") }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            Glibc.close(fd)
            throw HandoverError(description: "cannot connect to \(peer)")
        }
    }

    private var isOpen = true

    func close() {
        if isOpen { Glibc.close(fd) }
        isOpen = false
    }

    /// The greeting and EHLO, once per connection.
    func greet() throws(HandoverError) {
        try expect(220, after: nil)
        try expect(250, after: "EHLO localhost")
    }

    /// One transaction: the copy is taken when the final 250 arrives.
    func send(_ bytes: [UInt8], sender: String, recipients: [String]) throws(HandoverError) {
        try expect(250, after: "MAIL FROM:<\(sender)>")
        for recipient in recipients { try expect(250, after: "RCPT TO:<\(recipient)>") }
        try expect(354, after: "DATA")
        try write(Self.dotStuffed(bytes))
        try expect(250, after: nil)
    }

    /// QUIT and close at once. Every copy was taken already (its 250 came),
    /// so the answer is not awaited: a peer that stalls here must not hold
    /// the filter past its time limit, which would send everything again.
    func quit() {
        if isOpen { try? write(Array("QUIT\r\n".utf8)) }
        close()
    }

    /// CRLF line endings, leading dots doubled, and the final `.` line.
    static func dotStuffed(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 40 + 8)
        var lineStart = true
        var previous: UInt8 = 0
        for byte in bytes {
            if lineStart && byte == UInt8(ascii: ".") { out.append(UInt8(ascii: ".")) }
            if byte == 10 && previous != 13 { out.append(13) }
            out.append(byte)
            lineStart = byte == 10
            previous = byte
        }
        if !lineStart { out += [13, 10] }
        return out + Array(".\r\n".utf8)
    }

    private func write(_ bytes: [UInt8]) throws(HandoverError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw HandoverError(description: "connection to \(peer) lost") }
            offset += sent
        }
    }

    /// Sends `command` (if any) and reads a reply, which must have `code`.
    private func expect(_ code: Int, after command: String?) throws(HandoverError) {
        if let command { try write(Array((command + "\r\n").utf8)) }
        while true {
            let line = try readLine()
            guard line.count >= 3, let got = Int(line.prefix(3)) else {
                throw HandoverError(description: "\(peer) answered with something that is not SMTP")
            }
            if line.count > 3 && line[line.index(line.startIndex, offsetBy: 3)] == "-" { continue }
            guard got == code else {
                let verb = command?.split(separator: " ").first.map(String.init) ?? "the data"
                throw HandoverError(description: "\(peer) answered \(got) to \(verb)")
            }
            return
        }
    }

    private func readLine() throws(HandoverError) -> String {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = buffer[..<newline]
                buffer.removeSubrange(...newline)
                return String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw HandoverError(description: "no answer from \(peer)") }
            buffer += chunk[..<count]
        }
    }
}
