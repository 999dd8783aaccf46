import NIOCore
import Synchronization

/// What the sessions of one listener share: settings, the handler, the log,
/// and the counts that caps and drain read. Sessions live on their own event
/// loops; everything here is behind one lock.
final class ListenerCore: Sendable {
    struct State {
        var sessions: [ObjectIdentifier: NIOLoopBound<Session>] = [:]
        /// Sessions per client address (the address of each in ``addresses``).
        var perAddress: [String: Int] = [:]
        var addresses: [ObjectIdentifier: String] = [:]
        /// Sessions with a mail open (MAIL given, DATA under way, or its handler running).
        var busy: Set<ObjectIdentifier> = []
        var handlersRunning = 0
        var draining = false
        /// The priority of the task that started the listener: each handler's task
        /// runs at it, as a child task would (nil before ``SMTPListener/start()``).
        var handlerPriority: TaskPriority?
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

    /// Why a session was not counted in.
    enum Refusal { case draining, tooMany, tooManyFromAddress }

    /// Counts a new session from `address` in; a refusal when it is over a
    /// cap (in all, or from that address) or the listener drains.
    func register(_ session: NIOLoopBound<Session>, id: ObjectIdentifier, address: String) -> Refusal? {
        state.withLock { state in
            if state.draining { return .draining }
            if state.sessions.count >= settings.maxConnections { return .tooMany }
            if state.perAddress[address, default: 0] >= settings.maxConnectionsPerAddress { return .tooManyFromAddress }
            state.sessions[id] = session
            state.perAddress[address, default: 0] += 1
            state.addresses[id] = address
            return nil
        }
    }

    func unregister(_ id: ObjectIdentifier) {
        state.withLock { state in
            state.sessions[id] = nil
            state.busy.remove(id)
            if let address = state.addresses.removeValue(forKey: id) {
                state.perAddress[address, default: 1] -= 1
                if state.perAddress[address] == 0 { state.perAddress[address] = nil }
            }
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
