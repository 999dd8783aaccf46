import Foundation
import MIME
import OpenPGP
import Pipeline

/// sysexits.h codes the tool exits with.
enum ExitStatus: Int32 {
    case failure = 1
    /// EX_USAGE
    case usage = 64
    /// EX_DATAERR: the message is not acceptable.
    case dataError = 65
    /// EX_NOINPUT: an input file cannot be read.
    case noInput = 66
    /// EX_UNAVAILABLE: refused by policy, e.g. no usable key for a letter.
    case refused = 69

    init(for error: any Error) {
        switch error {
        case let error as CommandFailure: self = error.status
        case is MIMEError, is LetterError: self = .dataError
        case is InvalidAddressError: self = .usage
        default: self = .failure
        }
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
    case let error as MIMEError: error.description
    case let error as LetterError: error.description
    case let error as InvalidAddressError: error.description
    default: "unexpected error (\(type(of: error)))"
    }
}

/// Prints `mailsec: MESSAGE` on stderr and exits.
func fail(_ message: String, status: ExitStatus) -> Never {
    let line = "mailsec: " + message.replacingOccurrences(of: "\n", with: " ") + "\n"
    FileHandle.standardError.write(Data(line.utf8))
    exit(status.rawValue)
}

/// Reads a whole input file, or standard input for `-`.
func readInput(_ path: String) throws -> [UInt8] {
    if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
    guard let data = FileManager.default.contents(atPath: path) else {
        throw CommandFailure("cannot read \(path)", status: .noInput)
    }
    return Array(data)
}

/// Writes `bytes` to the file at `path`, or standard output for nil or `-`.
func writeOutput(_ bytes: [UInt8], to path: String?) throws {
    guard let path, path != "-" else {
        FileHandle.standardOutput.write(Data(bytes))
        return
    }
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
        throw CommandFailure("cannot write \(path)", status: .failure)
    }
}
