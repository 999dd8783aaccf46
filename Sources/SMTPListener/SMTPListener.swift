import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// An SMTP (RFC 5321) or LMTP (RFC 2033) server for a content filter: takes
/// mail from a local MTA (Postfix's `smtp` or `lmtp` client), hands each mail
/// to a ``MailHandler`` after its final ".", and answers with the handler's
/// ``Verdict``. No AUTH, no TLS: it listens on loopback.
///
/// Announces PIPELINING, SIZE, 8BITMIME, SMTPUTF8 and ENHANCEDSTATUSCODES;
/// never XFORWARD, AUTH, STARTTLS, CHUNKING or DSN. Command lines end at LF
/// (a CR before it is dropped), as Postfix's smtpd takes them; DATA lines end
/// at CRLF only, and only CRLF "." CRLF ends a mail.
package final class SMTPListener: Sendable {
    private let core: ListenerCore
    private let server = Mutex<(any Channel)?>(nil)
    private let started = Mutex(false)

    /// A listener handing every mail to `handler` and lines to `log`; ``start()`` binds it.
    package init(settings: ListenerSettings, handler: any MailHandler, log: @escaping @Sendable (String) -> Void) {
        core = ListenerCore(settings: settings, handler: handler, log: log)
    }

    /// Binds and starts accepting; returns the bound port. Each mail's handler
    /// runs in a task at the priority of the task that calls this.
    /// Throws ``ListenerError``: a non-loopback address without
    /// ``ListenerSettings/allowNonLoopback``, a spool folder that is not ours,
    /// an address in use.
    package func start() async throws -> Int {
        let settings = core.settings
        guard started.withLock({ let was = $0; $0 = true; return !was }) else {
            throw ListenerError(.alreadyStarted, "the listener is already started")
        }
        guard settings.maxMessageSize > 0, settings.maxConnections > 0, settings.maxConnectionsPerAddress > 0, settings.maxRecipients > 0,
              settings.memoryLimit >= 0, (0...65535).contains(settings.port) else {
            throw ListenerError(.badSetting, "message size, connections and recipients must be above 0, the port 0–65535")
        }
        if !settings.allowNonLoopback && !ListenerSettings.isLoopback(settings.host) {
            throw ListenerError(.notLoopback, "\(settings.host) is not a loopback address (the listener has no AUTH and no TLS)")
        }
        try Self.prepareSpool(settings.spoolDirectory)
        let priority = Task.currentPriority
        core.state.withLock { $0.handlerPriority = priority }
        let core = self.core
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)  // not .socketOption: that is SOL_SOCKET, where 1 is SO_DEBUG (EACCES unless root: every connection closed)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Session(core: core))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: settings.host, port: settings.port).get()
        } catch {
            throw ListenerError(.bindFailed, "cannot listen on \(settings.host):\(settings.port): \(error)")
        }
        server.withLock { $0 = channel }
        return channel.localAddress?.port ?? settings.port
    }

    /// Stops accepting new connections (SIGTERM's first step); open sessions go on.
    package func stopAccepting() async {
        guard let channel = server.withLock({ let c = $0; $0 = nil; return c }) else { return }
        try? await channel.close()
    }

    /// Waits until every mail in progress has its answer, or `timeout`; then closes all
    /// connections (a session mid-DATA gets 421 4.3.2). True when nothing was cut off.
    ///
    /// A session between mails ends at once with 421 4.3.2; one with a mail
    /// open (from MAIL on) ends after that mail's answer. Also stops accepting.
    package func drain(timeout: Duration) async -> Bool {
        await stopAccepting()
        let sessions = core.state.withLock { state in
            state.draining = true
            return Array(state.sessions.values)
        }
        for session in sessions { session.eventLoop.execute { session.value.beginDrain() } }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var clean = true
        while core.state.withLock({ !$0.busy.isEmpty || $0.handlersRunning > 0 }) {
            if clock.now >= deadline { clean = false; break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let left = core.state.withLock { Array($0.sessions.values) }
        for session in left { session.eventLoop.execute { session.value.cutOff() } }
        // Give the 421s a moment to be written before the caller exits.
        let closing = clock.now + .seconds(2)
        while core.state.withLock({ !$0.sessions.isEmpty }) && clock.now < closing {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return clean
    }

    /// Handlers running now.
    package var mailsInProgress: Int { core.state.withLock { $0.handlersRunning } }

    /// Sessions open now.
    package var connections: Int { core.state.withLock { $0.sessions.count } }

    // MARK: Start-up checks

    /// Makes the spool folder (0700) or checks it is ours and a folder, and tries one spool file.
    static func prepareSpool(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw ListenerError(.spoolDirectory, "cannot make the spool folder \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw ListenerError(.spoolDirectory, "cannot read the spool folder \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw ListenerError(.spoolDirectory, "the spool folder \(path) is not a folder")
        }
        guard info.st_uid == geteuid() else {
            throw ListenerError(.spoolDirectory, "the spool folder \(path) belongs to another user")
        }
        if info.st_mode & 0o777 != 0o700 && chmod(path, 0o700) != 0 {
            throw ListenerError(.spoolDirectory, "cannot make the spool folder \(path) 0700: \(String(cString: strerror(errno)))")
        }
        _ = try SpoolFile(directory: path)
    }
}
