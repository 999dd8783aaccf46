import Foundation

/// The manual (`docs/`) and the man pages (`docs/man/`) as tests read them,
/// so that a test can hold what they say to what the code does.
public enum Manual {
    /// The text of `docs/NAME` (a page of the manual, or `man/PAGE`).
    public static func text(_ name: String) throws -> String {
        try String(contentsOf: Paths.root.appendingPathComponent("docs/\(name)"), encoding: .utf8)
    }

    /// The example between `.EX` and `.EE` of a man page, as a reader sees it
    /// (`\-` is a plain hyphen there).
    public static func manPageExample(_ page: String) throws -> String? {
        let lines = try text("man/\(page)").components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: ".EX"), let end = lines[start...].firstIndex(of: ".EE") else { return nil }
        return lines[(start + 1)..<end].joined(separator: "\n").replacingOccurrences(of: "\\-", with: "-") + "\n"
    }

    /// Every key and table name the ```toml blocks of a manual page set,
    /// commented-out ones (`# password = "…"`) included: what the page tells a
    /// reader they may write.
    public static func tomlKeys(_ name: String) throws -> Set<String> {
        var keys = Set<String>()
        var inBlock = false
        for line in try text(name).components(separatedBy: "\n") {
            if line.hasPrefix("```") { inBlock = line == "```toml"; continue }
            guard inBlock else { continue }
            var words = line.trimmingCharacters(in: .whitespaces)
            if words.hasPrefix("#") { words = String(words.dropFirst()).trimmingCharacters(in: .whitespaces) }
            if words.hasPrefix("[") {
                keys.insert(words.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).components(separatedBy: "]")[0])
            } else if let equals = words.firstIndex(of: "="),
                      case let key = words[..<equals].trimmingCharacters(in: .whitespaces),
                      !key.isEmpty, key.allSatisfy({ $0.isLetter || $0 == "_" }) {
                keys.insert(key)
            }
        }
        return keys
    }

    /// The words of a man page's source (`\-` read as `-`), for asking whether
    /// it names a key.
    public static func manPageWords(_ page: String) throws -> Set<String> {
        let source = try text("man/\(page)").replacingOccurrences(of: "\\-", with: "-")
        return Set(source.components(separatedBy: CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "_-")).inverted))
    }
}
