internal import CPlatform
import Glibc

// @unchecked Sendable: the socket is only polled and drained, by one waiter
// at a time (``Submission/watch(interval:report:)``); it is closed in deinit.
/// Tells when the network may have changed: links going up or down,
/// addresses and routes added or removed (a NETLINK_ROUTE socket joined to
/// the link, address and route groups). Where netlink cannot be had, only
/// the time-out of ``wait(timeout:)`` wakes the caller (polling).
package final class NetworkEvents: @unchecked Sendable {
    private let fd: Int32

    /// Opens the netlink socket; `isAvailable` is false when it could not be.
    package init() {
        fd = mailsec_netlink_route_socket()
    }

    deinit { if fd >= 0 { close(fd) } }

    /// True when netlink events arrive; false means polling only.
    package var isAvailable: Bool { fd >= 0 }

    /// Waits for a change or `timeout` seconds; true when a change came. The
    /// messages themselves are drained, not read: any change means "look again".
    package func wait(timeout: Double) -> Bool {
        guard fd >= 0 else {
            let seconds = min(max(0, timeout), 86_400)
            var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
            var remaining = timespec()
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
            return false
        }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Int32(min(max(0, timeout), 86_400) * 1000))  // no Int32 trap
        guard ready == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 16384)
        while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
        return true
    }
}
