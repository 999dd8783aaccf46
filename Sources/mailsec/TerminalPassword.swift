import ArgumentParser
import Foundation
import MIME
import Outbox
import Sending
import Settings
import Store

/// How `send` and `compose` show a reading page's password when it may not
/// be mailed in clear and the sender has no key for a letter: on the
/// person's terminal (`/dev/tty`), never on standard output or error, which
/// may be a log. Nil when the process has no terminal: the mail is then
/// refused before anything is published (`[reading] notice`).
func terminalPasswordDisplay() -> (@Sendable (String) throws -> Void)? {
    let probe = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
    guard probe >= 0 else { return nil }
    close(probe)
    return { text in
        let failure = CommandFailure("the password could not be shown on the terminal; nothing was sent", status: .temporary)
        let fd = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw failure }
        defer { close(fd) }
        var rest = Array(("\n" + text).utf8)[...]
        while !rest.isEmpty {
            let written = rest.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw failure }
            rest = rest.dropFirst(written)
        }
    }
}
