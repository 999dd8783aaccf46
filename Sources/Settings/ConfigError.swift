import Foundation
import Platform

/// A configuration that cannot be used. The filter defers mail on it (75):
/// a mis-edited file must never bounce mail. `path` names the key (such as
/// `submission.port`) when the problem belongs to one; ``line`` is where it
/// stands in the file, when known.
///
/// Every configuration file (filter.toml, config.toml, a file read for its
/// `[store]`) reports a problem as one line, `FILE:LINE: problem` (or
/// `FILE: problem` when no line belongs to it): ``description`` once the
/// error is ``located(in:text:)``, which every reader of a file does. The
/// filter's error line, `mailsec config check`, `mailsec filter --check-config`
/// and the resident filter's reload all print it as it is.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// What is wrong (and the key), never a secret value; without the file.
    public let problem: String
    /// The key's dotted path, when the problem is about one key.
    public let path: String?
    /// The line (1-based) in the file, when TOMLKit or the key's position tells it.
    public var line: Int?
    /// The file the problem is in, once located; nil for text read on its own.
    public var file: String?

    /// One line: `FILE:LINE: problem`, `FILE: problem`, or the problem alone
    /// for text that came from no file.
    public var description: String {
        guard let file else { return problem }
        return file + (line.map { ":\($0)" } ?? "") + ": " + problem
    }

    /// An error saying `problem`, about the key `path` at `line`.
    public init(_ problem: String, path: String? = nil, line: Int? = nil) {
        self.problem = problem
        self.path = path
        self.line = line
    }

    /// This problem in the file `file`, whose text was `text` (nil when it
    /// could not be read): the line is the one given, or the line of the key
    /// it names.
    package func located(in file: String, text: String?) -> ConfigError {
        var error = self
        error.file = file
        if error.line == nil, let text, let path { error.line = SourceLines(text).line(of: path) }
        return error
    }
}

/// A configuration file's text, read the one way every configuration is.
package enum ConfigFile {
    /// The text of the regular file at `path` with its status (owner, mode);
    /// a file that is missing, not a regular file, unreadable or not UTF-8 is
    /// one located error.
    package static func read(_ path: String) throws(ConfigError) -> (text: String, info: stat) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw ConfigError("cannot read the configuration (\(errnoReason(errno)))").located(in: path, text: nil) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            let kind = (info.st_mode & S_IFMT) == S_IFDIR ? "is a directory" : "not a regular file"
            throw ConfigError("cannot read the configuration (\(kind))").located(in: path, text: nil)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError("cannot read the configuration").located(in: path, text: nil)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError("the configuration is not UTF-8").located(in: path, text: nil)
        }
        return (text, info)
    }
}

/// How a reader of configuration meets a problem: without `collect` the
/// first one throws; with it, each is handed to `collect` and reading goes on
/// (`config check`, `--check-config`).
package struct ProblemCollector {
    let collect: ((ConfigError) -> Void)?

    package init(_ collect: ((ConfigError) -> Void)?) { self.collect = collect }

    /// Runs `body`; a problem it throws is collected, or without a collector thrown.
    package func step(_ body: () throws -> Void) throws(ConfigError) {
        do { try body() } catch {
            let error = error as? ConfigError ?? ConfigError("\(error)")
            guard let collect else { throw error }
            collect(error)
        }
    }
}
