import Foundation
import Platform

/// The sentence for a copy that could not be filed; it names the folder only.
public struct SentFolderError: Error, Sendable, CustomStringConvertible {
    /// One line naming the folder and the system's reason.
    public let description: String
}

/// The sender's own copies, in a Maildir (`sent_maildir`) a mail client
/// shows: each is written to `tmp/` under a unique name, synced, then renamed
/// into `new/` (Maildir delivery as qmail defines it), so a reader never sees
/// half a mail. The
/// folder and its `tmp`, `new`, `cur` are made (0700) when missing.
public struct SentFolder: Sendable {
    /// The Maildir folder.
    public let path: String

    /// The Maildir at `path`; nothing is made until the first copy is filed.
    public init(path: String) {
        self.path = path
    }

    /// Files `message`; returns the file's path. With `key` (the same for
    /// every attempt to file one copy) the name is made from it, and a copy
    /// already filed under it — in `new/`, or moved to `cur/` by a reader —
    /// is not filed again: a crash after the rename but before the outbox
    /// noted the filing must not leave two copies in the folder.
    @discardableResult
    public func file(_ message: [UInt8], now: Date = Date(), key: String? = nil) throws(SentFolderError) -> String {
        for sub in ["", "/tmp", "/new", "/cur"] {
            let folder = path + sub
            if mkdir(folder, 0o700) != 0 && errno != EEXIST {
                throw SentFolderError(description: "cannot make the Maildir \(folder): \(String(cString: strerror(errno)))")
            }
        }
        var random = [UInt8](repeating: 0, count: 8)
        _ = getentropy(&random, random.count)
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        // Maildir names: "/" and ":" in the host name would break them.
        let hostName = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).replacingOccurrences(of: "/", with: "\\057").replacingOccurrences(of: ":", with: "\\072")
        let seconds = Int(now.timeIntervalSince1970)
        let micros = Int((now.timeIntervalSince1970 - Double(seconds)) * 1_000_000)
        let unique: String
        if let key {
            unique = "\(key).\(hostName)"
            for sub in ["/new/", "/cur/"] {
                // A reader's flags follow a ":" (cur/NAME:2,S).
                if let filed = ((try? FileManager.default.contentsOfDirectory(atPath: path + sub)) ?? [])
                    .first(where: { $0 == unique || $0.hasPrefix(unique + ":") }) {
                    return path + sub + filed
                }
            }
        } else {
            unique = "\(seconds).M\(micros)P\(getpid())R\(random.map { String(format: "%02x", $0) }.joined()).\(hostName)"
        }
        let temporary = path + "/tmp/" + unique, final = path + "/new/" + unique
        do throws(DurableFile.Failure) {
            try DurableFile.replace(final, with: message, temporary: temporary)
        } catch {
            switch error.step {
            case .create: throw SentFolderError(description: "cannot write into \(path)/tmp: \(error)")
            case .rename: throw SentFolderError(description: "cannot move the copy into \(path)/new")
            // Filed: a folder that cannot be synced does not take the copy back (a retry would file it twice).
            case .syncFolder: break
            default: throw SentFolderError(description: "cannot write into \(path)/tmp")
            }
        }
        return final
    }
}
