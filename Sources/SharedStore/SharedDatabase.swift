import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Platform
import PostgresNIO
import Sending
import Settings
import Synchronization

/// The database's failure in one line: what could not be done and why,
/// never a password (the URL shown has none) nor stored content.
package struct SharedStoreFailure: Error, Sendable, CustomStringConvertible {
    /// One line.
    package let description: String
}

/// One PostgreSQL database several nodes share (`[store] url`): one
/// connection, made when first needed and made again after it broke (the
/// server restarted, a statement ran past its time), so a node recovers by
/// itself once the server is back. The schema is brought up to date once,
/// on the first connection, under an advisory lock (``SharedSchema``).
///
/// Every statement here is one atomic statement (no transaction spans
/// calls), so the callers of all threads share the connection: postgres-nio
/// queues their statements in order.
///
/// Two ways in: ``run(_:)`` waits (a future's `wait()`) for the synchronous
/// callers, the resident filter's worker threads and the pipe filter's
/// thread, which are threads of their own, never Swift concurrency's; and
/// ``query(_:)`` is `async` for the reading server's handlers. The work
/// itself happens on NIO's event loop either way.
package final class SharedDatabase: Sendable {
    /// The configuration.
    package let settings: StoreSettings
    private let configuration: PostgresConnection.Configuration
    private let loop: any EventLoop
    private let logger: Logger
    private let state = Mutex(State())
    /// Connections made so far (for tests: a restart is followed by a new one).
    package var connectionsMade: Int { state.withLock { $0.made } }

    private struct State {
        var connection: PostgresConnection?
        var pending: EventLoopFuture<PostgresConnection>?
        var migrated = false
        var made = 0
    }

    /// A client of the database `settings` names. The password is had here
    /// (the file was read with the configuration; a `password_command` runs
    /// now, once); nothing connects until the first statement.
    package init(_ settings: StoreSettings) throws(SharedStoreFailure) {
        self.settings = settings
        let password: String?
        switch settings.password {
        case .none: password = nil
        case .text(let text): password = text
        case .command(let command):
            do throws(PasswordError) {
                let secret = try Password.run(command, timeout: TimeInterval(settings.passwordTimeout))
                password = secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            } catch {
                throw SharedStoreFailure(description: "the shared store \(settings.displayURL): store.\(error.description)")
            }
        }
        let tls: PostgresConnection.Configuration.TLS
        if settings.tls {
            // The server's certificate and name are verified (NIOSSL's default, full verification); never downgraded.
            var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
            tlsConfiguration.minimumTLSVersion = .tlsv12
            if let caFile = settings.caFile { tlsConfiguration.trustRoots = .file(caFile) }
            do { tls = .require(try NIOSSLContext(configuration: tlsConfiguration)) } catch {
                throw SharedStoreFailure(description: "the shared store \(settings.displayURL): cannot set up TLS (\(error))")
            }
        } else {
            tls = .disable
        }
        var configuration = PostgresConnection.Configuration(host: settings.host, port: settings.port, username: settings.user,
                                                             password: password, database: settings.database, tls: tls)
        configuration.options.connectTimeout = .seconds(Int64(settings.connectTimeout))
        if settings.tls && !Loopback.isIPv6Address(settings.host) && settings.host.first?.isLetter == true {
            configuration.options.tlsServerName = settings.host
        }
        self.configuration = configuration
        self.loop = MultiThreadedEventLoopGroup.singleton.next()
        // postgres-nio's own log lines are not ours to print: failures come back as errors.
        self.logger = Logger(label: "mailsec-store", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// Runs `query`, waiting on this thread (never a Swift concurrency
    /// thread: see the type's notes). Every failure is one line.
    package func run(_ query: PostgresQuery) throws(SharedStoreFailure) -> PostgresQueryResult {
        do { return try future(query).wait() } catch { throw failure(error) }
    }

    /// Runs `query` without holding a thread.
    package func query(_ query: PostgresQuery) async throws(SharedStoreFailure) -> PostgresQueryResult {
        do { return try await future(query).get() } catch { throw failure(error) }
    }

    /// The statement on the connection, failed after `timeout` seconds; a
    /// statement that failed for the connection's sake drops it.
    private func future(_ query: PostgresQuery) -> EventLoopFuture<PostgresQueryResult> {
        let logger = logger
        let timeout = TimeAmount.seconds(Int64(settings.timeout))
        return connection().flatMap { connection in
            let promise = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
            let deadline = connection.eventLoop.scheduleTask(in: timeout) {
                promise.fail(SharedStoreFailure(description: "no answer within \(self.settings.timeout) s"))
                // Its state is unknown now: never used again.
                self.drop(connection)
            }
            connection.query(query, logger: logger).whenComplete { result in
                deadline.cancel()
                if case .failure(let error) = result, Self.isConnectionFailure(error) { self.drop(connection) }
                promise.completeWith(result)
            }
            return promise.futureResult
        }
    }

    /// The open connection, or one being made (with the schema brought up to date the first time).
    private func connection() -> EventLoopFuture<PostgresConnection> {
        let (future, new) = state.withLock { state -> (EventLoopFuture<PostgresConnection>, Bool) in
            if let connection = state.connection, !connection.isClosed { return (loop.makeSucceededFuture(connection), false) }
            state.connection = nil
            if let pending = state.pending { return (pending, false) }
            state.made += 1
            let migrated = state.migrated
            let made = state.made
            let logger = logger
            let future = PostgresConnection.connect(on: loop, configuration: configuration, id: made, logger: logger)
                .flatMap { connection -> EventLoopFuture<PostgresConnection> in
                    guard !migrated else { return connection.eventLoop.makeSucceededFuture(connection) }
                    return SharedSchema.migrate(connection, logger: logger).map { connection }.flatMapError { error in
                        (connection.close() as EventLoopFuture<Void>).flatMapThrowing { withExtendedLifetime(connection) {}; throw error }
                            .flatMapErrorThrowing { _ in withExtendedLifetime(connection) {}; throw error }
                    }
                }
            state.pending = future
            return (future, true)
        }
        // Registered outside the lock: the callback takes it.
        if new {
            future.whenComplete { result in
                self.state.withLock { state in
                    state.pending = nil
                    if case .success(let connection) = result {
                        state.connection = connection
                        state.migrated = true
                    }
                }
            }
        }
        return future
    }

    private func drop(_ connection: PostgresConnection) {
        state.withLock { state in
            if state.connection === connection { state.connection = nil }
        }
        Self.close(connection)
    }

    deinit {
        // postgres-nio asserts that a connection is closed before it goes.
        if let connection = state.withLock({ $0.connection }) { Self.close(connection) }
    }

    /// Closes `connection` without waiting, keeping it until it is closed
    /// (postgres-nio asserts that a connection is closed before it goes).
    private static func close(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// A connection of its own, apart from the one statements share: for
    /// LISTEN, which lasts as long as the connection. The caller closes it.
    package func separateConnection() -> EventLoopFuture<PostgresConnection> {
        let made = state.withLock { state in
            state.made += 1
            return state.made
        }
        return PostgresConnection.connect(on: loop, configuration: configuration, id: made, logger: logger)
    }

    /// The logger statements are run with (it prints nothing).
    package var quietLogger: Logger { logger }

    /// Closes the connection (the next statement makes a new one).
    package func close() {
        let connection = state.withLock { state in
            defer { state.connection = nil }
            return state.connection
        }
        if let connection {
            let closing: EventLoopFuture<Void> = connection.close()
            try? closing.wait()
        }
    }

    /// True when `error` says the connection itself is gone or unusable (not a refused statement).
    private static func isConnectionFailure(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return true }
        return error.code != .server
    }

    /// One line for any failure: the URL (no password), and the server's
    /// message and SQLSTATE, or the connection's reason.
    package func failure(_ error: any Error) -> SharedStoreFailure {
        let place = "the shared store \(settings.displayURL)"
        if let error = error as? SharedStoreFailure {
            return error.description.hasPrefix("the shared store") ? error : SharedStoreFailure(description: "\(place): \(error.description)")
        }
        guard let error = error as? PSQLError else {
            return SharedStoreFailure(description: "\(place): cannot reach it (\(Self.oneLine(String(describing: error))))")
        }
        if let info = error.serverInfo {
            let message = info[.message].map(Self.oneLine) ?? "refused"
            let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return SharedStoreFailure(description: "\(place): \(message)\(state)")
        }
        let reason = error.underlying.map { Self.oneLine(String(describing: $0)) } ?? error.code.description
        return SharedStoreFailure(description: "\(place): cannot reach it (\(reason))")
    }

    private static func oneLine(_ text: String) -> String {
        String(text.split(whereSeparator: \.isNewline).joined(separator: " ").prefix(300))
    }
}
