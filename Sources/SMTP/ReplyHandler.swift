import Foundation
import NIOCore
import NIOSSL
import NIOTLS
import Platform

/// The one channel handler of an SMTP session: cuts what the server sends
/// into replies and hands each to the step waiting for it, in order (so
/// pipelined commands find their replies); runs each step's time-out; and
/// switches to TLS at exactly the byte after STARTTLS's 220.
///
/// Lives on its channel's event loop; every method must be called there.
/// Once anything fails, every waiting and later step fails the same way and
/// the channel is closed: a session in an unknown state is never used again.
final class ReplyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct Waiter {
        let promise: EventLoopPromise<SMTPReply>
        let step: String
        let timer: Scheduled<Void>?
        /// Set for STARTTLS: added in front of this handler on a 220.
        let tls: NIOSSLClientHandler?
    }

    private let peer: String
    private let eventLoop: any EventLoop
    private var context: ChannelHandlerContext?
    private var waiters = CircularBuffer<Waiter>()
    /// Replies that came before anyone asked (a 421 shutting down, for example).
    private var unasked = CircularBuffer<SMTPReply>()
    private var pending: [UInt8] = []
    private var parser = ReplyParser()
    private(set) var failure: SMTPError?
    /// A TLS handshake is under way (implicit TLS from the start, or after STARTTLS).
    private var handshaking: Bool
    /// The STARTTLS step, answered once the handshake completes.
    private var handshakeWaiter: (waiter: Waiter, reply: SMTPReply)?
    private(set) var isEncrypted = false

    init(peer: String, implicitTLS: Bool, eventLoop: any EventLoop) {
        self.peer = peer
        self.eventLoop = eventLoop
        self.handshaking = implicitTLS
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    // MARK: Steps

    /// The next reply, for `step` ("RCPT TO", "the greeting"), within `timeout`.
    /// With `tls`, the step is STARTTLS: a 220 switches the channel to TLS
    /// and the reply is given only once the handshake has succeeded.
    func expect(_ step: String, within timeout: Double, tls: NIOSSLClientHandler? = nil) -> EventLoopFuture<SMTPReply> {
        // A reply that came before the server closed the connection is still
        // its answer: a 250 to a message followed at once by a close (an idle
        // time-out, a restart) means the message was taken. Failing it would
        // make the caller send the message again.
        if tls == nil, waiters.isEmpty, handshakeWaiter == nil, !unasked.isEmpty {
            return eventLoop.makeSucceededFuture(unasked.removeFirst())
        }
        guard let context else {
            return failed(failure ?? SMTPError(.connectionFailed, "the connection to \(peer) is closed"))
        }
        let promise = context.eventLoop.makePromise(of: SMTPReply.self)
        if let failure {
            promise.fail(failure)
            return promise.futureResult
        }
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.amount(timeout)) { [self] in
            fail(SMTPError(.timeout, "\(peer) did not answer \(step) within \(Self.seconds(timeout))"))
        }
        waiters.append(Waiter(promise: promise, step: step, timer: timer, tls: tls))
        deliverUnasked()
        return promise.futureResult
    }

    /// Writes `bytes` and completes once they are with the kernel (or TLS), or
    /// fails the session when that takes longer than `timeout`.
    func write(_ bytes: some Collection<UInt8>, step: String, within timeout: Double) -> EventLoopFuture<Void> {
        guard let context, failure == nil else {
            return failed(failure ?? SMTPError(.connectionFailed, "the connection to \(peer) is closed"))
        }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        return write(buffer, step: step, within: timeout)
    }

    /// As ``write(_:step:within:)``, then zeroes the buffer's memory: for AUTH lines.
    func writeSecret(_ secret: SecretBuffer, step: String, within timeout: Double) -> EventLoopFuture<Void> {
        guard let context, failure == nil else {
            return failed(failure ?? SMTPError(.connectionFailed, "the connection to \(peer) is closed"))
        }
        var buffer = context.channel.allocator.buffer(capacity: secret.bytes.count)
        buffer.writeBytes(secret.bytes)
        let written = write(buffer, step: step, within: timeout)
        written.assumeIsolated().whenComplete { _ in
            // NIO has let go of the buffer by now, so this zeroes the memory
            // that was written (best effort: a copy would be zeroed instead).
            buffer.withUnsafeMutableReadableBytes { zeroize($0) }
        }
        return written
    }

    private func write(_ buffer: ByteBuffer, step: String, within timeout: Double) -> EventLoopFuture<Void> {
        guard let context else { return failed(SMTPError(.connectionFailed, "the connection to \(peer) is closed")) }
        let promise = context.eventLoop.makePromise(of: Void.self)
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.amount(timeout)) { [self] in
            fail(SMTPError(.timeout, "\(peer) did not take \(step) within \(Self.seconds(timeout))"))
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: promise)
        promise.futureResult.assumeIsolated().whenComplete { [self] result in
            timer.cancel()
            if case .failure(let error) = result { fail(map(error)) }
        }
        return promise.futureResult.assumeIsolated().flatMapErrorThrowing { [self] error in
            throw failure ?? map(error)
        }.nonisolated()
    }

    /// Ends the session: fails what still waits, closes the channel.
    func close(because error: SMTPError) { fail(error) }

    // MARK: Channel events

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard failure == nil else { return }
        if let bytes = buffer.readBytes(length: buffer.readableBytes) { pending += bytes }
        var start = 0
        defer { pending.removeFirst(min(start, pending.count)) }
        while failure == nil, let newline = pending[start...].firstIndex(of: 10) {
            var end = newline
            if end > start && pending[end - 1] == 13 { end -= 1 }
            let line = Array(pending[start..<end])
            start = newline + 1
            guard line.count <= ReplyParser.maxLine else { return fail(notSMTP("a reply line longer than \(ReplyParser.maxLine) octets")) }
            let reply: SMTPReply?
            do { reply = try parser.take(line) } catch {
                switch error {
                case .notSMTP(let what): return fail(notSMTP(what))
                case .tooLong: return fail(notSMTP("a reply of more than \(ReplyParser.maxLines) lines"))
                }
            }
            guard let reply else { continue }
            if let waiter = waiters.first, let tls = waiter.tls, reply.code == 220 {
                // STARTTLS (RFC 3207 §4 and CVE-2011-0411): whatever the
                // server sent after its 220 in plain text must not be read
                // as if it came through TLS. Refuse it; anything arriving
                // later goes through the TLS handler and fails the handshake.
                guard start == pending.count, !parser.isInReply else {
                    return fail(notSMTP("more text after its STARTTLS 220, before TLS began (refused: it could be injected)"))
                }
                waiters.removeFirst()
                do { try context.pipeline.syncOperations.addHandler(tls, position: .first) } catch {
                    waiter.timer?.cancel()
                    waiter.promise.fail(SMTPError(.tlsFailed, "cannot begin TLS with \(peer)"))
                    return fail(SMTPError(.tlsFailed, "cannot begin TLS with \(peer)"))
                }
                handshaking = true
                handshakeWaiter = (waiter, reply)   // its timer runs on through the handshake
                continue
            }
            unasked.append(reply)
            guard unasked.count <= 100 else { return fail(notSMTP("more than 100 replies nobody asked for")) }
            deliverUnasked()
        }
        if pending.count - start > ReplyParser.maxLine {
            fail(notSMTP("a reply line longer than \(ReplyParser.maxLine) octets"))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            handshaking = false
            isEncrypted = true
            if let (waiter, reply) = handshakeWaiter {
                handshakeWaiter = nil
                waiter.timer?.cancel()
                waiter.promise.succeed(reply)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(map(error))
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(handshaking
             ? SMTPError(.tlsFailed, "TLS with \(peer) failed: the server closed the connection during the handshake")
             : SMTPError(.connectionFailed, "\(peer) closed the connection"))
        context.fireChannelInactive()
    }

    // MARK: Helpers

    private func deliverUnasked() {
        while !unasked.isEmpty, let waiter = waiters.first {
            if waiter.tls != nil && unasked.first?.code == 220 {
                // A 220 read before STARTTLS was even asked for: not a STARTTLS answer.
                return fail(notSMTP("a 220 reply before STARTTLS was sent"))
            }
            waiters.removeFirst()
            waiter.timer?.cancel()
            waiter.promise.succeed(unasked.removeFirst())
        }
    }

    private func fail(_ error: SMTPError) {
        guard failure == nil else { return }
        failure = error
        if let (waiter, _) = handshakeWaiter {
            handshakeWaiter = nil
            waiter.timer?.cancel()
            waiter.promise.fail(error)
        }
        while let waiter = waiters.popFirst() {
            waiter.timer?.cancel()
            waiter.promise.fail(error)
        }
        context?.close(promise: nil)
    }

    private func notSMTP(_ what: String) -> SMTPError {
        SMTPError(.protocolError, "\(peer) sent something that is not SMTP: \(what)")
    }

    /// An error from the channel, in our words. Before the handshake has
    /// completed, any failure is TLS's (certificate, name, protocol).
    private func map(_ error: any Error) -> SMTPError {
        if let error = error as? SMTPError { return error }
        let what = SMTPReply(code: 0, lines: [String(describing: error)]).text
        if handshaking || error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
            return SMTPError(.tlsFailed, "TLS with \(peer) failed: \(what)")
        }
        return SMTPError(.connectionFailed, "the connection to \(peer) failed: \(what)")
    }

    /// At most about 146 years: a larger figure (a hostile `timeout`) must not
    /// trap converting to Int64 nanoseconds (a crash is no clear line, and the
    /// sendmail entry would leave a queued mail looking unsent).
    static func amount(_ seconds: Double) -> TimeAmount {
        .nanoseconds(Int64(min(max(0, seconds.isNaN ? 0 : seconds), 4.6e9) * 1e9))
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    private func failed<T>(_ error: SMTPError) -> EventLoopFuture<T> { eventLoop.makeFailedFuture(error) }
}
