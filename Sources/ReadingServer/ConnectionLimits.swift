import NIOCore
import NIOHTTPTypes
import Synchronization

/// Limits on client connections, so that slow or idle clients cannot hold
/// the server: `mailsec serve` once kept 400 slow clients open for ever.
package struct ConnectionLimits: Sendable, Hashable {
    /// Time a client has to send a whole request (header and body), counted
    /// from the connection's start or the end of the previous response. A
    /// client dripping a byte at a time is cut off when it is over.
    package var requestTimeout: Duration
    /// Time a connection may sit with nothing read or written.
    package var idleTimeout: Duration
    /// Connections served at once; more wait in the listen queue until one closes.
    package var maximumConnections: Int
    /// Connections at once from one client address; one more is closed at
    /// once, so that one client's slow connections cannot fill
    /// ``maximumConnections`` and make everybody else wait.
    package var maximumPerAddress: Int

    /// Limits; the defaults are ``standard``.
    package init(requestTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(30), maximumConnections: Int = 256,
                maximumPerAddress: Int = 32) {
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
        self.maximumPerAddress = maximumPerAddress
    }

    /// The defaults: 10 s for a request, 30 s idle, 256 connections, 32 from one address.
    package static let standard = ConnectionLimits()
}

/// The connections open per client address, shared by all connections of a server.
final class AddressCounts: Sendable {
    let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) { self.limit = limit }

    /// Counts one more from `address`; false (and not counted) when it has `limit` already.
    func admit(_ address: String) -> Bool {
        counts.withLock { counts in
            guard counts[address, default: 0] < limit else { return false }
            counts[address, default: 0] += 1
            return true
        }
    }

    /// The connections counted now, from every address (for the metrics).
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }

    /// One fewer from `address`.
    func release(_ address: String) {
        counts.withLock { counts in
            counts[address, default: 1] -= 1
            if counts[address] == 0 { counts[address] = nil }
        }
    }
}

/// Closes a connection at once when its client address has
/// ``ConnectionLimits/maximumPerAddress`` open already; counts it otherwise,
/// until it closes.
final class AddressCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let counts: AddressCounts
    private var counted: String?
    private var checked = false

    init(_ counts: AddressCounts) { self.counts = counts }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { check(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        check(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { release() }

    private func check(_ context: ChannelHandlerContext) {
        guard !checked else { return }
        checked = true
        let address = context.channel.remoteAddress?.ipAddress ?? "?"
        if counts.admit(address) { counted = address } else { context.close(promise: nil) }
    }

    private func release() {
        if let counted { counts.release(counted) }
        counted = nil
    }
}

/// Closes the connection when a request has not arrived in full within the
/// limit. Armed when the connection starts and after each response; disarmed
/// by the end of a request. (An idle-read timer alone would be reset by
/// every dripped byte.)
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limit: TimeAmount
    private var timer: Scheduled<Void>?

    init(limit: Duration) {
        self.limit = .nanoseconds(Int64(limit.components.seconds) * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000)
    }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context) }
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: limit) { bound.value.close(promise: nil) }
    }
}
