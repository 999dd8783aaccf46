import Foundation

/// A scripted SMTP peer (Peers/peer.py, Python's stdlib) on a free loopback
/// port, stopped by `stop()`; what the client sent is read from its log.
/// The SMTP client's tests and the sending commands' tests share it.
public final class Peer {
    public let port: Int
    private let process: Process
    private let folder: String
    private var logPath: String { folder + "/log" }

    public static let peers = Paths.root.appendingPathComponent("Tests/SMTPTests/Peers")

    public init(_ arguments: [String] = []) throws {
        folder = try makePrivateDirectory(prefix: "ms-smtp")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.peers.appendingPathComponent("peer.py").path, "--log", folder + "/log"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = ""
        while !line.contains("\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += String(decoding: chunk, as: UTF8.self)
        }
        guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
    }

    /// Stops the peer and removes its folder; returns what it logged.
    @discardableResult
    public func stop() -> [[String: Any]] {
        let entries = log()
        // SIGKILL: a test runner may hand SIGTERM down ignored.
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: folder)
        return entries
    }

    deinit { stop() }

    public func log() -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: logPath) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The command lines the client sent, in order.
    public func lines() -> [String] { log().compactMap { $0["line"] as? String } }

    /// The messages received (the bytes between 354 and ".", CRLF lines, still dot-stuffed).
    public func messages() -> [[UInt8]] {
        log().compactMap { ($0["message"] as? String).flatMap { Data(base64Encoded: $0) }.map { Array($0) } }
    }

    /// True when any MAIL FROM reached the peer.
    public var sawMail: Bool { lines().contains { $0.uppercased().hasPrefix("MAIL FROM") } }
}

/// Throwaway TLS material (Peers/make-certs.sh, openssl), removed by `remove()`.
public struct Certificates {
    public let folder: String
    public init() throws {
        folder = try makePrivateDirectory(prefix: "ms-cert")
        let result = try run(Peer.peers.appendingPathComponent("make-certs.sh").path, [folder])
        guard result.status == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
    public func path(_ name: String) -> String { folder + "/" + name }
    /// Peer arguments serving the certificate `name` (server, other, wrongname, expired).
    public func serving(_ name: String) -> [String] { ["--cert", path(name + ".pem"), "--key", path(name + ".key")] }
    public var ca: String { path("ca.pem") }
    public func remove() { try? FileManager.default.removeItem(atPath: folder) }
}
