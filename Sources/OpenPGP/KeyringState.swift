import Foundation

/// What a GnuPG home's keys depend on, as `stat` sees it: the public keyring
/// (`pubring.kbx`, the legacy `pubring.gpg`, or keyboxd's `public-keys.d`),
/// the trust database and `gpg.conf`. Two equal states mean no key, user ID,
/// revocation or trust changed in between, so a resident program may keep
/// what it looked up; any change (a key imported, revoked, deleted, a trust
/// set, a file restored from a backup) makes the states differ.
///
/// Each file counts with its device, inode, size, and modification and
/// status-change times to the nanosecond: gpg replaces its keyring through a
/// rename (new inode), and the status-change time cannot be set back by
/// `touch`. A file that is missing counts as missing.
public struct KeyringState: Sendable, Hashable {
    /// The files of a home that are looked at, relative to it (and those that
    /// `gpg.conf` names: ``namedFiles(conf:home:)``).
    public static let files = ["pubring.kbx", "pubring.gpg", "trustdb.gpg", "gpg.conf", "common.conf", "tofu.db",
                               "public-keys.d", "public-keys.d/pubring.db", "public-keys.d/pubring.db-wal"]

    /// The keyrings and trust database `gpg.conf` names (`keyring`,
    /// `primary-keyring`, `trustdb-name`): gpg reads keys from them too, so a key
    /// imported into one of them must change the state (a hostile review: a key
    /// copied into a `keyring extra.kbx` went unseen by the resident filter,
    /// which kept making postcards for that recipient). A name without a slash is
    /// in the home, `~/` is `$HOME`, and a `gnupg-ring:` or `gnupg-kbx:` before a
    /// keyring's name is its format, as gpg takes them.
    static func namedFiles(conf: String, home: String) -> [String] {
        guard let bytes = FileManager.default.contents(atPath: conf) else { return [] }
        var names: [String] = []
        for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.hasPrefix("#"), let split = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "=" }) else { continue }
            let option = trimmed[..<split].lowercased()
            guard ["keyring", "primary-keyring", "trustdb-name"].contains(option) else { continue }
            var value = trimmed[split...].drop { $0 == " " || $0 == "\t" || $0 == "=" }.trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            // The format a keyring is read in may lead its name (gpg's keydb: `gnupg-ring:` a
            // legacy keyring, `gnupg-kbx:` a keybox): the file is the name after it. Taken as a
            // name, it was a file that never exists, and that keyring's changes went unseen.
            for prefix in ["gnupg-ring:", "gnupg-kbx:"] where option != "trustdb-name" && value.hasPrefix(prefix) {
                value = String(value.dropFirst(prefix.count))
            }
            guard !value.isEmpty else { continue }
            if value.hasPrefix("~/") {
                names.append((ProcessInfo.processInfo.environment["HOME"] ?? "") + value.dropFirst())
            } else if value.contains("/") {
                names.append(value)
            } else {
                names.append(home + "/" + value)
            }
        }
        return names
    }

    private struct FileState: Sendable, Hashable {
        var device: UInt64 = 0, inode: UInt64 = 0, size: Int64 = -1
        var modified: Int64 = 0, modifiedNanoseconds: Int = 0
        var changed: Int64 = 0, changedNanoseconds: Int = 0
    }

    private let states: [FileState]

    /// The state as one line of numbers, equal exactly when the states are:
    /// for a cache kept in a file between processes (the pipe filter's exports).
    package var summary: String {
        states.map { state in
            [String(state.device), String(state.inode), String(state.size), String(state.modified),
             String(state.modifiedNanoseconds), String(state.changed), String(state.changedNanoseconds)].joined(separator: ".")
        }.joined(separator: " ")
    }

    /// The state of `home` now (nil: `$GNUPGHOME`, then `~/.gnupg`, as gpg takes it).
    public init(home: String?) {
        let folder = KeyringCheck.resolvedHome(home)
        let paths = Self.files.map { folder + "/" + $0 } + Self.namedFiles(conf: folder + "/gpg.conf", home: folder)
        states = paths.map { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return FileState() }
            return FileState(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                             modified: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: info.st_mtim.tv_nsec,
                             changed: Int64(info.st_ctim.tv_sec), changedNanoseconds: info.st_ctim.tv_nsec)
        }
    }
}
