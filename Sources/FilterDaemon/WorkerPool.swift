import Foundation
import Synchronization

/// A fixed set of threads for the filter's blocking work (GPGME waits for
/// gpg, the journal syncs, re-injection waits for its server): never on
/// Swift's cooperative pool, whose few threads must keep the listener
/// answering. As many mails are worked on at once as there are threads;
/// the rest wait in order.
final class WorkerPool: @unchecked Sendable {
    // @unchecked: `jobs` and `busy` are only touched under `condition`.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var busy = 0
    let threads: Int

    init(threads: Int, name: String) {
        self.threads = max(1, threads)
        for number in 0..<self.threads {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "\(name)-\(number)"
            // GMime and the redactor recurse over a mail's structure: the stack of a main thread.
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Runs `body` on one of the threads and returns its result; after
    /// `timeout` returns `late()` instead (the body still runs to its end on
    /// its thread: it cannot be cut off safely, and what it hands on is in
    /// the journal). `body` gets `claim`: true when its result will be the
    /// answer (from then on the time-out no longer counts), false when
    /// `late()` was answered already.
    func run<T: Sendable>(timeout: Duration, late: @escaping @Sendable () -> T,
                          _ body: @escaping @Sendable (_ claim: () -> Bool) -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            let once = OnceBox(continuation)
            enqueue {
                let result = body { once.claim() }
                once.resume(result)
            }
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                once.timeOut(late())
            }
        }
    }

    /// Mails being worked on or waiting.
    var load: Int {
        let (busy, waiting) = counts
        return busy + waiting
    }

    /// Mails being worked on, and mails waiting for a thread.
    var counts: (busy: Int, waiting: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (busy, jobs.count)
    }

    /// Waits until no job runs or waits, or `timeout`; true when idle.
    func waitIdle(timeout: TimeInterval) -> Bool {
        let until = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while busy + jobs.count > 0 {
            if !condition.wait(until: until) { return busy + jobs.count == 0 }
        }
        return true
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            busy += 1
            condition.unlock()
            job()
            condition.lock()
            busy -= 1
            condition.broadcast()
            condition.unlock()
        }
    }
}

/// A continuation resumed by whichever comes first, the result or the time-out;
/// a result that claimed the answer first is not overtaken by the time-out.
private final class OnceBox<T: Sendable>: Sendable {
    private let state: Mutex<(continuation: CheckedContinuation<T, Never>?, claimed: Bool)>

    init(_ continuation: CheckedContinuation<T, Never>) { state = Mutex((continuation, false)) }

    /// True when the result will be the answer: not yet timed out, and from now on it cannot be.
    func claim() -> Bool {
        state.withLock { state in
            guard state.continuation != nil else { return false }
            state.claimed = true
            return true
        }
    }

    func resume(_ value: T) {
        state.withLock { $0.continuation.take() }?.resume(returning: value)
    }

    func timeOut(_ value: T) {
        state.withLock { $0.claimed ? nil : $0.continuation.take() }?.resume(returning: value)
    }
}
