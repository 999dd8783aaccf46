import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// One SMTP session with a server: connect (every address the name resolves
/// to), greeting, EHLO, TLS (implicit or STARTTLS, never skipped when
/// configured), AUTH, then any number of transactions, each with a result
/// per recipient. Built on SwiftNIO and swift-nio-ssl (BoringSSL): no TLS
/// code of our own.
///
/// A failed step (lost connection, time-out, TLS, garbled reply) closes the
/// session for good; a transaction the server refuses (4xx/5xx) leaves it
/// usable. For synchronous callers see ``BlockingSMTPConnection``.
package actor SMTPConnection {
    /// The server, its security and time-outs.
    package let server: SMTPServer
    /// What the server offers (after STARTTLS: what it offers under TLS).
    package private(set) var extensions: SMTPExtensions = .none
    /// True when the session runs over TLS.
    package private(set) var isEncrypted = false
    /// False once the session failed or ended.
    package var isOpen: Bool { failure == nil && !quitted }

    private let channel: any Channel
    private let handler: NIOLoopBound<ReplyHandler>
    private var failure: SMTPError?
    private var quitted = false

    private init(server: SMTPServer, channel: any Channel, handler: NIOLoopBound<ReplyHandler>) {
        self.server = server
        self.channel = channel
        self.handler = handler
    }

    deinit { channel.close(promise: nil) }

    /// The actor runs on its channel's event loop: a reply read there resumes
    /// the session's code on the same thread, with no hop to another thread
    /// and back for every command.
    package nonisolated var unownedExecutor: UnownedSerialExecutor {
        channel.eventLoop.executor.asUnownedSerialExecutor()
    }

    /// The event loops every session runs on: one thread for the process
    /// (SMTP is one exchange at a time; the work is TLS and waiting).
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// The one event loop of ``group``.
    static var loop: any EventLoop { group.next() }

    // MARK: Opening

    /// Connects, reads the greeting, says EHLO, begins TLS as configured and
    /// authenticates when `credentials` are given. Nothing of a transaction
    /// is sent before all that succeeded.
    package static func open(_ server: SMTPServer, credentials: SMTPCredentials? = nil) async throws(SMTPError) -> SMTPConnection {
        if let name = server.heloName, !HeloName.isAcceptable(name) {
            // Not echoed: it may hold line breaks. A setting, so temporary (75), never a bounce.
            throw SMTPError(.protocolError, "the EHLO name given is not a domain name or an address literal")
        }
        let tlsContext: NIOSSLContext? = server.security == .none ? nil : try makeTLSContext(server)
        let peer = server.peer
        let implicitTLS = server.security == .tls
        let serverName = Self.serverName(server.host)
        // The handler is kept from the start: a TLS handshake may fail and
        // take the pipeline down before connect() returns, and its failure
        // is what the caller must hear.
        let made = Mutex<NIOLoopBound<ReplyHandler>?>(nil)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(ReplyHandler.amount(server.timeouts.connect))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if implicitTLS, let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tlsContext, serverHostname: serverName))
                    }
                    let handler = ReplyHandler(peer: peer, implicitTLS: implicitTLS, eventLoop: channel.eventLoop)
                    made.withLock { $0 = NIOLoopBound(handler, eventLoop: channel.eventLoop) }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let channel: any Channel
        // An address literal is the only address there is: connected to at
        // once, without a resolver thread (the filter's loopback re-injection).
        let connecting = if let address = try? SocketAddress(ipAddress: server.host, port: server.port) {
            bootstrap.connect(to: address)
        } else {
            bootstrap.connect(host: server.host, port: server.port)
        }
        do { channel = try await connecting.get() } catch {
            throw connectError(error, server)
        }
        guard let handler = made.withLock({ $0 }) else {
            channel.close(promise: nil)
            throw SMTPError(.connectionFailed, "the connection to \(peer) failed at once")
        }
        let connection = SMTPConnection(server: server, channel: channel, handler: handler)
        try await connection.begin(tlsContext: tlsContext, credentials: credentials)
        return connection
    }

    private func begin(tlsContext: NIOSSLContext?, credentials: SMTPCredentials?) async throws(SMTPError) {
        let greeting = try await expect("the greeting", within: server.timeouts.greeting)
        guard greeting.code == 220 else {
            throw end(.rejected(greeting, step: "the connection", peer: server.peer))
        }
        isEncrypted = server.security == .tls
        try await hello()
        if server.security == .startTLS, let tlsContext {
            guard extensions.has("STARTTLS") else {
                throw end(SMTPError(.tlsUnavailable, "\(server.peer) does not offer STARTTLS; nothing was sent"))
            }
            let reply = try await command("STARTTLS", step: "STARTTLS", within: server.timeouts.command,
                                          tls: (tlsContext, Self.serverName(server.host)))
            guard reply.code == 220 else {
                throw end(.rejected(reply, step: "STARTTLS", peer: server.peer, code: .tlsUnavailable))
            }
            isEncrypted = true
            extensions = .none          // forgotten: only what is said under TLS counts
            try await hello()
        }
        if let credentials { try await authenticate(credentials) }
    }

    private func hello() async throws(SMTPError) {
        let name = server.heloName ?? HeloName.local() ?? Self.addressLiteral(channel.localAddress)
        let reply = try await command("EHLO \(name)", step: "EHLO", within: server.timeouts.command)
        if reply.code == 250 {
            extensions = SMTPExtensions(ehloReply: reply)
            return
        }
        // A server that knows only HELO is fine for plain re-injection, never for TLS.
        guard reply.isPermanent, server.security == .none else {
            throw end(.rejected(reply, step: "EHLO", peer: server.peer))
        }
        let helo = try await command("HELO \(name)", step: "HELO", within: server.timeouts.command)
        guard helo.code == 250 else { throw end(.rejected(helo, step: "HELO", peer: server.peer)) }
        extensions = .none
    }

    // MARK: AUTH (RFC 4954)

    private func authenticate(_ credentials: SMTPCredentials) async throws(SMTPError) {
        guard isEncrypted || (server.allowPlaintextAuthOnLoopback && Self.isLoopback(channel.remoteAddress)) else {
            throw end(SMTPError(.authenticationFailed,
                                "refused to send the password to \(server.peer) over an unencrypted connection"))
        }
        let offered = extensions.authMechanisms
        guard let mechanism = credentials.mechanisms.first(where: { offered.contains($0.rawValue) }) else {
            throw end(SMTPError(.authenticationFailed, "\(server.peer) offers no AUTH mechanism we may use (it offers: "
                                + (offered.isEmpty ? "none" : offered.joined(separator: " ")) + ")"))
        }
        let user = Array(credentials.username.utf8)
        let timeout = server.timeouts.command
        var reply: SMTPReply
        switch mechanism {
        case .plain:
            let raw = SecretBuffer(capacity: user.count + credentials.secret.count + 2)
            raw.append(0); raw.append(contentsOf: user); raw.append(0); raw.append(credentials.secret)
            reply = try await secretCommand(prefix: "AUTH PLAIN ", raw.base64())
        case .login:
            reply = try await command("AUTH LOGIN", step: "AUTH", within: timeout)
            if reply.code == 334 {
                let name = SecretBuffer(capacity: user.count)
                name.append(contentsOf: user)
                reply = try await secretCommand(prefix: "", name.base64())
            }
            if reply.code == 334 {
                let password = SecretBuffer(capacity: credentials.secret.count)
                password.append(credentials.secret)
                reply = try await secretCommand(prefix: "", password.base64())
            }
        case .xoauth2:
            let raw = SecretBuffer(capacity: user.count + credentials.secret.count + 24)
            raw.append(contentsOf: Array("user=".utf8)); raw.append(contentsOf: user)
            raw.append(contentsOf: Array("\u{1}auth=Bearer ".utf8)); raw.append(credentials.secret)
            raw.append(contentsOf: [1, 1])
            reply = try await secretCommand(prefix: "AUTH XOAUTH2 ", raw.base64())
            // A 334 carries the error as JSON; an empty line ends the exchange (and brings the 5xx).
            if reply.code == 334 { reply = try await command("", step: "AUTH", within: timeout) }
        }
        guard reply.code == 235 else {
            throw end(SMTPError(.authenticationFailed, "\(server.peer) refused the login for "
                                + SMTPReply(code: 0, lines: [credentials.username]).text + " (AUTH \(mechanism.rawValue)): \(reply)",
                                reply: reply))
        }
    }

    /// Writes `prefix` + `secret` + CRLF and reads the reply; the line is zeroed after.
    private func secretCommand(prefix: String, _ secret: SecretBuffer) async throws(SMTPError) -> SMTPReply {
        let line = SecretBuffer(capacity: prefix.utf8.count + secret.bytes.count + 2)
        line.append(contentsOf: Array(prefix.utf8))
        secret.bytes.withUnsafeBytes { line.append(contentsOf: $0) }
        line.append(contentsOf: [13, 10])
        let timeout = server.timeouts.command
        let handler = self.handler
        return try await wait(channel.eventLoop.flatSubmit {
            let reply = handler.value.expect("AUTH", within: timeout)
            return handler.value.writeSecret(line, step: "AUTH", within: timeout).flatMap { reply }
        })
    }

    // MARK: Transactions

    /// Sends one message to `recipients` with envelope sender `from` ("" for
    /// the null sender). Returns each recipient's outcome; throws when the
    /// whole transaction failed — MAIL or DATA refused, the final reply not
    /// 2xx (``SMTPError/reply`` holds it), the message too large for the
    /// server's SIZE, or the session failed (then it is closed).
    ///
    /// The message may have LF or CRLF line ends; it is dot-stuffed here. It
    /// goes as it is when the server can take it; 8-bit content for a server
    /// without 8BITMIME, or a line longer than 998 octets, is re-encoded
    /// first (``MIME/TransportEncoding``). With PIPELINING, MAIL, every RCPT and DATA
    /// go in one write.
    ///
    /// With `allOrNothing`, a recipient refused (4xx or 5xx) means nobody gets
    /// the message: the transaction is abandoned before the message is sent
    /// (after a pipelined DATA's 354, by closing the connection without the
    /// final "."), and the refusal is thrown. For callers that retry a copy
    /// as a whole (the filter), so that a retry sends no copy twice.
    package func send(from sender: String, to recipients: [String], message: [UInt8],
                     allOrNothing: Bool = false) async throws(SMTPError) -> SMTPDelivery {
        if let failure { throw failure }
        guard !quitted else { throw SMTPError(.connectionFailed, "the session with \(server.peer) has ended") }
        guard !recipients.isEmpty else { throw SMTPError(.permanent, "a message needs at least one recipient") }
        for address in [sender] + recipients { try Self.checkPath(address) }
        let data = try MessageData.prepare(message, eightBitMIME: extensions.has("8BITMIME"),
                                           smtpUTF8: extensions.has("SMTPUTF8"), peer: server.peer)
        if let limit = extensions.maxSize, data.size > limit {
            throw SMTPError(.permanent, "the message is \(data.size) octets; \(server.peer) takes at most \(limit)")
        }
        let needsUTF8 = ([sender] + recipients).contains { $0.utf8.contains { $0 >= 0x80 } }
        if needsUTF8 && !extensions.has("SMTPUTF8") {
            throw SMTPError(.permanent, "an address is not ASCII and \(server.peer) does not offer SMTPUTF8")
        }
        var mail = "MAIL FROM:<\(sender)>"
        if extensions.has("SIZE") { mail += " SIZE=\(data.size)" }
        if data.eightBitBody && extensions.has("8BITMIME") { mail += " BODY=8BITMIME" }
        if (needsUTF8 || data.eightBitHeader) && extensions.has("SMTPUTF8") { mail += " SMTPUTF8" }
        let timeouts = server.timeouts

        // MAIL, RCPT…, DATA: at once with PIPELINING (RFC 2920), else one by one.
        var mailReply: SMTPReply
        var replies: [SMTPReply] = []
        var dataReply: SMTPReply?
        if extensions.has("PIPELINING") {
            var steps = [(mail, "MAIL FROM", timeouts.mail)]
            steps += recipients.map { ("RCPT TO:<\($0)>", "RCPT TO", timeouts.recipient) }
            steps.append(("DATA", "DATA", timeouts.dataInitiation))
            let all = try await pipelined(steps)
            mailReply = all[0]
            replies = Array(all[1...recipients.count])
            dataReply = all.last
        } else {
            mailReply = try await command(mail, step: "MAIL FROM", within: timeouts.mail)
            if mailReply.code == 250 {
                for recipient in recipients {
                    replies.append(try await command("RCPT TO:<\(recipient)>", step: "RCPT TO", within: timeouts.recipient))
                }
                // All or nothing: a refused recipient means no DATA at all (RSET keeps the session).
                if replies.contains(where: { $0.code / 100 == 2 }) && !(allOrNothing && replies.contains(where: { $0.code / 100 != 2 })) {
                    dataReply = try await command("DATA", step: "DATA", within: timeouts.dataInitiation)
                }
            }
        }
        guard mailReply.code == 250 else {
            try await abandon(dataReply)
            throw .rejected(mailReply, step: "MAIL FROM", peer: server.peer)
        }
        var results: [SMTPDelivery.Recipient] = []
        for (recipient, reply) in zip(recipients, replies) {
            switch reply.code / 100 {
            case 2: results.append(.init(address: recipient, status: .accepted(reply)))
            case 4: results.append(.init(address: recipient, status: .temporary(reply)))
            case 5: results.append(.init(address: recipient, status: .permanent(reply)))
            default: throw end(SMTPError(.protocolError, "\(server.peer) answered RCPT TO with \(reply)", reply: reply))
            }
        }
        if allOrNothing, let refused = results.first(where: { !$0.status.isAccepted }) {
            try await abandon(dataReply)
            let reply = refused.status.reply
            throw SMTPError(reply.isTemporary ? .temporary : .permanent, "\(server.peer) answered RCPT TO <"
                            + SMTPReply(code: 0, lines: [refused.address]).text + "> with \(reply); nothing was sent", reply: reply)
        }
        guard results.contains(where: { $0.status.isAccepted }) else {
            try await abandon(dataReply)
            return SMTPDelivery(recipients: results, finalReply: nil)
        }
        guard let dataReply, dataReply.code == 354 else {
            if let dataReply, dataReply.code >= 400 {
                try await abandon(nil)
                throw .rejected(dataReply, step: "DATA", peer: server.peer)
            }
            throw end(SMTPError(.protocolError, "\(server.peer) answered DATA with "
                                + (dataReply.map { "\($0)" } ?? "nothing"), reply: dataReply))
        }
        try await writeData(data.wire)
        let final = try await expect("the message (after the final \".\")", within: timeouts.finalReply)
        guard final.code / 100 == 2 else {
            if final.code < 400 { throw end(SMTPError(.protocolError, "\(server.peer) answered the message with \(final)", reply: final)) }
            throw .rejected(final, step: "the message", peer: server.peer)
        }
        return SMTPDelivery(recipients: results.map {
            $0.status.isAccepted ? SMTPDelivery.Recipient(address: $0.address, status: .accepted(final)) : $0
        }, finalReply: final)
    }

    /// RSET (RFC 5321 §4.1.1.5): checks that a session kept open between
    /// messages still works before it carries the next one. Any failure (the
    /// server closed an idle connection, say) throws and closes the session;
    /// nothing of a message was sent, so the caller may open a new one.
    package func reset() async throws(SMTPError) {
        if let failure { throw failure }
        guard !quitted else { throw SMTPError(.connectionFailed, "the session with \(server.peer) has ended") }
        let reply = try await command("RSET", step: "RSET", within: server.timeouts.command)
        guard reply.code == 250 else { throw end(.rejected(reply, step: "RSET", peer: server.peer)) }
    }

    /// Ends the session: QUIT is written and the connection closed without
    /// waiting for the answer (every message was taken already; a server
    /// that stalls on QUIT must not hold us).
    package func quit() async {
        guard !quitted else { return }
        quitted = true
        if failure == nil {
            let handler = self.handler
            let written = channel.eventLoop.flatSubmit {
                handler.value.write(Array("QUIT\r\n".utf8), step: "QUIT", within: 5)
            }
            _ = try? await written.get()
        }
        try? await channel.close().get()
    }

    // MARK: Steps

    /// Ends a transaction that will not carry a message, with RSET. After a
    /// 354 (pipelined DATA) only closing the connection without the final "."
    /// makes sure nothing is delivered: the session ends there.
    private func abandon(_ dataReply: SMTPReply?) async throws(SMTPError) {
        if let dataReply, dataReply.code == 354 {
            _ = end(SMTPError(.connectionFailed, "the session with \(server.peer) was closed to abandon a message"))
            return
        }
        let reply = try await command("RSET", step: "RSET", within: server.timeouts.command)
        guard reply.code == 250 else { throw end(.rejected(reply, step: "RSET", peer: server.peer)) }
    }

    private func writeData(_ wire: [UInt8]) async throws(SMTPError) {
        let block = 256 * 1024
        var offset = 0
        let handler = self.handler
        let timeout = server.timeouts.dataBlock
        while offset < wire.count {
            let piece = wire[offset..<min(offset + block, wire.count)]
            try await wait(channel.eventLoop.flatSubmit { handler.value.write(piece, step: "the message", within: timeout) })
            offset += piece.count
        }
    }

    /// Writes `line` and reads its reply. With `tls`, the line is STARTTLS
    /// and a 220 begins TLS with that context and server name.
    private func command(_ line: String, step: String, within timeout: TimeInterval,
                         tls: (NIOSSLContext, String?)? = nil) async throws(SMTPError) -> SMTPReply {
        let handler = self.handler
        let bytes = Array((line + "\r\n").utf8)
        let peer = server.peer
        let loop = channel.eventLoop
        return try await wait(loop.flatSubmit {
            var tlsHandler: NIOSSLClientHandler?
            if let (context, name) = tls {
                do { tlsHandler = try NIOSSLClientHandler(context: context, serverHostname: name) } catch {
                    return loop.makeFailedFuture(SMTPError(.tlsFailed, "cannot begin TLS with \(peer): \(error)"))
                }
            }
            let reply = handler.value.expect(step, within: timeout, tls: tlsHandler)
            return handler.value.write(bytes, step: step, within: timeout).flatMap { reply }
        })
    }

    /// Writes all `steps` in one go and reads their replies in order.
    private func pipelined(_ steps: [(line: String, step: String, timeout: TimeInterval)]) async throws(SMTPError) -> [SMTPReply] {
        let handler = self.handler
        let bytes = Array(steps.map { $0.line + "\r\n" }.joined().utf8)
        let timeouts = steps.map { ($0.step, $0.timeout) }
        let longest = steps.map(\.timeout).max() ?? 0
        let loop = channel.eventLoop
        return try await wait(loop.flatSubmit {
            let replies = timeouts.map { handler.value.expect($0.0, within: $0.1) }
            let written = handler.value.write(bytes, step: "MAIL FROM", within: longest)
            return written.flatMap { EventLoopFuture.whenAllSucceed(replies, on: loop) }
        })
    }

    private func expect(_ step: String, within timeout: TimeInterval) async throws(SMTPError) -> SMTPReply {
        let handler = self.handler
        return try await wait(channel.eventLoop.flatSubmit { handler.value.expect(step, within: timeout) })
    }

    /// Awaits `future`; a failure closes the session for good.
    private func wait<T: Sendable>(_ future: EventLoopFuture<T>) async throws(SMTPError) -> T {
        do { return try await future.get() } catch {
            throw end(error as? SMTPError ?? SMTPError(.connectionFailed, "the connection to \(server.peer) failed"))
        }
    }

    /// Records `error` as the session's end and closes the connection.
    private func end(_ error: SMTPError) -> SMTPError {
        if failure == nil { failure = error }
        let handler = self.handler
        channel.eventLoop.execute { handler.value.close(because: error) }
        return error
    }

    // MARK: Helpers

    private static func makeTLSContext(_ server: SMTPServer) throws(SMTPError) -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        if let caFile = server.caFile {
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw SMTPError(.tlsFailed, "cannot read the CA file \(caFile)")
            }
            configuration.trustRoots = .file(caFile)
        } else {
            configuration.trustRoots = .default
        }
        do { return try NIOSSLContext(configuration: configuration) } catch {
            throw SMTPError(.tlsFailed, "cannot load the certificate authorities"
                            + (server.caFile.map { " from \($0)" } ?? " of the system") + ": \(error)")
        }
    }

    /// SNI and the name checked against the certificate; nil for an IP
    /// literal, which swift-nio-ssl then checks against the certificate's IP
    /// addresses.
    static func serverName(_ host: String) -> String? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 { return nil }
        return host
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        switch address {
        case .v4(let v4): return UInt32(bigEndian: v4.address.sin_addr.s_addr) >> 24 == 127
        case .v6: return address?.ipAddress == "::1"
        default: return false
        }
    }

    static func addressLiteral(_ address: SocketAddress?) -> String {
        switch address {
        case .v4: return "[\(address?.ipAddress ?? "127.0.0.1")]"
        case .v6: return "[IPv6:\(address?.ipAddress ?? "::1")]"
        default: return "[127.0.0.1]"
        }
    }

    /// An address as a path in MAIL/RCPT: nothing that could end the command
    /// line or the path (CR, LF, NUL, controls, spaces, angle brackets).
    static func checkPath(_ address: String) throws(SMTPError) {
        guard address.utf8.count <= 512,
              !address.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") })
        else {
            throw SMTPError(.permanent, "\"\(SMTPReply(code: 0, lines: [address]).text)\" is not a valid SMTP address")
        }
    }

    private static func connectError(_ error: any Error, _ server: SMTPServer) -> SMTPError {
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty && (error.dnsAError != nil || error.dnsAAAAError != nil) {
                return SMTPError(.connectionFailed, "cannot resolve \(server.host)")
            }
            let reasons = Set(error.connectionErrors.map { Self.reason($0.error) }).sorted().joined(separator: ", ")
            return SMTPError(.connectionFailed, "cannot connect to \(server.peer) (\(reasons.isEmpty ? "no address" : reasons))")
        }
        if let error = error as? ChannelError, case .connectTimeout = error {
            return SMTPError(.timeout, "no address of \(server.peer) answered within \(ReplyHandler.seconds(server.timeouts.connect))")
        }
        if let error = error as? SMTPError { return error }
        return SMTPError(.connectionFailed, "cannot connect to \(server.peer) (\(reason(error)))")
    }

    private static func reason(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        return SMTPReply(code: 0, lines: [String(describing: error)]).text
    }
}
