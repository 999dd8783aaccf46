import Foundation
import GRDB
import Incoming
import MIME
import OpenPGP

/// What learning from received mail did.
public struct LearnReport: Sendable, Hashable, Codable {
    /// Mails read.
    public var mails = 0
    /// Address appearances noted (From, To, Cc).
    public var addresses = 0
    /// Files that could not be read as mail (unreadable, too large, not a message).
    public var skippedMails = 0
    /// Addresses that are not plain `local@domain` addresses, left out.
    public var skippedAddresses = 0
    /// Addresses past ``ContactBook/addressesPerMail`` in one mail, left out.
    public var tooManyAddresses = 0
    /// Display names not kept: showing another address, control or invisible characters, too long.
    public var droppedNames = 0
    /// Keys imported from Autocrypt headers (by the rules of `autocrypt import`).
    public var keysImported = 0
    /// Autocrypt headers not imported (their reasons are `autocrypt import`'s).
    public var keysRefused = 0

    mutating func add(_ other: LearnReport) {
        mails += other.mails; addresses += other.addresses; skippedMails += other.skippedMails
        skippedAddresses += other.skippedAddresses; tooManyAddresses += other.tooManyAddresses
        droppedNames += other.droppedNames; keysImported += other.keysImported; keysRefused += other.keysRefused
    }
}

extension ContactBook {
    /// At most this many addresses of one mail are noted (a mail to ten
    /// thousand addresses says little about any of them).
    public static let addressesPerMail = 1000

    /// Learns from one received mail: every From, To and Cc address is
    /// seen (count, frecency by the mail's Date, never later than `now`),
    /// with its name when fit to show. With `autocrypt`, the mail's Autocrypt
    /// headers are imported by exactly the rules of `mailsec autocrypt import`
    /// (``AutocryptImporter``). Throws only when the store cannot be written.
    public func learn(_ raw: [UInt8], receivedAt: Date? = nil, autocrypt: AutocryptImporter? = nil,
                      decrypting: Bool = false, now: Date = Date()) throws(ContactsError) -> LearnReport {
        var report = LearnReport()
        guard let seen = Self.reading(raw, receivedAt: receivedAt, now: now, report: &report) else { return report }
        try write { db in try Self.note(seen, in: db) }
        if let autocrypt {
            let results = Self.importAutocrypt(raw, seen.hasAutocrypt, autocrypt, decrypting, &report)
            try write { db in try StoreContinuity.noteLearned(results, at: seen.time, now: now.timeIntervalSince1970, in: db) }
        }
        return report
    }

    /// Learns from a mail file or a Maildir (its `cur` and `new`). A file
    /// in the Maildir that cannot be read as mail is skipped and counted; a
    /// single file that cannot be read throws (`noInput`).
    public func learn(path: String, autocrypt: AutocryptImporter? = nil, decrypting: Bool = false,
                      now: Date = Date()) throws -> LearnReport {
        var info = stat()
        guard stat(path, &info) == 0 else { throw LearnInputError(path: path, reason: String(cString: strerror(errno))) }
        var files: [String]
        if (info.st_mode & S_IFMT) == S_IFDIR {
            let parts = ["cur", "new"].map { path + "/" + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
            guard !parts.isEmpty else { throw LearnInputError(path: path, reason: "a folder, but not a Maildir (no cur or new)") }
            files = []
            for part in parts {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: part)) ?? []
                files += names.filter { !$0.hasPrefix(".") }.sorted().map { part + "/" + $0 }
            }
        } else {
            files = [path]
            guard access(path, R_OK) == 0 else { throw LearnInputError(path: path, reason: String(cString: strerror(errno))) }
        }
        var report = LearnReport()
        var batch: [Seen] = [], raws: [([UInt8], Bool, Double)] = []
        func flush() throws(ContactsError) {
            let pending = batch
            try write { db in for seen in pending { try Self.note(seen, in: db) } }
            if let autocrypt {
                var learned: [([AutocryptImportResult], Double)] = []
                for (raw, has, time) in raws { learned.append((Self.importAutocrypt(raw, has, autocrypt, decrypting, &report), time)) }
                // Kept apart from the person's own keys (Autocrypt's peer state).
                try write { db in
                    for (results, time) in learned {
                        try StoreContinuity.noteLearned(results, at: time, now: now.timeIntervalSince1970, in: db)
                    }
                }
            }
            batch = []; raws = []
        }
        for file in files {
            guard let raw = Self.readFile(file) else {
                if files.count == 1 { throw LearnInputError(path: file, reason: "cannot be read as mail") }
                report.skippedMails += 1
                continue
            }
            var modified = stat()
            let mtime = stat(file, &modified) == 0 ? Date(timeIntervalSince1970: Double(modified.st_mtim.tv_sec)) : nil
            guard let seen = Self.reading(raw, receivedAt: mtime, now: now, report: &report) else { continue }
            batch.append(seen)
            if autocrypt != nil && (seen.hasAutocrypt || decrypting) { raws.append((raw, seen.hasAutocrypt, seen.time)) }
            if batch.count >= 200 { try flush() }
        }
        try flush()
        return report
    }

    /// One mail as learning sees it.
    struct Seen {
        var people: [MailAddress]
        var time: Double
        var hasAutocrypt: Bool
    }

    /// A regular file no larger than a mail may be; nil otherwise.
    static func readFile(_ path: String) -> [UInt8]? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= ParseOptions.standard.maxSize,
              let data = FileManager.default.contents(atPath: path) else { return nil }
        return [UInt8](data)
    }

    /// The addresses of a mail, checked; nil (counted as skipped) when it is not a mail.
    static func reading(_ raw: [UInt8], receivedAt: Date?, now: Date, report: inout LearnReport) -> Seen? {
        guard let message = try? MIMEMessage.parse(raw) else {
            report.skippedMails += 1
            return nil
        }
        let listed = message.addresses(.from) + message.addresses(.to) + message.addresses(.cc)
        guard !listed.isEmpty || message.header("From") != nil else {
            report.skippedMails += 1
            return nil
        }
        report.mails += 1
        var people: [MailAddress] = [], seen = Set<String>()
        for person in listed {
            guard GnuPG.isLookupAddress(person.address) else { report.skippedAddresses += 1; continue }
            let address = person.address.lowercased()
            guard seen.insert(address).inserted else { continue }
            guard people.count < addressesPerMail else { report.tooManyAddresses += 1; continue }
            let name = DisplayNames.keepable(person.name, for: address)
            if name == nil && !person.name.trimmingCharacters(in: .whitespaces).isEmpty { report.droppedNames += 1 }
            people.append(MailAddress(name: name ?? "", address: address))
        }
        report.addresses += people.count
        let dated = message.header("Date").flatMap(parseDate) ?? receivedAt ?? now
        let hasAutocrypt = message.headers.contains { $0.name.lowercased() == "autocrypt" }
        return Seen(people: people, time: min(dated, now).timeIntervalSince1970, hasAutocrypt: hasAutocrypt)
    }

    static func note(_ seen: Seen, in db: Database) throws {
        for person in seen.people {
            try noteUse(db, address: person.address, name: person.name, source: "seen", weight: Frecency.seenWeight, at: seen.time)
            try db.cachedStatement(sql: "UPDATE contact SET seenCount = seenCount + 1, lastSeen = max(coalesce(lastSeen, 0), ?) WHERE address = ?")
                .execute(arguments: [seen.time, person.address])
        }
    }

    static func importAutocrypt(_ raw: [UInt8], _ hasHeader: Bool, _ importer: AutocryptImporter, _ decrypting: Bool,
                                _ report: inout LearnReport) -> [AutocryptImportResult] {
        guard hasHeader || decrypting else { return [] }
        guard let results = try? importer.importKeys(from: raw, decrypting: decrypting) else {
            report.keysRefused += 1
            return []
        }
        report.keysImported += results.filter { $0.imported != nil }.count
        report.keysRefused += results.filter { $0.imported == nil }.count
        return results
    }

    /// An RFC 5322 date (with or without the day name and seconds).
    package static func parseDate(_ text: String) -> Date? {
        var value = text.trimmingCharacters(in: .whitespaces)
        if let comment = value.firstIndex(of: "(") { value = value[..<comment].trimmingCharacters(in: .whitespaces) }
        // Making a DateFormatter costs more than parsing a mail: one per thread, kept.
        let key = "mailsec.contacts.dateFormatters"
        let formatters: [DateFormatter]
        if let kept = Thread.current.threadDictionary[key] as? [DateFormatter] {
            formatters = kept
        } else {
            formatters = ["EEE, d MMM yyyy HH:mm:ss Z", "d MMM yyyy HH:mm:ss Z", "EEE, d MMM yyyy HH:mm Z", "d MMM yyyy HH:mm Z"].map {
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.dateFormat = $0
                return formatter
            }
            Thread.current.threadDictionary[key] = formatters
        }
        for formatter in formatters { if let date = formatter.date(from: value) { return date } }
        return nil
    }
}

/// A mail file or Maildir to learn from cannot be read.
public struct LearnInputError: Error, Sendable, CustomStringConvertible {
    /// The file or folder that could not be read.
    public let path: String
    /// The system's reason.
    public let reason: String
    /// One line naming the path and the reason.
    public var description: String { "cannot read \(path): \(reason)" }
}
