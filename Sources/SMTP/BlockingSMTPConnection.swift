import Dispatch
import Foundation

/// ``SMTPConnection`` for synchronous callers (the filter: one process per
/// mail, no async code): each call blocks the calling thread until done.
/// Never call it from a Swift concurrency task.
public final class BlockingSMTPConnection: Sendable {
    public let connection: SMTPConnection

    private init(_ connection: SMTPConnection) { self.connection = connection }

    /// ``SMTPConnection/open(_:credentials:)``, blocking.
    public static func open(_ server: SMTPServer, credentials: SMTPCredentials? = nil) throws(SMTPError) -> BlockingSMTPConnection {
        BlockingSMTPConnection(try runBlocking { () async throws(SMTPError) in try await SMTPConnection.open(server, credentials: credentials) })
    }

    /// ``SMTPConnection/send(from:to:message:allOrNothing:)``, blocking.
    public func send(from sender: String, to recipients: [String], message: [UInt8],
                     allOrNothing: Bool = false) throws(SMTPError) -> SMTPDelivery {
        let connection = self.connection
        return try runBlocking { () async throws(SMTPError) in
            try await connection.send(from: sender, to: recipients, message: message, allOrNothing: allOrNothing)
        }
    }

    /// ``SMTPConnection/reset()``, blocking.
    public func reset() throws(SMTPError) {
        let connection = self.connection
        try runBlocking { () async throws(SMTPError) in try await connection.reset() }
    }

    /// ``SMTPConnection/quit()``, blocking.
    public func quit() {
        let connection = self.connection
        _ = try? runBlocking { () async throws(SMTPError) in await connection.quit() }
    }
}

/// Runs `body` as a task and waits for it on this thread. The task runs on
/// a thread of its own (a task executor preference, which the default actor
/// ``SMTPConnection`` follows too), not on Swift's cooperative pool: a caller
/// that blocks one of the pool's few threads (a test, a server's handler)
/// must not leave the task without a thread to run on.
private func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws(SMTPError) -> T) throws(SMTPError) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task(executorPreference: BlockingExecutor.shared) {
        do throws(SMTPError) { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

/// One thread that runs the jobs of blocking calls' tasks, in order. Jobs
/// never block (they await NIO), so one thread serves every caller.
private final class BlockingExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` is only touched under `condition`.
    static let shared = BlockingExecutor()
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init() {
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "mailsec-smtp-blocking"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Written by the task before `signal()`, read only after `wait()`: never at once.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    var result: Result<T, SMTPError>?
}
