import Glibc

/// Private temporary files without a name: nothing else can open one, and
/// no way of ending (a signal, kill -9, `_exit`) leaves it behind; its space
/// goes back when the last descriptor closes. The filter's letters, large
/// incoming mails and decrypted plaintext wait in such files.
package enum UnnamedFile {
    /// `$TMPDIR`, else /tmp.
    package static var temporaryFolder: String {
        guard let value = getenv("TMPDIR").map({ String(cString: $0) }), !value.isEmpty else { return "/tmp" }
        return value
    }

    /// A new file in `folder` (0600, close-on-exec, read and write): made
    /// with O_TMPFILE, so it never has a name; where the file system cannot
    /// (EOPNOTSUPP, EISDIR on old kernels) made by mkstemp and unlinked
    /// before anything is written to it. The descriptor, or the `errno`.
    package static func make(in folder: String = temporaryFolder) -> Result<Int32, OSError> {
        let fd = open(folder, tmpFileFlag | O_RDWR | O_CLOEXEC, 0o600)
        if fd >= 0 { return .success(fd) }
        var template = Array((folder + "/mailsec-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard made >= 0 else { return .failure(OSError(errno)) }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(made, F_SETFD, FD_CLOEXEC)
        return .success(made)
    }

    /// O_TMPFILE as Linux defines it (__O_TMPFILE | O_DIRECTORY); not imported from C.
    private static var tmpFileFlag: Int32 {
        #if os(Linux)
        return 0o20000000 | O_DIRECTORY
        #else
        return O_EXCL | O_CREAT | O_DIRECTORY  // fails on a folder: falls back to mkstemp
        #endif
    }
}
