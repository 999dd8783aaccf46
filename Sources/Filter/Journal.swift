import Foundation
import MIME
import Platform
import Pipeline
import Synchronization

/// Remembers which recipients of a mail were handed on already, so that a
/// retry after a failure half way sends only the rest.
///
/// A mail is keyed by the SHA-256 of its bytes exactly as the MTA handed them
/// (the caller passes that digest as `mail`), not by its Message-ID: the same
/// mail on a retry finds its record, and two different mails that share a
/// Message-ID never mix. The record file is named by a digest of that key, and
/// each recipient is kept as a digest of the key and the address, so the
/// journal names nobody.
///
/// Each mail has one record file, written in full (the intent: every
/// recipient pending, and the key each recipient's letter is encrypted to)
/// and synced before the first copy is handed on, so a full disk or a lack
/// of inodes defers the mail before anything leaves. The keys let a retry
/// write the key-continuity record of a letter that went out when writing
/// it failed right after the hand-over.
/// Marking a recipient as sent overwrites one byte of that file in place:
/// it needs no new disk space, so a copy that went out can always be
/// recorded. Records of a mail are removed once all of it went out, and
/// expire otherwise, by the journal's own clock (``JournalClock``): a record
/// that vanished while its mail is still retried would let the retry send
/// every copy again, so no jump of the wall clock may age a record.
package final class Journal {
    /// The journal folder (0700).
    package let directory: String
    /// Seconds after which a record never finished is dropped.
    package let expiry: TimeInterval
    /// Now, in seconds of the journal's clock: what a new record is stamped with.
    let now: Int64

    /// When each journal folder was last swept for expired records, in this process.
    private static let lastSweep = Mutex([String: Date]())

    /// Opens (and makes, 0700) the journal folder and drops expired records;
    /// with `sweepOncePerMinute` (a resident filter opens it for every mail)
    /// only when this process has not swept that folder in the last minute.
    package convenience init(directory: String, expiry: TimeInterval, sweepOncePerMinute: Bool = false) throws {
        try self.init(directory: directory, expiry: expiry, sweepOncePerMinute: sweepOncePerMinute, clock: .system)
    }

    /// ``init(directory:expiry:sweepOncePerMinute:)`` with the clock records age by (tests move it).
    package init(directory: String, expiry: TimeInterval, sweepOncePerMinute: Bool = false, clock: JournalClock) throws {
        self.directory = directory
        self.expiry = expiry
        try Self.makeFolder(directory)
        guard access(directory, W_OK | X_OK) == 0 else {
            throw JournalError(description: "journal folder \(directory) is not writable")
        }
        let reading = clock.read(folder: directory)
        self.now = reading.now
        let wallNow = Date()
        guard !sweepOncePerMinute || Self.lastSweep.withLock({ sweeps -> Bool in
            if let last = sweeps[directory], wallNow.timeIntervalSince(last) < 60 { return false }
            sweeps[directory] = wallNow
            return true
        }) else { return }
        // Nothing expires unless the clock could be kept: an age not saved could not be trusted next time.
        guard clock.save(reading, folder: directory) else { return }
        let oldest = reading.now - Int64(min(expiry, 1e12))
        // Temporary files of a writer that died hold nothing a retry needs: by the wall clock.
        let cutoff = Int(wallNow.addingTimeInterval(-expiry).timeIntervalSince1970)
        // With opendir and stat, not FileManager: its attribute dictionaries
        // cost the pipe filter (one process per mail) a runtime type scan.
        guard let folder = opendir(directory) else { return }
        defer { closedir(folder) }
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.hasSuffix(".sent") || name.hasSuffix(".journal") || name.hasSuffix(".tmp") else { continue }
            let path = directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            if name.hasSuffix(".tmp") {
                if info.st_mtim.tv_sec < cutoff { unlink(path) }
                continue
            }
            // A record without a stamp (written before the journal had a clock,
            // a `.sent` file of version 1, a damaged one) counts from the clock's start.
            let born = name.hasSuffix(".journal") ? ((try? MailRecord.read(path))?.born ?? 0) : 0
            if born < oldest { unlink(path) }
        }
    }

    /// Makes `path` and any missing folder above it, each 0700 (mkdir -p).
    private static func makeFolder(_ path: String) throws(JournalError) {
        var built = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            built += "/" + component
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw JournalError(description: "cannot make journal folder \(path): \(String(cString: strerror(errno)))")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw JournalError(description: "journal folder \(path) is not a folder")
        }
    }

    /// Writes the intent for `mail` to `recipients` durably (or finds the one
    /// an earlier try wrote) and returns it, open for marking.
    package func begin(mail: String, recipients: [String]) throws(JournalError) -> MailRecord {
        let record = try open(mail: mail)
        try record.commit(recipients, keys: [:])
        return record
    }

    /// The record of `mail` as an earlier try left it (empty when none), not
    /// yet open for marking: ``MailRecord/commit(_:keys:)`` writes the intent.
    package func open(mail: String) throws(JournalError) -> MailRecord {
        let path = directory + "/" + Digest.sha256Hex(Array(mail.utf8)) + ".journal"
        var content = MailRecord.Content()
        if access(path, F_OK) == 0 {
            content = try MailRecord.read(path)
        }
        return MailRecord(journal: self, path: path, mail: mail, content: content)
    }

    /// Writes a whole record through a temporary file and a rename, synced:
    /// a record is there completely or not at all.
    func write(_ content: MailRecord.Content, to path: String) throws(JournalError) {
        var text = MailRecord.headerWithBirth
        for entry in content.entries { text += (entry.sent ? "S " : "P ") + entry.key + "\n" }
        for (key, fingerprint) in content.keys.sorted(by: { $0.key < $1.key }) {
            text += "K " + key + " " + fingerprint.padding(toLength: 64, withPad: ".", startingAt: 0) + "\n"
        }
        text += MailRecord.birthLine(content.born ?? now)
        try Self.replace(path, with: Array(text.utf8), in: directory)
    }

    /// Replaces the file at `path` in the journal's folder with `bytes`
    /// through a temporary file and a rename, synced: it is there completely
    /// or not at all (0600).
    static func replace(_ path: String, with bytes: [UInt8], in directory: String) throws(JournalError) {
        do throws(DurableFile.Failure) { try DurableFile.replace(path, with: bytes) } catch {
            throw JournalError(description: error.step == .syncFolder ? "cannot sync the journal folder \(directory)"
                               : "cannot write the journal in \(directory) (\(error))")
        }
    }

    /// The pipe filter's Autocrypt exports, kept in the journal's folder
    /// (`autocrypt-exports`, 0600) from one process to the next.
    package var keptExports: KeptExports {
        let directory = directory, path = directory + "/autocrypt-exports"
        return KeptExports(read: { FileManager.default.contents(atPath: path).map(Array.init) },
                           write: { bytes in try? Journal.replace(path, with: bytes, in: directory) })
    }

    private func reason() -> String { String(cString: strerror(errno)) }

    /// True when `recipient` of `mail` was handed on before (for tests and tools).
    package func wasSent(mail: String, to recipient: String) -> Bool {
        let path = directory + "/" + Digest.sha256Hex(Array(mail.utf8)) + ".journal"
        let key = MailRecord.key(mail, recipient)
        return ((try? MailRecord.read(path))?.entries ?? []).contains { $0.key == key && $0.sent }
    }

    /// A per-installation secret for the loop tag, made on first use (0600).
    package func secret() throws -> [UInt8] {
        let path = directory + "/loop-secret"
        if let data = FileManager.default.contents(atPath: path), data.count >= 32 { return Array(data) }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard getentropy(&bytes, bytes.count) == 0 else { throw JournalError(description: "no randomness for the loop secret") }
        // Written whole under a private name, then linked into place: another
        // filter (a process, or a resident filter's other thread) never reads
        // it half written, and the first link wins.
        do throws(DurableFile.Failure) {
            try DurableFile.create(path, with: bytes)
            return bytes
        } catch where error.step == .exists {
            // Another filter made it first.
            guard let data = FileManager.default.contents(atPath: path), data.count >= 32 else {
                throw JournalError(description: "cannot make the loop secret in \(directory)")
            }
            return Array(data)
        } catch {
            throw JournalError(description: "cannot make the loop secret in \(directory)")
        }
    }
}

/// One mail's record in the journal: read by ``Journal/open(mail:)``, its
/// intent written by ``commit(_:keys:)``, then open for marking recipients as sent.
package final class MailRecord {
    static let header = "mailsec-journal 2\n"
    /// Version 3 adds the letters' keys after the recipients' lines.
    static let headerWithKeys = "mailsec-journal 3\n"
    /// Version 4 adds, last, when the record was first written by the journal's clock ("B ", 20 digits, a newline).
    static let headerWithBirth = "mailsec-journal 4\n"
    static func birthLine(_ born: Int64) -> String {
        let digits = String(max(born, 0))
        return "B " + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "\n"
    }
    /// "P " or "S ", 64 hex digits, a newline.
    static let lineLength = 67
    /// "K ", 64 hex digits (the recipient), a space, the fingerprint padded with "." to 64, a newline.
    static let keyLineLength = 132

    /// What a record holds.
    struct Content {
        var entries: [(key: String, sent: Bool)] = []
        /// Recipient key → the fingerprint of the key their letter is encrypted to.
        var keys: [String: String] = [:]
        /// When the record was first written, by the journal's clock; nil in a record of before version 4.
        var born: Int64?
    }

    private let journal: Journal
    private var fd: Int32 = -1
    private let path: String
    private let mail: String
    private var content: Content
    private var entries: [(key: String, sent: Bool)] {
        get { content.entries }
        set { content.entries = newValue }
    }

    init(journal: Journal, path: String, mail: String, content: Content) {
        self.journal = journal
        self.path = path
        self.mail = mail
        self.content = content
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Writes the intent durably: every recipient of `recipients` not in the
    /// record yet is pending, and `keys` (recipient → fingerprint of the key
    /// their letter is encrypted to) are kept for the recipients still
    /// pending. Nothing is written when the record holds all of it already.
    /// Then the record is open for ``markSent(_:)``.
    package func commit(_ recipients: [String], keys: [String: String]) throws(JournalError) {
        var changed = !FileManager.default.fileExists(atPath: path)
        let directory = journal.directory
        for recipient in recipients {
            let key = Self.key(mail, recipient)
            guard !entries.contains(where: { $0.key == key }) else { continue }
            // A record of the journal before version 2: one empty file per recipient sent.
            entries.append((key, access(directory + "/" + key + ".sent", F_OK) == 0))
            changed = true
        }
        for (recipient, fingerprint) in keys where !wasSent(recipient) {
            let key = Self.key(mail, recipient)
            let wanted = fingerprint.uppercased()
            guard GnuPGFingerprint.isValid(wanted), content.keys[key] != wanted else { continue }
            content.keys[key] = wanted
            changed = true
        }
        if changed { try journal.write(content, to: path) }
        if fd < 0 {
            fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { throw JournalError(description: "cannot open the journal in \(directory)") }
        }
    }

    /// The fingerprint of the key `recipient`'s letter was encrypted to, as
    /// the intent recorded it; nil when none was (a postcard, an old record).
    package func letterKey(_ recipient: String) -> String? { content.keys[Self.key(mail, recipient)] }

    /// Recipients are kept as hashes with the mail: the journal names nobody.
    static func key(_ mail: String, _ recipient: String) -> String {
        Digest.sha256Hex(Array((mail + "\n" + recipient.lowercased()).utf8))
    }

    /// Reads a record; anything not in its exact format is an error (the mail is deferred).
    static func read(_ path: String) throws(JournalError) -> Content {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw JournalError(description: "cannot read the journal record \(path)")
        }
        return try read(Array(data), path: path)
    }

    static func read(_ whole: [UInt8], path: String) throws(JournalError) -> Content {
        let damaged = JournalError(description: "the journal record \(path) is damaged; remove it only if no copy of that mail went out")
        let withBirth = whole.starts(with: Array(headerWithBirth.utf8))
        let withKeys = withBirth || whole.starts(with: Array(headerWithKeys.utf8))
        guard withKeys || whole.starts(with: Array(header.utf8)) else { throw damaged }
        var bytes = whole[...]
        var content = Content()
        if withBirth {
            // The last line: "B ", 20 digits, a newline.
            let line = bytes.suffix(23)
            guard line.count == 23, line.first == UInt8(ascii: "B"), line[line.startIndex + 1] == 32, line.last == 10,
                  let born = Int64(String(decoding: line.dropFirst(2).dropLast(), as: UTF8.self)), born >= 0,
                  line.dropFirst(2).dropLast().allSatisfy({ (48...57).contains($0) })
            else { throw damaged }
            content.born = born
            bytes = bytes.dropLast(23)
        }
        func isHex(_ part: ArraySlice<UInt8>) -> Bool { part.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }
        var offset = header.utf8.count
        // The recipients' lines, then (version 3) the keys' lines.
        while offset < bytes.count, bytes[offset] != UInt8(ascii: "K") {
            guard offset + lineLength <= bytes.count else { throw damaged }
            let line = bytes[offset..<(offset + lineLength)]
            let state = line.first!, key = line.dropFirst(2).dropLast()
            guard state == UInt8(ascii: "P") || state == UInt8(ascii: "S"), line[offset + 1] == 32, line.last == 10, isHex(key)
            else { throw damaged }
            content.entries.append((String(decoding: key, as: UTF8.self), state == UInt8(ascii: "S")))
            offset += lineLength
        }
        while offset < bytes.count {
            guard withKeys, offset + keyLineLength <= bytes.count else { throw damaged }
            let line = bytes[offset..<(offset + keyLineLength)]
            let key = line.dropFirst(2).prefix(64)
            let fingerprint = String(decoding: line.dropFirst(67).dropLast().prefix { $0 != UInt8(ascii: ".") }, as: UTF8.self)
            guard line[offset + 1] == 32, line[offset + 66] == 32, line.last == 10, isHex(key),
                  GnuPGFingerprint.isValid(fingerprint) else { throw damaged }
            content.keys[String(decoding: key, as: UTF8.self)] = fingerprint
            offset += keyLineLength
        }
        return content
    }

    /// True when `recipient` was handed on before.
    package func wasSent(_ recipient: String) -> Bool {
        let key = Self.key(mail, recipient)
        return entries.contains { $0.key == key && $0.sent }
    }

    /// Marks `recipients` as handed on: one byte each, overwritten in place,
    /// then synced. Needs no new disk space.
    package func markSent(_ recipients: [String]) throws(JournalError) {
        guard fd >= 0 else { throw JournalError(description: "the journal record was marked before its intent was written") }
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
    package func clear() { clearance.clear() }

    /// What ``clear()`` removes, to remove later on another thread (once the
    /// MTA is known to have heard that every copy went out).
    package var clearance: RecordClearance {
        let folder = (path as NSString).deletingLastPathComponent
        return RecordClearance(paths: [path] + entries.map { folder + "/" + $0.key + ".sent" })
    }
}

/// A mail's journal record to remove once the MTA heard the mail is done:
/// until then a retry of the mail must find every copy sent.
package struct RecordClearance: Sendable {
    let paths: [String]

    /// Removes the record.
    package func clear() {
        for path in paths { unlink(path) }
    }
}

/// The journal cannot be read or written: the mail is deferred (75), nothing is sent.
package struct JournalError: Error, Sendable, CustomStringConvertible {
    /// One line naming the journal file or folder.
    package let description: String
}

/// A full OpenPGP fingerprint as the journal keeps it: 40 or 64 upper-case hex digits.
enum GnuPGFingerprint {
    static func isValid(_ text: String) -> Bool {
        (text.utf8.count == 40 || text.utf8.count == 64) && text.utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) }
    }
}
