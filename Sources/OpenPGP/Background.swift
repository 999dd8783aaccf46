import Foundation

/// One step on a thread of its own while the caller goes on; `wait()` for
/// its result (nil work gives nil). A mail's key export runs so beside its
/// letters (each gpg operation is a process of its own), a letter's body
/// is written into gpg's pipe so while GPGME reads the other end, and the
/// keyring is checked so while gpg lists its keys (``KeyringCheck``).
package final class Background<T>: @unchecked Sendable {
    // @unchecked: `outcome` is written before `done` is signalled and read
    // after. What `work` touches is the caller's to keep apart (see its uses).
    private var outcome: Result<T?, any Error> = .success(nil)
    private let done = DispatchSemaphore(value: 0)

    package init(_ work: (() throws -> T)?) {
        guard let work else { done.signal(); return }
        let step = UncheckedStep(work: work)
        Thread.detachNewThread { [self] in
            outcome = Result { try step.work() }
            done.signal()
        }
    }

    package func wait() -> Result<T?, any Error> {
        done.wait()
        done.signal()  // later waits return at once
        return outcome
    }

    /// `work` crosses to the new thread, where it alone runs.
    private struct UncheckedStep: @unchecked Sendable {
        let work: () throws -> T
    }
}
