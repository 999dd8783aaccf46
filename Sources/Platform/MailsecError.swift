import Glibc

/// The statuses mailsec exits with, from sysexits.h: the command line exits
/// with them and the mail filter answers the mail server with them.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// Done.
    case success = 0
    /// The answer is no (not verified, nothing imported), or GnuPG refused for good.
    case failure = 1
    /// `EX_USAGE`: the command line is wrong.
    case usage = 64
    /// `EX_DATAERR`: the message is not acceptable (a mail server bounces it).
    case dataError = 65
    /// `EX_NOINPUT`: an input file cannot be read.
    case noInput = 66
    /// `EX_UNAVAILABLE`: refused by policy, e.g. no usable key for a letter (a mail server bounces it).
    case refused = 69
    /// `EX_CANTCREAT`: an output cannot be made.
    case cannotCreate = 73
    /// `EX_TEMPFAIL`: try again later (agent unreachable, time-out); a mail server keeps the mail.
    case temporary = 75
    /// `EX_PROTOCOL`: the submission server refused recipients for good.
    case serverRefused = 76
    /// `EX_CONFIG`: the configuration has problems (`config check`).
    case config = 78
}

/// An error that knows what it means to whoever ran mailsec: the status to
/// exit with (or to answer the mail server with) and one line to print.
/// The command line and the mail filter both read these two properties, so
/// an error means the same wherever it surfaces; there is no second table.
public protocol MailsecError: Error, Sendable {
    /// The status a command exits with, and the filter answers the mail server with, for this error.
    var exitStatus: ExitStatus { get }
    /// One line naming the problem: never message content, passwords or key material.
    var safeDescription: String { get }
}

extension MailsecError where Self: CustomStringConvertible {
    /// The error's `description`: the house rule keeps message content,
    /// passwords and key material out of every error's text, so an error
    /// type that is described is described safely. A type whose
    /// `description` may hold more gives its own ``safeDescription``.
    public var safeDescription: String { description }
}

/// errno in a few plain words, for an error line: the common ones as a
/// person says them ("no such file", "permission denied"), the rest as the
/// C library words them, in lower case.
package func errnoReason(_ code: Int32) -> String {
    switch code {
    case ENOENT: "no such file"
    case EACCES, EPERM: "permission denied"
    case EISDIR: "is a directory"
    case ENOTDIR: "a part of the path is not a directory"
    default: String(cString: strerror(code)).lowercased()
    }
}
