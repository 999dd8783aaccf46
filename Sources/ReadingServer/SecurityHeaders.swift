import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Gives every answer the page's security headers, also those the framework
/// writes itself (404 for an unknown path, 405, 400 for a request it cannot
/// parse, 500): it sits in the channel, where every response head passes,
/// not in the router, which sees only the answers of its own routes. A
/// header an answer sets itself is left as it is.
final class SecurityHeadersHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        for field in ReadingServer.securityHeaders where head.headerFields[field.name] == nil {
            head.headerFields[field.name] = field.value
        }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
