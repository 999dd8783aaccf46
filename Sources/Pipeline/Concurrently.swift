import Foundation
import Synchronization

/// Runs independent steps side by side. Each gpg operation is a process of
/// its own, so a mail's key export and its letters' sign+encrypt steps can
/// overlap instead of waiting for each other.
enum Concurrently {
    /// Calls `work` for every number in `0..<count`, on GCD's worker threads,
    /// and returns the results in that order. If any step throws, the error
    /// of the lowest-numbered failing step is thrown, after all have ended.
    static func run<T: Sendable>(_ count: Int, _ work: @Sendable (Int) throws -> T) throws -> [T] {
        if count == 1 { return [try work(0)] }
        let results = Mutex<[Int: Result<T, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let result = Result { try work(index) }
            results.withLock { $0[index] = result }
        }
        return try results.withLock { finished in try (0..<count).map { try finished[$0]!.get() } }
    }
}

extension Concurrently {
    /// One step on a thread of its own while the caller goes on; `wait()`
    /// for its result. Nil work gives nil.
    final class Background<T: Sendable>: @unchecked Sendable {
        // @unchecked: `outcome` is written before `done` is signalled and read after.
        private var outcome: Result<T?, any Error> = .success(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ work: (@Sendable () throws -> T)?) {
            guard let work else { done.signal(); return }
            Thread.detachNewThread { [self] in
                outcome = Result { try work() }
                done.signal()
            }
        }

        func wait() -> Result<T?, any Error> {
            done.wait()
            done.signal()  // later waits return at once
            return outcome
        }
    }
}
