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
        guard fd >= 0 else { throw CommandFailure("cannot write \(path): \(errnoReason(errno))", status: .cannotCreate) }
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
                throw CommandFailure("cannot write \(path ?? "standard output"): \(errnoReason(errno))", status: .cannotCreate)
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
    let parent = target.deletingLastPathComponent().path
    let staging: String
    do { staging = try PrivateFolder.unique(in: parent, prefix: ".mailsec-partial") } catch {
        let why = switch error.rawValue {
        case ENOENT: "the folder \(parent) does not exist"
        case ENOTDIR: "\(parent) is not a folder"
        default: errnoReason(error.rawValue) + " in \(parent)"
        }
        throw CommandFailure("cannot create \(path): \(why)", status: .cannotCreate)
    }
    do {
        for (name, pieces) in files { try writeOutput(to: staging + "/" + name, pieces) }
        rmdir(target.path)  // an empty folder given as --out
        guard rename(staging, target.path) == 0 else {
            throw CommandFailure("cannot create \(path): \(errnoReason(errno))", status: .cannotCreate)
        }
    } catch {
        try? FileManager.default.removeItem(atPath: staging)
        throw error
    }
}
