import Foundation

/// systemd's readiness protocol (sd_notify(3)) for `Type=notify` units:
/// one datagram to the socket named in `$NOTIFY_SOCKET`. A few lines over a
/// Unix datagram socket rather than libsystemd: the protocol is this small
/// and stable, and the filter then needs no library that a machine without
/// systemd lacks. Without `$NOTIFY_SOCKET` nothing is sent.
enum SystemdNotify {
    /// Sends `state` ("READY=1", "STOPPING=1", "RELOADING=1"); false when
    /// there is no socket or it could not be reached (never fatal).
    @discardableResult
    static func send(_ state: String) -> Bool {
        guard let name = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !name.isEmpty,
              name.hasPrefix("/") || name.hasPrefix("@") else { return false }
        var path = Array(name.utf8)
        // "@name" is Linux's abstract namespace: a leading NUL byte.
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.enumerated() { buffer[index] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        return sent == message.count
    }
}
