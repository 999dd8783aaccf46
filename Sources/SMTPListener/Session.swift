import NIOCore

/// One SMTP or LMTP session: the channel's only handler. Cuts the input into
/// command lines (or DATA content), answers each in order, calls the mail
/// handler after the final "." and reads nothing more until it answers.
///
/// The channel runs with autoRead off: the session asks for input itself,
/// only when it is ready for it (not while a handler runs, not while the
/// client leaves our replies unread), so no input piles up in memory.
///
/// Lives on its channel's event loop; every method must be called there.
final class Session: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase {
        case commands
        case data
        /// The handler runs; input waits in `pending`.
        case handling
        /// A final reply is written; the channel closes.
        case closing
    }

    /// RFC 5321 4.5.3.1.4: a command line is at most 512 octets with its CRLF.
    static let maxLine = 512
    /// As Postfix's smtpd_hard_error_limit: a client that keeps erring is let go.
    static let maxErrors = 20

    private let core: ListenerCore
    private var settings: ListenerSettings { core.settings }
    private var context: ChannelHandlerContext?
    private var id: ObjectIdentifier { ObjectIdentifier(self) }
    private var client = "?"

    private var phase = Phase.commands
    private var pending: ByteBuffer?
    /// A command line over the limit: its rest is skipped up to its LF.
    private var skippingLongLine = false
    private var errors = 0
    /// Whole command lines read so far (the first one ends the first-command time).
    private var commands = 0
    private var greeted: Command.Hello?
    private var sender: String?
    private var recipients: [String] = []
    private var reader: DataReader?
    private var timer: Scheduled<Void>?
    private var registered = false
    private var draining = false
    private var busy = false
    private var inactive = false
    /// A mail answered 250 whose reply is not known to have reached the client yet.
    private var unconfirmed: ReceivedMail?

    init(core: ListenerCore) {
        self.core = core
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelActive(context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress ?? "?"
        if let remote = context.channel.remoteAddress {
            client = "\(address):\(remote.port ?? 0)"
        }
        switch core.register(NIOLoopBound(self, eventLoop: context.eventLoop), id: id, address: address) {
        case nil:
            break
        case .draining:
            finish("421 4.3.2 \(settings.greetingName) Service shutting down, try again later")
            return
        case .tooMany:
            core.log("listener: \(client): over \(settings.maxConnections) connections, refused")
            finish("421 4.7.0 \(settings.greetingName) Error: too many connections, try again later")
            return
        case .tooManyFromAddress:
            core.log("listener: \(client): over \(settings.maxConnectionsPerAddress) connections from \(address), refused")
            finish("421 4.7.0 \(settings.greetingName) Error: too many connections from your address, try again later")
            return
        }
        registered = true
        let protocolName = settings.dialect == .lmtp ? "LMTP" : "ESMTP"
        send("220 \(settings.greetingName) \(protocolName) mailsec")
        context.flush()
        armTimer()
        readIfReady()
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
        confirm(reached: false)
        if phase == .data { core.log("listener: \(client): connection lost during DATA") }
        timer?.cancel()
        timer = nil
        reader?.discard()
        reader = nil
        if phase != .handling { phase = .closing }
        // A running handler keeps its mail; its answer goes nowhere.
        if registered { core.unregister(id) }
        registered = false
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard phase != .closing else { return }
        if pending == nil {
            pending = bytes
        } else {
            // Only a partial command line (or input held while a handler runs) is
            // left: drop what was read so the buffer does not grow with the session.
            pending!.discardReadBytes()
            pending!.writeBuffer(&bytes)
        }
        // DATA's clock restarts with every chunk; the idle clock only with a
        // whole command, so a client trickling a byte at a time is still cut off.
        if phase == .data { armTimer() }
        process()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        readIfReady()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        readIfReady()
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Connection reset and the like: the session is over.
        phase = phase == .handling ? .handling : .closing
        context.close(promise: nil)
    }

    // MARK: Input

    /// Asks for more input when the session can take it.
    private func readIfReady() {
        guard let context, phase == .commands || phase == .data, context.channel.isWritable else { return }
        context.read()
    }

    /// Works through the input held, in order, until it runs out or the session
    /// must wait (a handler runs) or ends.
    private func process() {
        while var buffer = pending, buffer.readableBytes > 0 {
            switch phase {
            case .handling, .closing:
                return
            case .data:
                let (used, ended) = buffer.withUnsafeReadableBytes { reader!.consume($0) }
                buffer.moveReaderIndex(forwardBy: used)
                pending = buffer
                if ended { endOfData() }
            case .commands:
                let lineEnd = buffer.withUnsafeReadableBytes { $0.firstIndex(of: 10) }
                if skippingLongLine {
                    guard let lineEnd else { pending = nil; return }
                    buffer.moveReaderIndex(forwardBy: lineEnd + 1)
                    pending = buffer
                    skippingLongLine = false
                    continue
                }
                guard let lineEnd else {
                    if buffer.readableBytes >= Self.maxLine {
                        // Not ended within the limit: answered now, the rest skipped.
                        pending = nil
                        skippingLongLine = true
                        protocolError("500 5.5.2 Error: command line too long", "command line over \(Self.maxLine) octets")
                    }
                    return
                }
                var line = buffer.readBytes(length: lineEnd + 1)!
                pending = buffer
                // A line after the reply to a mail: the client read that reply.
                confirm(reached: true)
                line.removeLast()
                if line.last == 13 { line.removeLast() }
                if line.count + 2 > Self.maxLine {
                    protocolError("500 5.5.2 Error: command line too long", "command line over \(Self.maxLine) octets")
                } else {
                    execute(Command.parse(line))
                }
                // Draining: a session whose mail is over (RSET, HELO) ends now.
                if draining && !busy && phase == .commands {
                    finish("421 4.3.2 \(settings.greetingName) Service shutting down, try again later")
                }
                if phase == .commands { armTimer() }
            }
        }
        pending = nil
    }

    // MARK: Commands

    private func execute(_ command: Command) {
        commands += 1
        switch command {
        case .hello(let kind, _):
            switch (kind, settings.dialect) {
            case (.lhlo, .smtp):
                protocolError("500 5.5.2 Error: command not recognized", "LHLO on SMTP")
                return
            case (.helo, .lmtp), (.ehlo, .lmtp):
                protocolError("500 5.5.1 Error: this is LMTP, send LHLO", "HELO/EHLO on LMTP")
                return
            default: break
            }
            resetTransaction()
            greeted = kind
            if kind == .helo {
                send("250 \(settings.greetingName)")
            } else {
                send("250-\(settings.greetingName)")
                send("250-PIPELINING")
                send("250-SIZE \(settings.maxMessageSize)")
                send("250-8BITMIME")
                send("250-SMTPUTF8")
                send("250 ENHANCEDSTATUSCODES")
            }
        case .mail(let address, let parameters):
            guard greeted != nil else {
                return protocolError("503 5.5.1 Error: send \(settings.dialect == .lmtp ? "LHLO" : "HELO/EHLO") first", "MAIL before HELO")
            }
            guard sender == nil else { return protocolError("503 5.5.1 Error: nested MAIL command", "nested MAIL") }
            if draining { return finish("421 4.3.2 \(settings.greetingName) Service shutting down, try again later") }
            for parameter in parameters {
                switch (parameter.keyword, parameter.value?.uppercased()) {
                case ("SIZE", let value?):
                    guard let size = Int(value), value.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                        return protocolError("501 5.5.4 Bad SIZE parameter", "bad SIZE")
                    }
                    if size > settings.maxMessageSize {
                        core.log("listener: \(client): SIZE \(size) over \(settings.maxMessageSize), refused")
                        return send("552 5.3.4 Message size exceeds fixed limit")
                    }
                case ("BODY", "7BIT"?), ("BODY", "8BITMIME"?), ("SMTPUTF8", nil):
                    break
                default:
                    return protocolError("555 5.5.4 Unsupported option: \(parameter.keyword)", "unsupported MAIL parameter")
                }
            }
            guard validAddress(address) else { return protocolError("501 5.1.7 Bad sender address syntax", "bad sender") }
            sender = address
            setBusy(true)
            send("250 2.1.0 Ok")
        case .rcpt(let address, let parameters):
            guard sender != nil else { return protocolError("503 5.5.1 Error: need MAIL command", "RCPT before MAIL") }
            guard parameters.isEmpty else {
                return protocolError("555 5.5.4 Unsupported option: \(parameters[0].keyword)", "unsupported RCPT parameter")
            }
            guard validAddress(address) else { return protocolError("501 5.1.3 Bad recipient address syntax", "bad recipient") }
            guard recipients.count < settings.maxRecipients else {
                return send("452 4.5.3 Error: too many recipients")
            }
            recipients.append(address)
            send("250 2.1.5 Ok")
        case .data:
            guard sender != nil else { return protocolError("503 5.5.1 Error: need MAIL command", "DATA before MAIL") }
            guard !recipients.isEmpty else { return protocolError("503 5.5.1 Error: need RCPT command", "DATA before RCPT") }
            reader = DataReader(maxSize: settings.maxMessageSize, memoryLimit: settings.memoryLimit,
                                spoolDirectory: settings.spoolDirectory)
            phase = .data
            armTimer()
            send("354 End data with <CR><LF>.<CR><LF>")
        case .rset:
            resetTransaction()
            send("250 2.0.0 Ok")
        case .noop:
            send("250 2.0.0 Ok")
        case .quit:
            finish("221 2.0.0 Bye")
        case .vrfy:
            send("252 2.0.0 Cannot VRFY; send mail and it will be tried")
        case .expn:
            protocolError("502 5.5.1 Error: EXPN not implemented", "EXPN")
        case .help:
            send("214 2.0.0 Commands: \(settings.dialect == .lmtp ? "LHLO" : "HELO EHLO") MAIL RCPT DATA RSET NOOP QUIT VRFY HELP")
        case .unknown:
            protocolError("500 5.5.2 Error: command not recognized", "unknown command")
        case .invalid(let reply):
            protocolError(reply, "syntax error")
        }
    }

    /// An address as the envelope may carry it: not empty unless the null
    /// sender, at most 320 octets (64 + "@" + 255).
    private func validAddress(_ address: String) -> Bool {
        address.utf8.count <= 320
    }

    private func resetTransaction() {
        sender = nil
        recipients = []
        reader?.discard()
        reader = nil
        setBusy(false)
    }

    private func setBusy(_ value: Bool) {
        guard value != busy else { return }
        busy = value
        if registered { core.setBusy(id, value) }
    }

    // MARK: The end of a mail

    private func endOfData() {
        guard var reader, let sender else { return }
        self.reader = nil
        let recipients = self.recipients
        timer?.cancel()
        if reader.tooBig {
            core.log("listener: \(client): message over \(settings.maxMessageSize) octets, refused")
            return answer(recipients, "552 5.3.4 Error: message too large")
        }
        if let failure = reader.spoolError {
            core.log("listener: \(client): \(failure.description)")
            return answer(recipients, "451 4.3.0 Error: cannot keep the mail, try again later")
        }
        guard let content = reader.take(), let context else { return }
        let mail = ReceivedMail(sender: sender, recipients: recipients, size: reader.size, client: client, content: content)
        phase = .handling
        context.flush()
        core.handlerStarted()
        let session = NIOLoopBound(self, eventLoop: context.eventLoop)
        let handler = core.handler
        // At the priority of the task that started the listener: an event loop's
        // thread has none of its own, and a task made here would get the default.
        Task(priority: core.state.withLock { $0.handlerPriority }) {
            let verdict = await handler.handle(mail)
            session.eventLoop.execute { session.value.handled(verdict, mail: mail) }
        }
    }

    private func handled(_ verdict: Verdict, mail: ReceivedMail) {
        core.handlerEnded()
        let accepted = if case .accepted = verdict { true } else { false }
        guard phase == .handling, !inactive, context != nil else {
            phase = .closing
            if accepted { core.handler.replied(to: mail, reached: false) }
            return
        }
        answer(mail.recipients, verdict.replyLine)
        guard phase == .commands else {
            if accepted { core.handler.replied(to: mail, reached: false) }
            return
        }
        // Input that came before the reply (pipelined) proves nothing about it.
        process()
        if accepted {
            if phase == .closing || inactive {
                core.handler.replied(to: mail, reached: false)
            } else {
                confirm(reached: false)  // a reply before it that was never confirmed
                unconfirmed = mail
            }
        }
        context?.flush()
        readIfReady()
    }

    /// The reply to a mail (LMTP: one per recipient), the transaction over.
    private func answer(_ recipients: [String], _ line: String) {
        let count = settings.dialect == .lmtp ? recipients.count : 1
        for _ in 0..<count { send(line) }
        phase = .commands
        resetTransaction()
        if draining {
            finish("421 4.3.2 \(settings.greetingName) Service shutting down, try again later")
        } else {
            armTimer()
        }
    }

    // MARK: Output and ending

    private func send(_ line: String) {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: line.utf8.count + 2)
        buffer.writeString(line)
        buffer.writeStaticString("\r\n")
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    /// A reply to a client's mistake, and one log line; too many end the session.
    private func protocolError(_ reply: String, _ what: String) {
        errors += 1
        core.log("listener: \(client): \(what)")
        if errors >= Self.maxErrors {
            finish("421 4.7.0 \(settings.greetingName) Error: too many errors")
        } else {
            send(reply)
        }
    }

    /// Tells the handler whether the reply to the mail answered 250 reached the client.
    private func confirm(reached: Bool) {
        guard let mail = unconfirmed else { return }
        unconfirmed = nil
        core.handler.replied(to: mail, reached: reached)
    }

    /// Writes a last reply and closes.
    private func finish(_ line: String) {
        guard let context, phase != .closing else { return }
        // Ended by us (a time-out, a drain): whether the client read the last reply is not known.
        confirm(reached: false)
        send(line)
        phase = .closing
        timer?.cancel()
        timer = nil
        reader?.discard()
        pending = nil
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    private func armTimer() {
        guard let context else { return }
        timer?.cancel()
        // Before its first whole command a session has the shorter time (a
        // client that connects and says nothing, or trickles bytes, holds a
        // slot for no longer); it starts with the greeting.
        let timeout = phase == .data ? settings.dataTimeout
            : commands == 0 ? min(settings.firstCommandTimeout, settings.idleTimeout) : settings.idleTimeout
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(timeout)) { [self] in
            guard phase == .commands || phase == .data else { return }
            core.log("listener: \(client): time-out \(phase == .data ? "during DATA" : commands == 0 ? "waiting for the first command" : "waiting for a command")")
            finish("421 4.4.2 \(settings.greetingName) Error: timeout exceeded")
        }
    }

    // MARK: Drain (called by the listener, on this loop)

    /// Stop taking mail: an idle session ends now, a busy one after its mail's answer.
    func beginDrain() {
        draining = true
        if !busy && phase != .handling { finish("421 4.3.2 \(settings.greetingName) Service shutting down, try again later") }
    }

    /// The drain's time is up: end the session whatever it is doing.
    func cutOff() {
        if phase == .handling { phase = .commands }   // its answer will go nowhere
        finish("421 4.3.2 \(settings.greetingName) Service shutting down, try again later")
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
                            ? Int64.max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
