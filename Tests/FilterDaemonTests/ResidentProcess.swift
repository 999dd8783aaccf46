import Foundation
import SMTP
import TestSupport

struct DaemonError: Error, CustomStringConvertible {
    let description: String
}

/// The real `mailsec filter --listen` as a child process on a free loopback
/// port, its stderr in a file; killed (SIGKILL) when dropped.
final class ResidentProcess: @unchecked Sendable {
    // @unchecked: `port` is set once in init; later the process is only signalled and read.
    let process = Process()
    let folder: String
    private(set) var port = 0
    var logPath: String { folder + "/stderr" }

    /// `environment` is added to the home's (a `PATH` with a gpg that counts its calls, say).
    init(config: String, home: TemporaryGnuPGHome, environment: [String: String] = [:]) throws {
        folder = try makePrivateDirectory(prefix: "ms-daemon")
        FileManager.default.createFile(atPath: folder + "/stderr", contents: nil)
        process.executableURL = Paths.mailsecExecutable
        process.arguments = ["filter", "--listen", "127.0.0.1:0", "--config", config]
        process.environment = home.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
        let line = try waitFor("listening on ", seconds: 60)
        guard let number = line.split(separator: ":").last.flatMap({ Int($0) }) else {
            throw DaemonError(description: "no port in \(line)")
        }
        port = number
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Everything the daemon printed.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    var lines: [String] { log.split(separator: "\n").map(String.init) }

    /// Waits for a line containing `text`; returns it.
    @discardableResult
    func waitFor(_ text: String, seconds: Double = 30) throws -> String {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            if let line = lines.first(where: { $0.contains(text) }) { return line }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw DaemonError(description: "the daemon never said \"\(text)\"; it said: \(log)")
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// The exit status, or nil when it still runs after `seconds`.
    func exitStatus(within seconds: Double) -> Int32? {
        let until = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < until { usleep(20_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// An SMTP session with the daemon (the project's own client).
    func connect() throws -> BlockingSMTPConnection {
        try BlockingSMTPConnection.open(SMTPServer(host: "127.0.0.1", port: port, security: .none, heloName: "localhost",
                                                  timeouts: .uniform(step: 60, finalReply: 120)))
    }
}

/// A filter.toml for `home`, re-injecting over SMTP to `port`.
func filterConfig(_ home: TemporaryGnuPGHome, reinjectPort port: Int, extra: String = "", listen: String = "") throws -> String {
    let path = home.path + "/filter.toml"
    try """
        gnupg_home = "\(home.path)"
        log = "stderr"
        timeout = 60
        \(extra)
        [reinject]
        method = "smtp"
        port = \(port)
        timeout = 20
        [journal]
        directory = "\(home.path)/state/journal"
        [listen]
        parallel = 4
        drain_timeout = 20
        \(listen)
        """.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// The configuration of a resident filter and of its pipe-filter twin: the same settings, each with its
/// own re-injection port and its own journal, so the two modes can be compared mail for mail.
func filterConfigs(_ home: TemporaryGnuPGHome, daemonPort: Int, pipePort: Int) throws -> (daemon: String, pipe: String) {
    let daemon = try filterConfig(home, reinjectPort: daemonPort)
    let pipe = home.path + "/pipe.toml"
    try String(contentsOfFile: daemon, encoding: .utf8)
        .replacingOccurrences(of: "port = \(daemonPort)", with: "port = \(pipePort)")
        .replacingOccurrences(of: "/state/journal", with: "/pipe/journal")
        .write(toFile: pipe, atomically: true, encoding: .utf8)
    return (daemon, pipe)
}

/// The reply of a mail sent over `connection`: the final reply's code, or the refusal's.
func send(_ connection: BlockingSMTPConnection, _ bytes: [UInt8], from sender: String = "alice@example.org",
          to recipients: [String]) -> (code: Int, text: String) {
    do {
        let delivery = try connection.send(from: sender, to: recipients, message: bytes)
        return (delivery.finalReply?.code ?? 0, delivery.finalReply.map { "\($0)" } ?? "")
    } catch {
        return (error.reply?.code ?? 0, error.description)
    }
}

/// How many copies each recipient got at `servers`.
func counts(_ servers: [RecordingSMTPServer]) -> [String: Int] {
    servers.flatMap(\.transactions).flatMap(\.recipients).reduce(into: [:]) {
        $0[String($1.dropFirst().dropLast()), default: 0] += 1
    }
}
