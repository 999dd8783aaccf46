import Foundation

/// Only one process delivers from an outbox at a time: `send`, `sendmail`,
/// `outbox flush` and `outbox watch` each take this lock (flock on
/// `outbox.lock` in the store's folder) for a delivery run. So a recipient
/// found `sending` by the holder was left so by a process that died.
/// The kernel drops the lock when its holder exits, also on kill -9.
package final class DeliveryLock {
    private let fd: Int32

    /// Takes the lock, waiting up to `wait` seconds; nil when another process
    /// still holds it then.
    package init?(folder: String, wait: TimeInterval) throws(OutboxError) {
        let path = folder + "/outbox.lock"
        // A local until the lock is held: a class whose stored properties are all set
        // runs its deinit when its init returns nil, and that closed the descriptor a
        // second time, by then perhaps another thread's (a socket, the store).
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw OutboxError("cannot open \(path): \(String(cString: strerror(errno)))") }
        let deadline = Date().addingTimeInterval(wait)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
                close(fd)
                return nil
            }
            usleep(50_000)
        }
        self.fd = fd
    }

    deinit { close(fd) }  // closing drops the lock
}
