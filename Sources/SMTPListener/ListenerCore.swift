import NIOCore
import Synchronization

/// What the sessions of one listener share: settings, the handler, the log,
/// and the counts that caps and drain read. Sessions live on their own event
/// loops; everything here is behind one lock.
final class ListenerCore: Sendable {
    struct State {
        var sessions: [ObjectIdentifier: NIOLoopBound<Session>] = [:]
        /// Sessions with a mail open (MAIL given, DATA under way, or its handler running).
        var busy: Set<ObjectIdentifier> = []
        var handlersRunning = 0
        var draining = false
    }

    let settings: ListenerSettings
    let handler: any MailHandler
    let log: @Sendable (String) -> Void
    let state = Mutex(State())

    init(settings: ListenerSettings, handler: any MailHandler, log: @escaping @Sendable (String) -> Void) {
        self.settings = settings
        self.handler = handler
        self.log = log
    }

    /// Counts a new session in; false when it is over the cap (or the listener drains).
    func register(_ session: NIOLoopBound<Session>, id: ObjectIdentifier) -> (admitted: Bool, draining: Bool) {
        state.withLock { state in
            if state.draining { return (false, true) }
            if state.sessions.count >= settings.maxConnections { return (false, false) }
            state.sessions[id] = session
            return (true, false)
        }
    }

    func unregister(_ id: ObjectIdentifier) {
        state.withLock { state in
            state.sessions[id] = nil
            state.busy.remove(id)
        }
    }

    func setBusy(_ id: ObjectIdentifier, _ busy: Bool) {
        state.withLock { state in
            if busy { state.busy.insert(id) } else { state.busy.remove(id) }
        }
    }

    func handlerStarted() { state.withLock { $0.handlersRunning += 1 } }
    func handlerEnded() { state.withLock { $0.handlersRunning -= 1 } }
    var draining: Bool { state.withLock { $0.draining } }
}
