import Glibc

/// Folders only this user may enter.
package enum PrivateFolder {
    /// Makes a new folder with a unique name (`prefix` and six random
    /// characters) in `base`, mode 0700, and checks it is what was asked for:
    /// a folder (not a link), of this user, that nobody else may enter —
    /// everything else about `base` is taken on trust. The editor's file,
    /// `encrypt --out`'s staging folder and `keys publish`'s scratch GnuPG
    /// home are made so. `EEXIST` when the folder is there but not private.
    package static func unique(in base: String, prefix: String) throws(OSError) -> String {
        var template = Array((base + "/" + prefix + ".XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw OSError(errno) }
        let folder = String(cString: made)
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_mode & 0o077 == 0, info.st_uid == getuid() else {
            rmdir(folder)
            throw OSError(EEXIST)
        }
        return folder
    }
}
