import Foundation
import Platform

/// A secret kept in a file (a publishing token, a database password): read
/// only from a regular file that its reader owns and nobody else can read
/// (0600), as ssh asks of a private key. The error names the key and the
/// file, never what it holds.
package enum PrivateFile {
    /// The file's text without surrounding white space; `key` names the
    /// configuration key in the error. `~/` is the reader's home.
    package static func read(_ value: String, key: String) throws(ConfigError) -> String {
        let path = expandTilde(value)
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
              let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError("\(key): \(path) cannot be read", path: key)
        }
        guard FileOwnership.isPrivate(info) else {
            // Never the secret itself: only where it is.
            throw ConfigError("\(key): refused, \(path) can be read by others or is not yours (chmod 600 it)", path: key)
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
