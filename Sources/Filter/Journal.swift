import Foundation
import MIME

/// Remembers which recipients of a mail were handed on already, so that a
/// retry after a failure half way sends only the rest.
///
/// Each mail has one record file, written in full (the intent: every
/// recipient pending) and synced before the first copy is handed on, so a
/// full disk or a lack of inodes defers the mail before anything leaves.
/// Marking a recipient as sent overwrites one byte of that file in place:
/// it needs no new disk space, so a copy that went out can always be
/// recorded. Records of a mail are removed once all of it went out, and
/// expire otherwise.
public final class Journal {
    public let directory: String
    public let expiry: TimeInterval

    /// Opens (and makes, 0700) the journal folder and drops expired records.
    public init(directory: String, expiry: TimeInterval) throws {
        self.directory = directory
        self.expiry = expiry
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        guard access(directory, W_OK | X_OK) == 0 else {
            throw JournalError(description: "journal folder \(directory) is not writable")
        }
        let cutoff = Date().addingTimeInterval(-expiry)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where name.hasSuffix(".sent") || name.hasSuffix(".journal") || name.hasSuffix(".tmp") {
            let path = directory + "/" + name
            if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
               modified < cutoff {
                unlink(path)
            }
        }
    }

    /// Writes the intent for `mail` to `recipients` durably (or finds the one
    /// an earlier try wrote) and returns it, open for marking.
    public func begin(mail: String, recipients: [String]) throws(JournalError) -> MailRecord {
        let path = directory + "/" + Digest.sha256Hex(Array(mail.utf8)) + ".journal"
        var entries: [(key: String, sent: Bool)] = []
        if access(path, F_OK) == 0 {
            entries = try MailRecord.read(path)
        }
        var changed = entries.isEmpty
        for recipient in recipients {
            let key = MailRecord.key(mail, recipient)
            guard !entries.contains(where: { $0.key == key }) else { continue }
            // A record of the journal before version 2: one empty file per recipient sent.
            entries.append((key, access(directory + "/" + key + ".sent", F_OK) == 0))
            changed = true
        }
        if changed { try write(entries, to: path) }
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError(description: "cannot open the journal in \(directory)") }
        return MailRecord(fd: fd, path: path, mail: mail, entries: entries)
    }

    /// Writes a whole record through a temporary file and a rename, synced:
    /// a record is there completely or not at all.
    private func write(_ entries: [(key: String, sent: Bool)], to path: String) throws(JournalError) {
        var text = MailRecord.header
        for entry in entries { text += (entry.sent ? "S " : "P ") + entry.key + "\n" }
        let temporary = path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw JournalError(description: "cannot write the journal in \(directory) (\(reason()))") }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let why = reason()
                close(fd)
                unlink(temporary)
                throw JournalError(description: "cannot write the journal in \(directory) (\(why))")
            }
            offset += written
        }
        guard fsync(fd) == 0 else {
            let why = reason()
            close(fd)
            unlink(temporary)
            throw JournalError(description: "cannot write the journal in \(directory) (\(why))")
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw JournalError(description: "cannot write the journal in \(directory) (\(reason()))")
        }
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0, fsync(folder) == 0 else {
            if folder >= 0 { close(folder) }
            throw JournalError(description: "cannot sync the journal folder \(directory)")
        }
        close(folder)
    }

    private func reason() -> String { String(cString: strerror(errno)) }

    /// True when `recipient` of `mail` was handed on before (for tests and tools).
    public func wasSent(mail: String, to recipient: String) -> Bool {
        let path = directory + "/" + Digest.sha256Hex(Array(mail.utf8)) + ".journal"
        let key = MailRecord.key(mail, recipient)
        return ((try? MailRecord.read(path)) ?? []).contains { $0.key == key && $0.sent }
    }

    /// A per-installation secret for the loop tag, made on first use (0600).
    public func secret() throws -> [UInt8] {
        let path = directory + "/loop-secret"
        if let data = FileManager.default.contents(atPath: path), data.count >= 32 { return Array(data) }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard getentropy(&bytes, bytes.count) == 0 else { throw JournalError(description: "no randomness for the loop secret") }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd) == 0
            close(fd)
            guard written == bytes.count, synced else {
                unlink(path)
                throw JournalError(description: "cannot make the loop secret in \(directory)")
            }
            return bytes
        }
        // Another filter process made it first.
        guard let data = FileManager.default.contents(atPath: path), data.count >= 32 else {
            throw JournalError(description: "cannot make the loop secret in \(directory)")
        }
        return Array(data)
    }
}

/// One mail's record in the journal, open for marking recipients as sent.
public final class MailRecord {
    static let header = "mailsec-journal 2\n"
    /// "P " or "S ", 64 hex digits, a newline.
    static let lineLength = 67

    private let fd: Int32
    private let path: String
    private let mail: String
    private var entries: [(key: String, sent: Bool)]

    init(fd: Int32, path: String, mail: String, entries: [(key: String, sent: Bool)]) {
        self.fd = fd
        self.path = path
        self.mail = mail
        self.entries = entries
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Recipients are kept as hashes with the mail: the journal names nobody.
    static func key(_ mail: String, _ recipient: String) -> String {
        Digest.sha256Hex(Array((mail + "\n" + recipient.lowercased()).utf8))
    }

    /// Reads a record; anything not in its exact format is an error (the mail is deferred).
    static func read(_ path: String) throws(JournalError) -> [(key: String, sent: Bool)] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw JournalError(description: "cannot read the journal record \(path)")
        }
        let bytes = Array(data)
        let head = Array(header.utf8)
        guard bytes.starts(with: head), (bytes.count - head.count) % lineLength == 0 else {
            throw JournalError(description: "the journal record \(path) is damaged; remove it only if no copy of that mail went out")
        }
        var entries: [(String, Bool)] = []
        var offset = head.count
        while offset < bytes.count {
            let line = bytes[offset..<(offset + lineLength)]
            let state = line.first!, key = line.dropFirst(2).dropLast()
            guard state == UInt8(ascii: "P") || state == UInt8(ascii: "S"), line[offset + 1] == 32, line.last == 10,
                  key.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
                throw JournalError(description: "the journal record \(path) is damaged; remove it only if no copy of that mail went out")
            }
            entries.append((String(decoding: key, as: UTF8.self), state == UInt8(ascii: "S")))
            offset += lineLength
        }
        return entries
    }

    /// True when `recipient` was handed on before.
    public func wasSent(_ recipient: String) -> Bool {
        let key = Self.key(mail, recipient)
        return entries.contains { $0.key == key && $0.sent }
    }

    /// Marks `recipients` as handed on: one byte each, overwritten in place,
    /// then synced. Needs no new disk space.
    public func markSent(_ recipients: [String]) throws(JournalError) {
        for recipient in recipients {
            let key = Self.key(mail, recipient)
            guard let index = entries.firstIndex(where: { $0.key == key }) else {
                throw JournalError(description: "the journal has no intent for a recipient it was to mark")
            }
            var state = UInt8(ascii: "S")
            let offset = off_t(Self.header.utf8.count + index * Self.lineLength)
            guard pwrite(fd, &state, 1, offset) == 1 else {
                throw JournalError(description: "cannot mark a copy as sent in the journal \(path)")
            }
            entries[index].sent = true
        }
        guard fdatasync(fd) == 0 else { throw JournalError(description: "cannot sync the journal \(path)") }
    }

    /// Forgets the mail once every copy went out.
    public func clear() {
        unlink(path)
        for entry in entries { unlink((path as NSString).deletingLastPathComponent + "/" + entry.key + ".sent") }
    }
}

public struct JournalError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
