import ArgumentParser
import Compose
import ComposeStore
import Contacts
import Foundation
import Incoming
import MIME
import OpenPGP
import Outbox
import PartialEncryption
import Pipeline
import Platform
import Policy
import ReadingServer
import Sending
import Settings
import Store

/// sysexits.h codes the tool exits with (Platform's, so that the filter reads the same).
typealias ExitStatus = Platform.ExitStatus

extension ExitStatus {
    /// The status for `error`: a ``MailsecError``'s own, the others' from the table below until each carries its own.
    init(for error: any Error) {
        switch error {
        case let error as CommandFailure: self = error.status
        case let error as any MailsecError: self = error.exitStatus
        case let error as GPGMEError: self = error.isTemporary ? .temporary : .failure
        case is KeyringError: self = .temporary
        case is KeyChangeError: self = .refused  // until the person accepts the key (the filter defers: see KeyChangeError)
        case let error as PolicyError: self = error.code == .conflictingOptions ? .usage : .dataError
        case is MIMEError, is LetterError, is UnsendableMessageError: self = .dataError
        case is PublishError: self = .temporary
        case let error as SpanBlobError: self = error.code == .wrongPassword ? .refused : .dataError
        case is InvalidAddressError: self = .usage
        case is OutboxError, is ConfigError, is PasswordError, is ContactsError: self = .temporary
        case let error as ComposeError:
            switch error.code {
            case .downgrade, .notSendable: self = .refused
            case .badAddress, .badRange, .badOriginal: self = .dataError
            case .sendInProgress, .finished, .noDraftStore: self = .temporary
            }
        case is DraftSeal.Failure: self = .refused
        case is SealedDraftStore.Failure: self = .temporary
        default: self = .temporary  // unexpected: the sysexits answer is "try again"
        }
    }

    /// An `EXIT STATUS` section for a command's help, one status per entry,
    /// wrapped here (under 78 columns, continuations indented) so that the
    /// help's own wrapping leaves it alone.
    static func section(_ rows: [(ExitStatus, String)]) -> String {
        var lines = ["EXIT STATUS:"]
        for (status, meaning) in rows {
            let code = String(status.rawValue)
            var line = "  " + code + String(repeating: " ", count: 4 - code.count)
            var empty = true
            for word in meaning.split(separator: " ") {
                if !empty && line.count + 1 + word.count > 76 {
                    lines.append(line)
                    line = String(repeating: " ", count: 6)
                    empty = true
                }
                line += (empty ? "" : " ") + word
                empty = false
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

/// A failure of a command, with the line to print and the status to exit with.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    let status: ExitStatus

    init(_ description: String, status: ExitStatus) {
        self.description = description
        self.status = status
    }
}

/// The one line printed for `error`. Only our own error types are described:
/// they keep message content out of their text. Anything else is named by type.
func describe(_ error: any Error) -> String {
    switch error {
    case let error as CommandFailure: error.description
    case let error as any MailsecError: error.safeDescription
    case let error as GPGMEError: error.description
    case let error as KeyringError: error.description
    case let error as KeyChangeError: error.description
    case let error as MIMEError: error.description
    case let error as LetterError: error.description
    case let error as InvalidAddressError: error.description
    case let error as PolicyError: error.description
    case let error as PublishError: error.description
    case let error as SpanBlobError: error.description
    case let error as IntegrityError: error.description
    case let error as OutboxError: error.description
    case let error as ConfigError: error.description
    case let error as PasswordError: error.description
    case let error as ContactsError: error.description
    case let error as ComposeError: error.description
    case let error as DraftSeal.Failure: error.description
    case let error as SealedDraftStore.Failure: error.description
    default: "unexpected error (\(type(of: error)))"
    }
}

/// `text` as one line for a terminal or a log: control characters (C0, DEL,
/// C1) and the Unicode line and paragraph separators shown escaped as
/// `\u{…}`, a line feed as a space. Whatever a hostile header, a server's
/// reply or a path in config.toml holds, it cannot split the line or drive
/// the terminal.
func oneLine(_ text: String) -> String {
    var printable = ""
    for scalar in text.unicodeScalars {
        if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}" {
            printable += scalar == "\n" ? " " : "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            printable.unicodeScalars.append(scalar)
        }
    }
    return printable
}

/// Writes `mailsec: MESSAGE` on stderr as one line (``oneLine(_:)``).
func warn(_ message: String) {
    FileHandle.standardError.write(Data(("mailsec: " + oneLine(message) + "\n").utf8))
}

/// Prints `mailsec: MESSAGE` on stderr and exits. Control characters (from
/// an address in a hostile header, say) are shown escaped, never sent to the terminal.
func fail(_ message: String, status: ExitStatus) -> Never {
    warn(message)
    exit(status.rawValue)
}

/// Prints each warning as one line on standard error.
func warn(_ warnings: [String]) {
    for warning in warnings {
        let line = "warning: " + warning.map { $0 == "\n" || $0 == "\r" ? " " : String($0) }.joined() + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
