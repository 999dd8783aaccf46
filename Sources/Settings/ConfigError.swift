/// A configuration that cannot be used. The filter defers mail on it (75):
/// a mis-edited file must never bounce mail. `path` names the key (such as
/// `submission.port`) when the problem belongs to one; ``line`` is where it
/// stands in the file, when known.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// One line naming the problem (and the key), never a secret value.
    public let description: String
    /// The key's dotted path, when the problem is about one key.
    public let path: String?
    /// The line (1-based) in the file, when TOMLKit or the key's position tells it.
    public var line: Int?

    /// An error saying `description`, about the key `path` at `line`.
    public init(_ description: String, path: String? = nil, line: Int? = nil) {
        self.description = description
        self.path = path
        self.line = line
    }
}
