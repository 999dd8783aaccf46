import Foundation
import Glibc

/// Who may read or change a file, judged as ssh judges its own: what a
/// configuration holding a secret (a password, a token) or a command run
/// as us (`password_command`) must be before it is believed.
package enum FileOwnership {
    /// True when the file whose status is `info` is ours and nobody else
    /// may read or write it (0600 or less).
    package static func isPrivate(_ info: stat) -> Bool {
        info.st_mode & 0o077 == 0 && info.st_uid == getuid()
    }

    /// Whether nobody but us (and root) can change the file at `path` (its
    /// status `info`): the file and every folder above it owned by us or
    /// root, and none writable by group or others (a folder with the sticky
    /// bit, as /tmp, excepted: others cannot replace what is ours in it).
    package static func onlyOwnerCanChange(_ path: String, _ info: stat) -> Bool {
        let owners: Set<uid_t> = [getuid(), 0]
        guard owners.contains(info.st_uid), info.st_mode & 0o022 == 0 else { return false }
        guard let resolved = realpath(path, nil) else { return false }
        defer { free(resolved) }
        var folder = URL(fileURLWithPath: String(cString: resolved)).deletingLastPathComponent().path
        while true {
            var above = stat()
            guard stat(folder, &above) == 0, owners.contains(above.st_uid) else { return false }
            if above.st_mode & 0o022 != 0 && above.st_mode & 0o1000 == 0 { return false }
            if folder == "/" { return true }
            folder = URL(fileURLWithPath: folder).deletingLastPathComponent().path
        }
    }
}
