import Foundation
import Synchronization

/// A private PostgreSQL server (Debian's postgresql 15) for the tests of the
/// shared store: its own cluster in a temporary folder, listening on
/// 127.0.0.1 at a free port and on a unix socket in that folder. PostgreSQL
/// refuses to run as root, so it runs as the unprivileged `postgres` user
/// (made by Debian's package) through `runuser`. The superuser connects over
/// the socket (trust, for the tests' set-up); the test role over TCP with a
/// password (SCRAM), so that the password file's path is the one used.
///
/// ``shared`` is one server per test process (stopped when it exits); a test
/// that stops and starts its server makes its own with ``init()``. Each test
/// takes a database of its own (``makeDatabase()``).
public final class PostgresServer: @unchecked Sendable {
    // @unchecked: the fields are fixed once started; stop/start are called by the test that owns it.
    /// The folder holding the cluster, its socket and its log.
    public let folder: String
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The test role's name.
    public let user = "mailsec"
    /// The test role's password.
    public let password: String
    private static let bin = "/usr/lib/postgresql/15/bin"
    private let databases = Atomic<Int>(0)

    /// The process's server, started on first use and stopped when the process exits.
    public static let shared: PostgresServer = {
        do {
            let server = try PostgresServer()
            sharedFolder.withLock { $0 = server.folder }
            atexit { PostgresServer.stopShared() }
            return server
        } catch {
            fatalError("cannot start the test PostgreSQL: \(error)")
        }
    }()
    private static let sharedFolder = Mutex<String?>(nil)
    private static func stopShared() {
        guard let folder = sharedFolder.withLock({ $0 }) else { return }
        _ = try? asPostgres(bin + "/pg_ctl", ["-D", folder + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A new cluster, started.
    public init() throws {
        folder = try makePrivateDirectory(prefix: "ms-pg")
        port = try freePort()
        password = (0..<24).map { _ in String("abcdefghijkmnpqrstuvwxyz23456789".randomElement()!) }.joined()
        guard chown(folder, Self.postgresUID, Self.postgresGID) == 0 else { throw Failure("cannot give \(folder) to postgres") }
        // The superuser's password is never used (trust on the socket); the test role's is set over standard input.
        let initdb = try Self.asPostgres(Self.bin + "/initdb", ["-D", folder + "/data", "-U", "postgres", "--auth-local=trust",
                                                               "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"])
        guard initdb.status == 0 else { throw Failure("initdb: \(initdb.errors)") }
        try start()
        let role = try superuser("CREATE ROLE \(user) LOGIN PASSWORD '\(password)';")
        guard role.status == 0 else { throw Failure("CREATE ROLE: \(role.errors)") }
    }

    deinit {
        if Self.sharedFolder.withLock({ $0 }) != folder {
            stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// Starts the server (again), waiting until it accepts connections.
    public func start() throws {
        let options = "-c listen_addresses=127.0.0.1 -c port=\(port) -c unix_socket_directories=\(folder) -c fsync=off "
            + "-c max_connections=200 -c password_encryption=scram-sha-256"
        let started = try Self.asPostgres(Self.bin + "/pg_ctl", ["-D", folder + "/data", "-l", folder + "/log", "-o", options, "-w",
                                                                "-t", "120", "start"])
        guard started.status == 0 else {
            let log = (try? String(contentsOfFile: folder + "/log", encoding: .utf8)) ?? ""
            throw Failure("pg_ctl start: \(started.output) \(started.errors) \(log.suffix(2000))")
        }
    }

    /// Stops the server (fast: connections are ended at once).
    public func stop() {
        _ = try? Self.asPostgres(Self.bin + "/pg_ctl", ["-D", folder + "/data", "-m", "fast", "-w", "stop"])
    }

    /// A new, empty database owned by the test role; its name.
    public func makeDatabase() throws -> String {
        let name = "t\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        let made = try superuser("CREATE DATABASE \(name) OWNER \(user);")
        guard made.status == 0 else { throw Failure("CREATE DATABASE: \(made.errors)") }
        return name
    }

    /// `statements` run by the superuser over the socket (on standard input, never in argv).
    @discardableResult
    public func superuser(_ statements: String, database: String = "postgres") throws -> ProcessResult {
        try Self.asPostgres(Self.bin + "/psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", folder, "-p", String(port), "-U", "postgres",
                                                "-d", database, "-f", "-"], input: Array(statements.utf8))
    }

    /// `[store]` for `database` as the test role, the password in a new 0600 file; the TOML text.
    public func storeTable(database: String, passwordFile: String) throws -> String {
        let fd = open(passwordFile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure("cannot make \(passwordFile)") }
        let bytes = Array((password + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        return """
            [store]
            url = "postgres://\(user)@127.0.0.1:\(port)/\(database)"
            password_file = "\(passwordFile)"
            timeout = 20
            connect_timeout = 10

            """
    }

    private static var postgresUID: uid_t { getpwnam("postgres").map { $0.pointee.pw_uid } ?? 0 }
    private static var postgresGID: gid_t { getpwnam("postgres").map { $0.pointee.pw_gid } ?? 0 }

    private static func asPostgres(_ program: String, _ arguments: [String], input: [UInt8] = []) throws -> ProcessResult {
        guard getpwnam("postgres") != nil else { throw Failure("no postgres user: install Debian's postgresql (scripts/bootstrap)") }
        let argv = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", program] + arguments : [program] + arguments
        guard program.hasSuffix("/pg_ctl") else { return try run(argv[0], Array(argv.dropFirst()), input: input) }
        return spawnAndWait(argv)
    }

    /// Runs `argv` with its standard streams on /dev/null and waits for it.
    /// Not Foundation's Process: the server pg_ctl leaves running inherits
    /// what Process watches for the end, and Process then never sees it end.
    private static func spawnAndWait(_ argv: [String]) -> ProcessResult {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        var pid: pid_t = 0
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        guard posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ) == 0 else {
            return ProcessResult(status: 127, stdout: [], stderr: Array("cannot run \(argv[0])".utf8))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ProcessResult(status: code, stdout: [], stderr: [])
    }

    /// A failure to set the server up.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
