import Foundation
import Synchronization

/// Steps that run beside the caller. Each gpg operation is a process of its
/// own, so a mail's key export need not wait for its letters. GMime objects
/// never go to another thread this way: only GnuPG work does.
enum Concurrently {}

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
