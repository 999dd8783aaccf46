import Platform

/// One step on a thread of its own while the caller goes on; `wait()` for
/// its result (nil work gives nil). A mail's key export runs so beside its
/// letters (each gpg operation is a process of its own), a letter's body
/// is written into gpg's pipe so while GPGME reads the other end, and the
/// keyring is checked so while gpg lists its keys (``KeyringCheck``).
/// The thread is joined: by `wait()`, or when the step is dropped without
/// one (a caller that failed before waiting), so no step runs on behind it.
package final class Background<T>: @unchecked Sendable {
    // @unchecked: `outcome` is written by the thread and read after it was
    // joined. What `work` touches is the caller's to keep apart (see its uses).
    private let outcome = Outcome()
    private let thread: JoinableThread?

    /// Starts `work` on a thread of its own (none for nil). Throws
    /// ``ThreadStartError`` when no thread can be started; `work` is then not run.
    package init(_ work: (() throws -> T)?) throws(ThreadStartError) {
        guard let work else { thread = nil; return }
        let step = UncheckedStep(work: work), outcome = self.outcome
        thread = try JoinableThread { outcome.value = Result { try step.work() } }
    }

    /// Joins the thread and gives the step's result; later calls give it at once.
    package func wait() -> Result<T?, any Error> {
        thread?.join()
        return outcome.value
    }

    /// The step's result, written by its thread before it ends.
    private final class Outcome: @unchecked Sendable {
        var value: Result<T?, any Error> = .success(nil)
    }

    /// `work` crosses to the new thread, where it alone runs.
    private struct UncheckedStep: @unchecked Sendable {
        let work: () throws -> T
    }
}
