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
    /// The files of a home that are looked at, relative to it.
    public static let files = ["pubring.kbx", "pubring.gpg", "trustdb.gpg", "gpg.conf",
                               "public-keys.d", "public-keys.d/pubring.db"]

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
        states = Self.files.map { name in
            var info = stat()
            guard stat(folder + "/" + name, &info) == 0 else { return FileState() }
            return FileState(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                             modified: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: info.st_mtim.tv_nsec,
                             changed: Int64(info.st_ctim.tv_sec), changedNanoseconds: info.st_ctim.tv_nsec)
        }
    }
}
