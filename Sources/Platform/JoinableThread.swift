import Glibc
import Synchronization

/// A thread of our own that is always joined: ``join()`` returns once the
/// thread has ended (its thread-specific destructors included), and a thread
/// never joined is joined when this object goes, so that no thread runs on
/// behind the step that started it. Foundation's `Thread` is detached:
/// nothing can wait for its end, only for a signal it sends before it.
package final class JoinableThread: Sendable {
    private let handle: pthread_t
    /// True once joined; held while joining, so that a second `join()` waits for the first.
    private let joined = Mutex(false)

    /// Starts `body` on a new thread (the C library's default attributes:
    /// joinable, the default stack size, this thread's signal mask).
    /// Throws when the system has no thread to give (`EAGAIN`): `body` is
    /// then not run.
    package init(_ body: @escaping @Sendable () -> Void) throws(ThreadStartError) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var handle = pthread_t()
        let err = pthread_create(&handle, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard err == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw ThreadStartError(code: err)
        }
        self.handle = handle
    }

    /// Waits until the thread has ended; at once when it was joined before.
    /// Never call it on the thread itself.
    package func join() {
        precondition(pthread_equal(handle, pthread_self()) == 0, "a thread cannot join itself")
        joined.withLock { done in
            guard !done else { return }
            pthread_join(handle, nil)
            done = true
        }
    }

    deinit {
        // The last reference may go on the thread itself (its body held it): it
        // cannot wait for its own end, and is left to free itself.
        if pthread_equal(handle, pthread_self()) != 0 {
            if !joined.withLock({ $0 }) { pthread_detach(handle) }
        } else {
            join()
        }
    }

    /// `body` crosses to the new thread as a retained pointer.
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

/// No thread could be started (the system's or the user's limit is reached): try again (75).
package struct ThreadStartError: MailsecError, CustomStringConvertible {
    /// The `errno` of `pthread_create`.
    package let code: Int32
    /// 75: nothing was sent; try again.
    package var exitStatus: ExitStatus { .temporary }
    /// One line with the system's reason.
    package var description: String { "cannot start a thread: \(errnoReason(code))" }
}
