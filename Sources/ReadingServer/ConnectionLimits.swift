import NIOCore
import NIOHTTPTypes

/// Limits on client connections, so that slow or idle clients cannot hold
/// the server: `mailsec serve` once kept 400 slow clients open for ever.
public struct ConnectionLimits: Sendable, Hashable {
    /// Time a client has to send a whole request (header and body), counted
    /// from the connection's start or the end of the previous response. A
    /// client dripping a byte at a time is cut off when it is over.
    public var requestTimeout: Duration
    /// Time a connection may sit with nothing read or written.
    public var idleTimeout: Duration
    /// Connections served at once; more wait in the listen queue until one closes.
    public var maximumConnections: Int

    /// Limits; the defaults are ``standard``.
    public init(requestTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(30), maximumConnections: Int = 256) {
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
    }

    /// The defaults: 10 s for a request, 30 s idle, 256 connections.
    public static let standard = ConnectionLimits()
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
