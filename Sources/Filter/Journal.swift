import Foundation
import MIME

/// Remembers which recipients of a mail were handed on already, so that a
/// retry after a failure half way sends only the rest. Keyed by the mail
/// (Message-ID, or a hash of it without one) and the recipient; entries of a
/// mail are cleared once all of it went out, and expire otherwise.
public final class Journal {
    public let directory: String
    public let expiry: TimeInterval

    /// Opens (and makes, 0700) the journal folder and drops expired entries.
    public init(directory: String, expiry: TimeInterval) throws {
        self.directory = directory
        self.expiry = expiry
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        guard access(directory, W_OK | X_OK) == 0 else {
            throw JournalError(description: "journal folder \(directory) is not writable")
        }
        let cutoff = Date().addingTimeInterval(-expiry)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasSuffix(".sent") {
            let path = directory + "/" + name
            if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
               modified < cutoff {
                unlink(path)
            }
        }
    }

    private func path(_ mail: String, _ recipient: String) -> String {
        directory + "/" + Digest.sha256Hex(Array((mail + "\n" + recipient.lowercased()).utf8)) + ".sent"
    }

    /// True when `recipient` of `mail` was handed on before.
    public func wasSent(mail: String, to recipient: String) -> Bool {
        access(path(mail, recipient), F_OK) == 0
    }

    /// Records that `recipients` of `mail` were handed on (durably: fsync).
    public func recordSent(mail: String, to recipients: [String]) throws {
        for recipient in recipients {
            let fd = open(path(mail, recipient), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw JournalError(description: "cannot write the journal in \(directory)") }
            fsync(fd)
            close(fd)
        }
        let dir = open(directory, O_RDONLY | O_DIRECTORY)
        if dir >= 0 { fsync(dir); close(dir) }
    }

    /// Forgets `mail` once every copy went out.
    public func clear(mail: String, recipients: [String]) {
        for recipient in recipients { unlink(path(mail, recipient)) }
    }

    /// A per-installation secret for the loop tag, made on first use (0600).
    public func secret() throws -> [UInt8] {
        let path = directory + "/loop-secret"
        if let data = FileManager.default.contents(atPath: path), data.count >= 32 { return Array(data) }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard getentropy(&bytes, bytes.count) == 0 else { throw JournalError(description: "no randomness for the loop secret") }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fsync(fd)
            close(fd)
            return bytes
        }
        // Another filter process made it first.
        guard let data = FileManager.default.contents(atPath: path), data.count >= 32 else {
            throw JournalError(description: "cannot make the loop secret in \(directory)")
        }
        return Array(data)
    }
}

public struct JournalError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
