import Foundation
import SMTPListener
import Synchronization
import TestSupport

/// A handler that records every mail it is given (its bytes read at once),
/// answers with a verdict chosen per mail, and can be made slow.
final class RecordingHandler: MailHandler {
    struct Got: Sendable {
        let sender: String
        let recipients: [String]
        let size: Int
        let bytes: [UInt8]
        let spooled: Bool
    }

    private let state = Mutex<[Got]>([])
    private let verdict: @Sendable (ReceivedMail, [UInt8]) -> Verdict
    private let delay: Duration
    private let gate: Gate?

    /// With `gate`, each mail's handling waits until the gate is opened (no
    /// clock: a starved machine cannot make it end early).
    init(delay: Duration = .zero, gate: Gate? = nil,
         verdict: @escaping @Sendable (ReceivedMail, [UInt8]) -> Verdict = { _, _ in .accepted("queued") }) {
        self.verdict = verdict
        self.delay = delay
        self.gate = gate
    }

    var mails: [Got] { state.withLock { $0 } }

    func handle(_ mail: ReceivedMail) async -> Verdict {
        let bytes = (try? mail.bytes()) ?? []
        state.withLock { $0.append(Got(sender: mail.sender, recipients: mail.recipients, size: mail.size,
                                       bytes: bytes, spooled: mail.isSpooled)) }
        if delay > .zero { try? await Task.sleep(for: delay) }
        if let gate { while !gate.isOpen { try? await Task.sleep(for: .milliseconds(20)) } }
        return verdict(mail, bytes)
    }
}

/// Shut until `open()`; a handler given one waits for it.
final class Gate: Sendable {
    private let opened = Mutex(false)
    var isOpen: Bool { opened.withLock { $0 } }
    func open() { opened.withLock { $0 = true } }
}

/// Collects the listener's log lines.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
}

/// A listener on a free port with its own spool folder, stopped and removed by `stop()`.
final class RunningListener {
    let listener: SMTPListener
    let handler: RecordingHandler
    let log = LogLines()
    let port: Int
    let spool: String

    init(_ configure: (inout ListenerSettings) -> Void = { _ in }, handler: RecordingHandler = RecordingHandler()) async throws {
        let folder = try makePrivateDirectory(prefix: "ms-listen")
        spool = folder + "/spool"
        var settings = ListenerSettings(port: 0, spoolDirectory: spool, greetingName: "test.invalid")
        // A connection that waits for the test (or a loaded machine) must not meet the first-command
        // time-out unless the test asks for it (LimitsTests.firstCommandTime does).
        settings.firstCommandTimeout = .seconds(300)
        configure(&settings)
        self.handler = handler
        listener = SMTPListener(settings: settings, handler: handler, log: log.sink)
        port = try await listener.start()
    }

    func stop() async {
        _ = await listener.drain(timeout: .seconds(5))
        try? FileManager.default.removeItem(atPath: (spool as NSString).deletingLastPathComponent)
    }

    /// Files in the spool folder plus descriptors this process holds open on it
    /// (spool files have no name; an open one shows as "… (deleted)").
    func spoolLeftovers() -> Int {
        let named = (try? FileManager.default.contentsOfDirectory(atPath: spool))?.count ?? 0
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let open = fds.filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd))?.hasPrefix(spool + "/") ?? false
        }
        return named + open.count
    }
}

/// Runs `body` with a listener, and stops it (and removes its folder) whatever happens.
func withListener<R>(_ configure: (inout ListenerSettings) -> Void = { _ in }, handler: RecordingHandler = RecordingHandler(),
                     _ body: (RunningListener) async throws -> R) async throws -> R {
    let running = try await RunningListener(configure, handler: handler)
    do {
        let result = try await body(running)
        await running.stop()
        return result
    } catch {
        await running.stop()
        throw error
    }
}

/// Polls `condition` for up to ten seconds, sleeping (not blocking) between tries.
func waitFor(_ condition: () throws -> Bool) async rethrows -> Bool {
    for _ in 0..<6000 {  // up to a minute: a loaded 2-core machine starves the cooperative pool
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try condition()
}

func sleepMicroseconds(_ microseconds: Int) async throws {
    try await Task.sleep(for: .microseconds(microseconds))
}

/// Runs a blocking call (a subprocess) on a thread of its own, so the
/// cooperative pool stays free for the listener's handler.
func offThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
