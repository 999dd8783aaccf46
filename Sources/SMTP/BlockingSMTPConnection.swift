import Foundation
import NIOCore

/// ``SMTPConnection`` for synchronous callers (the filter: one process per
/// mail, no async code): each call blocks the calling thread until done.
/// Never call it from a Swift concurrency task.
package final class BlockingSMTPConnection: Sendable {
    /// The connection the blocking calls run on.
    package let connection: SMTPConnection

    private init(_ connection: SMTPConnection) { self.connection = connection }

    /// ``SMTPConnection/open(_:credentials:)``, blocking.
    package static func open(_ server: SMTPServer, credentials: SMTPCredentials? = nil) throws(SMTPError) -> BlockingSMTPConnection {
        BlockingSMTPConnection(try runBlocking { () async throws(SMTPError) in try await SMTPConnection.open(server, credentials: credentials) })
    }

    /// ``open(_:credentials:)`` begun now and done on the SMTP event loop while
    /// the caller goes on; `then` is given the session or the error there, as
    /// soon as it is known, and ``Opening/wait()`` returns once `then` has run.
    package static func openInBackground(_ server: SMTPServer, credentials: SMTPCredentials? = nil,
                                         then: @escaping @Sendable (Result<BlockingSMTPConnection, SMTPError>) -> Void) -> Opening {
        let opened = start { () async throws(SMTPError) in BlockingSMTPConnection(try await SMTPConnection.open(server, credentials: credentials)) }
        return Opening(done: opened.map(then))
    }

    /// A session being opened by ``openInBackground(_:credentials:then:)``.
    package struct Opening: Sendable {
        fileprivate let done: EventLoopFuture<Void>

        /// Blocks until the session is open or has failed, and its `then` has run.
        package func wait() {
            do { try done.wait() } catch { preconditionFailure("the promise is never failed") }
        }
    }

    /// ``SMTPConnection/send(from:to:message:allOrNothing:)``, blocking.
    package func send(from sender: String, to recipients: [String], message: [UInt8],
                     allOrNothing: Bool = false) throws(SMTPError) -> SMTPDelivery {
        let connection = self.connection
        return try runBlocking { () async throws(SMTPError) in
            try await connection.send(from: sender, to: recipients, message: message, allOrNothing: allOrNothing)
        }
    }

    /// ``SMTPConnection/reset()``, blocking.
    package func reset() throws(SMTPError) {
        let connection = self.connection
        try runBlocking { () async throws(SMTPError) in try await connection.reset() }
    }

    /// ``SMTPConnection/quit()``, blocking.
    package func quit() {
        let connection = self.connection
        _ = try? runBlocking { () async throws(SMTPError) in await connection.quit() }
    }
}

/// Runs `body` as a task and waits for it on this thread with swift-nio's
/// own bridge from async to blocking code: a promise the task completes,
/// whose future's `wait()` blocks the caller (and refuses to run on the event
/// loop's own thread, which would wait for itself). The task runs on the
/// SMTP event loop's thread (a task executor preference; the
/// ``SMTPConnection`` actor runs there too), not on Swift's cooperative
/// pool: a caller that blocks one of the pool's few threads (a test, a
/// server's handler) must not leave the task without a thread to run on.
/// One hop to that thread and one back per call, none per command.
private func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws(SMTPError) -> T) throws(SMTPError) -> T {
    let result: Result<T, SMTPError>
    do { result = try start(body).wait() } catch { preconditionFailure("the promise is never failed") }
    return try result.get()
}

/// Starts `body` as a task on the SMTP event loop's thread; the future it
/// returns is never failed: the result, an ``SMTPError`` included, is its value.
private func start<T: Sendable>(_ body: @escaping @Sendable () async throws(SMTPError) -> T) -> EventLoopFuture<Result<T, SMTPError>> {
    let promise = SMTPConnection.loop.makePromise(of: Result<T, SMTPError>.self)
    Task(executorPreference: LoopTaskExecutor.shared) {
        do throws(SMTPError) { promise.succeed(.success(try await body())) } catch { promise.succeed(.failure(error)) }
    }
    return promise.futureResult
}

/// The SMTP event loop as a task executor. Jobs never block (they await
/// NIO), so the loop's one thread serves every caller and its I/O.
private final class LoopTaskExecutor: TaskExecutor {
    static let shared = LoopTaskExecutor(SMTPConnection.loop)
    private let loop: any EventLoop

    private init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
