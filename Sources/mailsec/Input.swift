import ArgumentParser
import Compose
import ComposeStore
import Contacts
import Foundation
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
    CommandFailure("cannot read \(path): \(errnoReason(code))", status: .noInput)
}

/// Says on standard error that `what` is read from standard input, when
/// that is a terminal (a person who forgot the file name would otherwise
/// see nothing happen).
func announceTerminalInput(_ what: String) {
    guard isatty(STDIN_FILENO) != 0 else { return }
    FileHandle.standardError.write(Data("mailsec: reading \(what) from standard input (end with Ctrl-D)\n".utf8))
}

/// Reads and parses the message argument (`-` or a file). A regular file
/// is parsed as it is read, never held whole twice over; anything else
/// (standard input, a pipe given by name) is read into memory first.
func readMessage(_ path: String, options: ParseOptions = .standard) throws -> MIMEMessage {
    guard isRegularFile(path) else { return try MIMEMessage.parse(readInput(path, limit: options.maxSize), options: options) }
    return try MIMEMessage.parse(contentsOf: path, options: options)
}

/// True for a readable regular file (not `-`, a pipe or a folder).
func isRegularFile(_ path: String) -> Bool {
    var info = stat()
    return path != "-" && stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, R_OK) == 0
}

/// The help of the message argument, the same for every command that reads one.
let messageArgumentHelp = ArgumentHelp("The message file; - (the default) reads standard input.", valueName: "message")
