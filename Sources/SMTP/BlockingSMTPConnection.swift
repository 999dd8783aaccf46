import Dispatch
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

/// Runs `body` as a task and waits for it on this thread. The task runs on
/// the SMTP event loop's thread (a task executor preference; the
/// ``SMTPConnection`` actor runs there too), not on Swift's cooperative
/// pool: a caller that blocks one of the pool's few threads (a test, a
/// server's handler) must not leave the task without a thread to run on.
/// One hop to that thread and one back per call, none per command.
private func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws(SMTPError) -> T) throws(SMTPError) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task(executorPreference: LoopTaskExecutor.shared) {
        do throws(SMTPError) { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
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

/// Written by the task before `signal()`, read only after `wait()`: never at once.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    var result: Result<T, SMTPError>?
}
