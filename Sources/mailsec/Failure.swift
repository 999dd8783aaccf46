import Compose
import ComposeStore
import Contacts
import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Outbox
import ReadingServer
import Sending
import Settings
import Store
import Policy

/// sysexits.h codes the tool exits with.
enum ExitStatus: Int32 {
    case success = 0
    /// The answer is no (not verified, nothing imported), or GnuPG refused for good.
    case failure = 1
    /// EX_USAGE
    case usage = 64
    /// EX_DATAERR: the message is not acceptable.
    case dataError = 65
    /// EX_NOINPUT: an input file cannot be read.
    case noInput = 66
    /// EX_UNAVAILABLE: refused by policy, e.g. no usable key for a letter.
    case refused = 69
    /// EX_CANTCREAT: an output cannot be made.
    case cannotCreate = 73
    /// EX_TEMPFAIL: try again later (agent unreachable, time-out).
    case temporary = 75
    /// EX_PROTOCOL: the submission server refused recipients for good.
    case serverRefused = 76
    /// EX_CONFIG: the configuration has problems (`config check`).
    case config = 78

    init(for error: any Error) {
        switch error {
        case let error as CommandFailure: self = error.status
        case let error as GPGMEError: self = error.isTemporary ? .temporary : .failure
        case is KeyringError, is KeyLossError, is KeyContinuityError: self = .temporary
        case is KeyChangeError: self = .refused  // until the person accepts the key
        case is EnvelopeAddressError: self = .dataError
        case let error as PolicyError: self = error.code == .conflictingOptions ? .usage : .dataError
        case let error as PipelineError:
            switch error.code {
            case .noRecipients, .noSender, .unredactable, .unreadable, .opaquePartRefused: self = .dataError
            case .refused, .noSigningKey, .signedMailNeedsRedaction: self = .refused
            case .notYetSupported, .noPublisher: self = .usage
            case .publishFailed: self = .temporary
            case .noticeNeedsLetter, .publishRefused: self = .refused
            default: self = .temporary  // a code added later: "try again" until it is placed
            }
        case is MIMEError, is LetterError, is UnsendableMessageError: self = .dataError
        case is PublishError, is StreamingError: self = .temporary
        case let error as SpanBlobError: self = error.code == .wrongPassword ? .refused : .dataError
        case is InvalidAddressError: self = .usage
        case is OutboxError, is LocalStoreError, is ConfigError, is PasswordError, is ContactsError: self = .temporary
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
    case let error as GPGMEError: error.description
    case let error as KeyringError: error.description
    case let error as KeyLossError: error.description
    case let error as KeyChangeError: error.description
    case let error as KeyContinuityError: error.description
    case let error as EnvelopeAddressError: error.description
    case let error as MIMEError: error.description
    case let error as LetterError: error.description
    case let error as InvalidAddressError: error.description
    case let error as PolicyError: error.description
    case let error as PipelineError: error.description
    case let error as PublishError: error.description
    case let error as SpanBlobError: error.description
    case let error as StoreError: error.description
    case let error as IntegrityError: error.description
    case let error as StreamingError: error.description
    case let error as OutboxError: error.description
    case let error as LocalStoreError: error.description
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

/// Reads a whole input file, or standard input for `-`. With `limit`, input
/// longer than that is refused as too large, and not read further. `what`
/// names the input when standard input is a terminal: then the command says
/// it is reading there rather than seem to hang.
func readInput(_ path: String, limit: Int? = nil, what: String = "the message") throws -> [UInt8] {
    let handle: FileHandle
    if path == "-" {
        handle = .standardInput
        announceTerminalInput(what)
    } else {
        // A named pipe or /dev/stdin too, but not a folder.
        var info = stat()
        guard stat(path, &info) == 0 else { throw cannotRead(path, errno) }
        guard (info.st_mode & S_IFMT) != S_IFDIR else { throw cannotRead(path, EISDIR) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw cannotRead(path, errno) }
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }
    defer { if path != "-" { try? handle.close() } }
    var bytes: [UInt8] = []
    while true {
        let chunk: Data?
        do { chunk = try handle.read(upToCount: 1 << 20) } catch {
            throw CommandFailure("cannot read \(path == "-" ? "standard input" : path)", status: .noInput)
        }
        guard let chunk, !chunk.isEmpty else { return bytes }  // the end; empty input is no error here
        bytes += chunk
        if let limit, bytes.count > limit { throw MIMEError(.tooLarge, limit: limit) }
    }
}

/// Reads a small file given by an option (a token, a password), with the
/// reason when it cannot be read.
func readSmallFile(_ path: String) throws -> [UInt8] {
    try readInput(path, limit: 1 << 16, what: "the file")
}

/// "cannot read PATH: REASON" (66), the reason in a few plain words.
func cannotRead(_ path: String, _ code: Int32) -> CommandFailure {
    CommandFailure("cannot read \(path): \(reason(code))", status: .noInput)
}

/// errno in a few plain words: the common ones as a person says them.
func reason(_ code: Int32) -> String {
    switch code {
    case ENOENT: "no such file"
    case EACCES, EPERM: "permission denied"
    case EISDIR: "is a directory"
    case ENOTDIR: "a part of the path is not a directory"
    default: String(cString: strerror(code)).lowercased()
    }
}

/// Says on standard error that `what` is read from standard input, when
/// that is a terminal (a person who forgot the file name would otherwise
/// see nothing happen).
func announceTerminalInput(_ what: String) {
    guard isatty(STDIN_FILENO) != 0 else { return }
    FileHandle.standardError.write(Data("mailsec: reading \(what) from standard input (end with Ctrl-D)\n".utf8))
}

/// Writes `bytes` to the file at `path`, or standard output for nil or `-`.
/// A new file is private (0600) from the moment it exists; it is never
/// written through a symbolic link.
func writeOutput(_ bytes: [UInt8], to path: String?) throws {
    try writeOutput(to: path) { try bytes.withUnsafeBytes($0) }
}

/// Output given in pieces: it calls its argument with each piece in turn.
typealias Pieces = ((UnsafeRawBufferPointer) throws -> Void) throws -> Void

/// Like ``writeOutput(_:to:)`` for output given in pieces, which is never
/// held whole (a large letter, say).
func writeOutput(to path: String?, _ pieces: Pieces) throws {
    let fd: Int32
    if let path, path != "-" {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CommandFailure("cannot write \(path): \(reason(errno))", status: .cannotCreate) }
        fchmod(fd, 0o600)
    } else {
        fd = STDOUT_FILENO
    }
    defer { if fd != STDOUT_FILENO { close(fd) } }
    try pieces { piece in
        var offset = 0
        while offset < piece.count {
            let written = write(fd, piece.baseAddress! + offset, piece.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw CommandFailure("cannot write \(path ?? "standard output"): \(reason(errno))", status: .cannotCreate)
            }
            offset += written
        }
    }
}

/// Pretty, sorted JSON with a final newline.
func encodeJSON<T: Encodable>(_ value: T) throws -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return Array(try encoder.encode(value)) + [10]
}

/// Writes `files` into the folder `path` all at once: they are written into a
/// private folder beside it, which then takes its name. A failure leaves nothing.
func writeFolder(_ path: String, _ files: [(String, Pieces)]) throws {
    let target = URL(fileURLWithPath: path).standardizedFileURL
    var template = Array((target.deletingLastPathComponent().path + "/.mailsec-partial.XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else {
        let parent = target.deletingLastPathComponent().path
        let why = switch errno {
        case ENOENT: "the folder \(parent) does not exist"
        case ENOTDIR: "\(parent) is not a folder"
        default: reason(errno) + " in \(parent)"
        }
        throw CommandFailure("cannot create \(path): \(why)", status: .cannotCreate)
    }
    let staging = String(cString: made)
    do {
        for (name, pieces) in files { try writeOutput(to: staging + "/" + name, pieces) }
        rmdir(target.path)  // an empty folder given as --out
        guard rename(staging, target.path) == 0 else {
            throw CommandFailure("cannot create \(path): \(reason(errno))", status: .cannotCreate)
        }
    } catch {
        try? FileManager.default.removeItem(atPath: staging)
        throw error
    }
}
