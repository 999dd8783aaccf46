import Foundation
import Synchronization

/// Paths of the repository's own test material, found from this file.
public enum Paths {
    /// The repository's top folder.
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `Fixtures/` at the top of the repository.
    public static let fixtures = root.appendingPathComponent("Fixtures")

    /// A file under `Fixtures/keys/`.
    public static func key(_ name: String) -> URL { fixtures.appendingPathComponent("keys/\(name)") }

    /// `../shared/corpora/public` beside the repository, when it is there. A
    /// newcomer's clone has no `../shared`; tests that need it say so.
    public static let publicCorpus: URL? = {
        let url = root.deletingLastPathComponent().appendingPathComponent("shared/corpora/public")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    /// The built `mailsec` executable, in the build folder that holds the
    /// test bundle (SwiftPM builds it before it runs the tests).
    public static var mailsecExecutable: URL {
        var folder = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = folder.appendingPathComponent("mailsec")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return root.appendingPathComponent(".build/debug/mailsec")
    }
}

/// What a finished process printed and how it ended.
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: [UInt8]
    public let stderr: [UInt8]
    public var output: String { String(decoding: stdout, as: UTF8.self) }
    public var errors: String { String(decoding: stderr, as: UTF8.self) }
}

/// Runs `executable` with `arguments`, feeding `input` on stdin. Output goes
/// through temporary files, so a large output cannot block the child.
public func run(_ executable: String, _ arguments: [String], input: [UInt8] = [],
                environment: [String: String]? = nil) throws -> ProcessResult {
    let folder = try makePrivateDirectory(prefix: "ms-run")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let inPath = folder + "/in", outPath = folder + "/out", errPath = folder + "/err"
    FileManager.default.createFile(atPath: inPath, contents: Data(input))
    FileManager.default.createFile(atPath: outPath, contents: nil)
    FileManager.default.createFile(atPath: errPath, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
    process.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
    if let environment { process.environment = environment }
    let stdin = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
    let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    defer { try? stdin.close(); try? stdout.close(); try? stderr.close() }
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationStatus,
        stdout: Array(FileManager.default.contents(atPath: outPath) ?? Data()),
        stderr: Array(FileManager.default.contents(atPath: errPath) ?? Data()))
}

/// Starts `mailsec ARGUMENTS` in the background with `input` on its stdin
/// (then closed), its standard output into the file `output` (else
/// discarded, as its errors); the caller waits for it or kills it.
public func startMailsec(_ arguments: [String], environment: [String: String], input: [UInt8] = [],
                         output: String? = nil) throws -> Process {
    let process = Process()
    process.executableURL = Paths.mailsecExecutable
    process.arguments = arguments
    process.environment = environment
    let pipe = Pipe()
    process.standardInput = pipe
    if let output {
        FileManager.default.createFile(atPath: output, contents: nil, attributes: [.posixPermissions: 0o600])
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
    } else {
        process.standardOutput = FileHandle.nullDevice
    }
    process.standardError = FileHandle.nullDevice
    try process.run()
    if !input.isEmpty { pipe.fileHandleForWriting.write(Data(input)) }
    try pipe.fileHandleForWriting.close()
    return process
}

/// Makes a new directory readable by us only (0700) under /tmp. The path is
/// short on purpose: gpg-agent's socket path must stay under ~100 bytes.
public func makePrivateDirectory(prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
        throw CocoaError(.fileWriteUnknown)
    }
    return String(cString: made)
}

/// A throwaway GnuPG home (0700, loopback pinentry, no DISPLAY). `close()`
/// stops its agent (`gpgconf --kill all`) and removes it.
public final class TemporaryGnuPGHome: @unchecked Sendable {
    // @unchecked: the path is immutable; close() is called once, by the owner.
    public let path: String

    public init() throws {
        path = try makePrivateDirectory(prefix: "ms-gpg")
        try "allow-loopback-pinentry\n".write(toFile: path + "/gpg-agent.conf", atomically: true, encoding: .utf8)
        try "pinentry-mode loopback\n".write(toFile: path + "/gpg.conf", atomically: true, encoding: .utf8)
    }

    /// The environment for a gpg (or mailsec) child that uses this home.
    public var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["GNUPGHOME"] = path
        // The user's store (contacts, key continuity of encrypt and send) of this home alone.
        env["XDG_DATA_HOME"] = path + "/data"
        env.removeValue(forKey: "DISPLAY")
        env.removeValue(forKey: "GPG_AGENT_INFO")
        return env
    }

    /// Runs the gpg command line in this home, batch mode.
    @discardableResult
    public func gpg(_ arguments: [String], input: [UInt8] = []) throws -> ProcessResult {
        try run("gpg", ["--batch", "--yes", "--no-tty"] + arguments, input: input, environment: environment)
    }

    /// Imports fixture key files from `Fixtures/keys/` with the gpg command line.
    public func importFixtures(_ names: [String], extra: [String] = []) throws {
        for name in names {
            let result = try gpg(extra + ["--import", Paths.key(name).path])
            guard result.status == 0 else {
                throw FixtureError(message: "gpg --import \(name) failed: \(result.errors)")
            }
        }
    }

    /// Revokes the key of `address` in this home (its secret key must be
    /// here): makes a revocation certificate and imports it, as a person would.
    /// Returns the revoked key's fingerprint.
    @discardableResult
    public func revokeKey(of address: String) throws -> String {
        guard let fingerprint = try gpg(["--with-colons", "--list-keys", address]).output
            .split(separator: "\n").first(where: { $0.hasPrefix("fpr:") })?.split(separator: ":").last.map(String.init) else {
            throw FixtureError(message: "no key for \(address) to revoke")
        }
        // --gen-revoke asks its questions even with --command-fd, so not in batch mode.
        let certificate = try run("gpg", ["--no-tty", "--command-fd", "0", "--pinentry-mode", "loopback", "--passphrase", "",
                                          "--armor", "--gen-revoke", fingerprint], input: Array("y\n0\n\ny\n".utf8),
                                  environment: environment)
        guard certificate.output.contains("revocation certificate") else {
            throw FixtureError(message: "gpg --gen-revoke failed: \(certificate.errors)")
        }
        let imported = try gpg(["--import"], input: certificate.stdout)
        guard imported.status == 0 else { throw FixtureError(message: "importing the revocation failed: \(imported.errors)") }
        return fingerprint
    }

    public func close() {
        _ = try? run("gpgconf", ["--kill", "all"], environment: environment)
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a fresh GnuPG home and always stops its agent afterwards.
public func withGnuPGHome<R>(importing fixtures: [String] = [], _ body: (TemporaryGnuPGHome) throws -> R) throws -> R {
    let home = try TemporaryGnuPGHome()
    defer { home.close() }
    try home.importFixtures(fixtures)
    return try body(home)
}

public struct FixtureError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// A peer on 127.0.0.1 that accepts connections and never says a word: what a
/// hung re-injection looks like.
public final class SilentServer: @unchecked Sendable {
    // @unchecked: both properties are immutable after init.
    public let port: Int
    private let fd: Int32
    /// The listening socket (nobody accepts on it).
    public var listeningSocket: Int32 { fd }

    public init() throws {
        let sock = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, length) }
        }
        guard sock >= 0, bound == 0, listen(sock, 8) == 0 else { throw FixtureError(message: "cannot listen on 127.0.0.1") }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sock, $0, &length) }
        }
        fd = sock
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// A real `mailsec serve` on 127.0.0.1 with a free port, its own store,
/// token and log, in a private folder; stopped (SIGTERM) and removed on `stop()`.
public final class ReadingServerProcess: @unchecked Sendable {
    // @unchecked: all properties are set in init; `process` is only used to stop it.
    public let folder: String
    public let token: String
    public let port: Int
    public var url: String { "http://127.0.0.1:\(port)" }
    public var storePath: String { folder + "/store.sqlite" }
    public var logPath: String { folder + "/serve.log" }
    private let process: Process
    /// The server's process id (to count its open sockets).
    public var pid: Int32 { process.processIdentifier }

    public init(extraArguments: [String] = []) throws {
        folder = try makePrivateDirectory(prefix: "ms-serve")
        token = (0..<32).map { _ in "abcdefghjkmnpqrstuvwxyz23456789".randomElement()! }.map(String.init).joined()
        FileManager.default.createFile(atPath: folder + "/token", contents: Data(token.utf8), attributes: [.posixPermissions: 0o600])
        FileManager.default.createFile(atPath: folder + "/out", contents: nil)
        FileManager.default.createFile(atPath: folder + "/serve.log", contents: nil)
        process = Process()
        process.executableURL = Paths.mailsecExecutable
        process.arguments = ["serve", "--port", "0", "--store", folder + "/store.sqlite", "--token-file", folder + "/token"]
            + extraArguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/serve.log"))
        try process.run()
        var found: Int?
        for _ in 0..<300 where found == nil {
            let out = String(decoding: FileManager.default.contents(atPath: folder + "/out") ?? Data(), as: UTF8.self)
            if let line = out.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
               let port = line.split(separator: ":").last.flatMap({ Int($0) }) {
                found = port
            } else if !process.isRunning {
                break
            } else {
                usleep(50_000)
            }
        }
        guard let found else {
            if process.isRunning { process.terminate() }
            throw FixtureError(message: "mailsec serve did not start: " + (try String(contentsOfFile: folder + "/serve.log", encoding: .utf8)))
        }
        port = found
    }

    /// Stops the server and waits for it; the folder stays until `remove()`.
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Everything the server wrote: store file(s) and log.
    public func everythingStored() -> [UInt8] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0 != "token" }.flatMap { Array(FileManager.default.contents(atPath: folder + "/" + $0) ?? Data()) }
    }

    deinit { remove() }
}

/// An SMTP peer on 127.0.0.1 for the filter's hand-over: it accepts what a
/// mail server would, records every connection and transaction, and answers
/// 451 to the DATA of the transactions numbered in `failing` (from 1, over
/// the server's life), and with `stallOnQuit` never answers QUIT. Real Postfix is exercised by scripts/postfix-e2e; this
/// peer lets a unit test see the SMTP dialogue itself.
/// Lines read from a socket, CR LF or LF ended, without their ending.
public struct SocketLines {
    private let fd: Int32
    private var buffer: [UInt8] = []

    public init(_ fd: Int32) { self.fd = fd }

    /// The next line; nil when the connection ended (or a receive time-out passed) first.
    public mutating func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline].filter { $0 != 13 }, as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }
}

public final class RecordingSMTPServer: @unchecked Sendable {
    // @unchecked: `state` is behind a Mutex; the rest is immutable after init.
    public struct Transaction: Sendable {
        public let connection: Int
        public let sender: String
        public let recipients: [String]
        public let data: String
    }

    /// Faults on demand, for the re-injection's exactly-once tests.
    public struct Faults: Sendable {
        /// Recipients (as in RCPT TO, without brackets) answered 550.
        public var refused: Set<String> = []
        /// Data attempts (1-based, over all connections) after whose "." the
        /// connection is closed without a reply; the message is not taken.
        public var cutAfterDot: Set<Int> = []
        /// Like `cutAfterDot`, but the message was taken (queued) first: the
        /// RFC 1047 duplicate window.
        public var takeThenCut: Set<Int> = []
        /// Closes a connection after this many transactions taken on it,
        /// without a word (an idle time-out): the next RSET or MAIL fails.
        public var closeAfterTransactions: Int?
        /// Connections (1-based) closed without a word right after their EHLO
        /// was answered: a session opened ahead that the server dropped.
        public var closeAfterHello: Set<Int> = []
        /// QUIT gets no answer: the connection is reset.
        public var resetOnQuit = false
        /// Data attempts after whose "." the server waits this long before it
        /// takes the message and answers (a slow queue).
        public var delayAfterDot: [Int: Double] = [:]
        /// Data attempts after whose "." the server never answers (and takes nothing).
        public var hangAfterDot: Set<Int> = []

        public init() {}
    }

    public let port: Int
    private let fd: Int32
    private let failing: Set<Int>
    private let stallOnQuit: Bool
    private let faults: Faults
    private let state = Mutex<(connections: Int, transactions: [Transaction], attempts: Int, resets: Int, window: Set<Int>)>((0, [], 0, 0, []))

    /// Indexes into `transactions` of those taken in the RFC 1047 window: the
    /// server answered 250 and the client then vanished before its next MAIL,
    /// so it may never have seen the answer (a retry may send that copy again).
    public var inWindow: Set<Int> { state.withLock { $0.window } }

    /// Messages whose data ended with its ".", over every connection (taken or not).
    public var attempts: Int { state.withLock { $0.attempts } }

    /// RSET commands seen (a kept session is checked with one before each mail).
    public var resets: Int { state.withLock { $0.resets } }

    public var connections: Int { state.withLock { $0.connections } }
    /// The transactions the server took (answered 250 to their data).
    public var transactions: [Transaction] { state.withLock { $0.transactions } }

    public init(failing: Set<Int> = [], stallOnQuit: Bool = false, faults: Faults = Faults()) throws {
        let server = try SilentServer()
        self.failing = failing
        self.stallOnQuit = stallOnQuit
        self.faults = faults
        port = server.port
        fd = dup(server.listeningSocket)
        let listening = fd
        // Weakly held while waiting in accept, so that deinit can end the loop.
        Thread.detachNewThread { [weak self] in
            while true {
                let client = accept(listening, nil, nil)
                guard client >= 0 else { return }
                guard let self else { close(client); return }
                let number = self.state.withLock { $0.connections += 1; return $0.connections }
                Thread.detachNewThread { self.serve(client, connection: number) }
            }
        }
    }

    deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }

    private func serve(_ client: Int32, connection: Int) {
        defer { close(client) }
        var lines = SocketLines(client)
        func say(_ line: String) { _ = Array((line + "\r\n").utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) } }
        func readLine() -> String? { lines.next() }
        say("220 recorder ESMTP")
        var sender = "", recipients: [String] = []
        var taken = 0
        var unanswered: Int?  // the transaction whose 250 the client has not been heard after
        defer { if let index = unanswered { state.withLock { _ = $0.window.insert(index) } } }
        while let line = readLine() {
            let verb = line.prefix(4).uppercased()
            // Only the next MAIL shows the client went on past its bookkeeping
            // for the last 250; an RSET or QUIT may come before it (kept sessions).
            if verb == "MAIL" { unanswered = nil }
            switch verb {
            case "EHLO", "HELO":
                say("250 recorder")
                if faults.closeAfterHello.contains(connection) { return }
            case "MAIL": sender = String(line.dropFirst(10)); recipients = []; say("250 ok")
            case "RCPT":
                let path = String(line.dropFirst(8))
                if faults.refused.contains(String(path.dropFirst().dropLast())) { say("550 5.1.1 no such user"); continue }
                recipients.append(path); say("250 ok")
            case "RSET": sender = ""; recipients = []; state.withLock { $0.resets += 1 }; say("250 ok")
            case "QUIT" where faults.resetOnQuit:
                var linger = linger(l_onoff: 1, l_linger: 0)
                setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
                return
            case "QUIT":
                if stallOnQuit { while readLine() != nil {}; return }  // until the client hangs up
                say("221 bye"); return
            case "DATA":
                say("354 go on")
                var lines: [String] = []
                var ended = false
                while let dataLine = readLine() {
                    if dataLine == "." { ended = true; break }
                    lines.append(dataLine)
                }
                // A connection closed before the "." delivers nothing.
                guard ended else { return }
                let attempt = state.withLock { $0.attempts += 1; return $0.attempts }
                if failing.contains(attempt) { say("451 not now"); continue }
                if faults.cutAfterDot.contains(attempt) { return }
                if faults.hangAfterDot.contains(attempt) { while readLine() != nil {}; return }
                if let delay = faults.delayAfterDot[attempt] { usleep(useconds_t(delay * 1e6)) }
                let transaction = Transaction(connection: connection, sender: sender, recipients: recipients,
                                              data: lines.joined(separator: "\n"))
                let index = state.withLock { $0.transactions.append(transaction); return $0.transactions.count - 1 }
                if faults.takeThenCut.contains(attempt) { return }
                say("250 taken")
                unanswered = index
                taken += 1
                if let limit = faults.closeAfterTransactions, taken >= limit { return }
            default: say("502 unknown")
            }
        }
    }
}

/// A TLS front for a plain-http server on 127.0.0.1, as an operator's proxy
/// would be: a throwaway CA and a certificate for `localhost` and 127.0.0.1
/// made with `openssl`, and a small forwarding proxy in python3's `ssl`.
/// `stop()` ends the proxy and removes the folder.
public final class TLSProxy: @unchecked Sendable {
    // @unchecked: all properties are set in init; `process` is only used to stop it.
    public let folder: String
    /// The port the proxy listens on (TLS).
    public let port: Int
    /// The CA certificate (PEM) that signed the proxy's certificate.
    public var caFile: String { folder + "/ca.pem" }
    private let process: Process

    static let proxy = """
        import socket, ssl, sys, threading
        backend, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        print(listener.getsockname()[1], flush=True)
        def forward(source, target, secure_target):
            try:
                while True:
                    data = source.recv(65536)
                    if not data:
                        break
                    target.sendall(data)
            except OSError:
                pass
            try:
                if secure_target:
                    target.unwrap()
                target.shutdown(socket.SHUT_RDWR)
            except (OSError, ValueError):
                pass
        def serve(client):
            try:
                secure = context.wrap_socket(client, server_side=True)
            except (ssl.SSLError, OSError):
                client.close()
                return
            upstream = socket.create_connection(("127.0.0.1", backend))
            threading.Thread(target=forward, args=(secure, upstream, False), daemon=True).start()
            forward(upstream, secure, True)
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()
        """

    public init(backendPort: Int) throws {
        let folder = try makePrivateDirectory(prefix: "ms-tls")
        self.folder = folder
        let ext = "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
        try ext.write(toFile: folder + "/ext.cnf", atomically: true, encoding: .utf8)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for step in [["req", "-x509"] + key + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=mailsec test CA",
                                                "-addext", "basicConstraints=critical,CA:TRUE",
                                                "-addext", "keyUsage=critical,keyCertSign"],
                     ["req"] + key + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"],
                     ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                      "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf"]] {
            let result = try run("openssl", step.map { $0.hasSuffix(".key") || $0.hasSuffix(".pem") || $0.hasSuffix(".csr")
                                                        || $0.hasSuffix(".cnf") ? folder + "/" + $0 : $0 })
            guard result.status == 0 else { throw FixtureError(message: "openssl \(step[0]) failed: \(result.errors)") }
        }
        FileManager.default.createFile(atPath: folder + "/port", contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.proxy, String(backendPort), folder + "/server.pem", folder + "/server.key"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/port"))
        process.standardError = FileHandle.nullDevice
        try process.run()
        var found: Int?
        for _ in 0..<200 where found == nil && process.isRunning {
            found = Int(String(decoding: FileManager.default.contents(atPath: folder + "/port") ?? Data(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines))
            if found == nil { usleep(50_000) }
        }
        guard let found else {
            if process.isRunning { process.terminate() }
            throw FixtureError(message: "the TLS proxy did not start")
        }
        port = found
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)  // it may have inherited a mask that blocks SIGTERM
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    deinit { stop() }
}

/// Runs `arguments` with standard input, output and error on a new
/// pseudo-terminal (python3's `pty`), as a person at a terminal would, types
/// nothing, and returns what the terminal showed within `seconds`; the
/// command is then ended (SIGKILL).
public func runOnTerminal(_ arguments: [String], seconds: Double, environment: [String: String]? = nil) throws -> String {
    let script = """
        import os, pty, select, signal, sys, time
        pid, fd = pty.fork()
        if pid == 0:
            # The test runner blocks signals in its threads; the command gets the defaults.
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
                signal.signal(number, signal.SIG_DFL)
            os.execv(sys.argv[2], sys.argv[2:])
        seen, end = b"", time.time() + float(sys.argv[1])
        while time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        sys.stdout.buffer.write(seen)
        """
    let result = try run("python3", ["-c", script, String(seconds)] + arguments, environment: environment)
    return result.output
}

/// True once `pid` has gone, or is a zombie nobody reaped yet (waits up to 2 s).
public func isGone(_ pid: Int32) -> Bool {
    for _ in 0..<100 {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return true }
        usleep(20_000)
    }
    return false
}

/// A loopback TCP port nobody listens on now (bound to port 0, then released).
public func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Waits (up to a minute) until something accepts connections on 127.0.0.1:`port`.
public func waitForListener(_ port: Int) throws {
    for _ in 0..<1200 {  // a minute: Postfix starts slowly on a loaded machine
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        close(fd)
        if connected == 0 { return }
        usleep(50_000)
    }
    throw CocoaError(.fileReadUnknown)
}
