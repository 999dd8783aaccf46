/// Finds the line of a key in TOML text, for errors about values TOMLKit
/// parsed fine (it keeps positions only for syntax errors). A path is dotted
/// as ``TOMLKeys`` names keys: `submission.port`, `rules[2].mode`.
/// Plain `[table]` and `[[array]]` headers and `key =` lines are understood,
/// which is what configuration files hold; nil when not found.
package struct SourceLines {
    let lines: [Substring]

    package init(_ text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// The key a `key = value` line names (a bare key, or a quoted one made
    /// of bare-key characters), nil for any other line: only what is left of
    /// the `=`, which never holds the value.
    package func key(onLine number: Int) -> String? {
        guard lines.indices.contains(number - 1), let equals = lines[number - 1].firstIndex(of: "=") else { return nil }
        var name = lines[number - 1][..<equals].trimmingSpaces
        if name.count >= 2 && name.first == "\"" && name.last == "\"" { name = name.dropFirst().dropLast() }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
        guard !name.isEmpty, name.count <= 64, name.allSatisfy(allowed.contains) else { return nil }
        return String(name)
    }

    package func line(of path: String) -> Int? {
        var parts = path.split(separator: ".").map(String.init)
        guard let key = parts.popLast() else { return nil }
        let table = parts.joined(separator: ".")
        var current = ""
        var arrayCounts: [String: Int] = [:]
        var headerLine: Int?
        for (index, raw) in lines.enumerated() {
            let line = raw.trimmingSpaces
            if line.hasPrefix("[[") {
                let name = line.dropFirst(2).prefix { $0 != "]" }.trimmingSpaces
                arrayCounts[String(name), default: 0] += 1
                current = "\(name)[\(arrayCounts[String(name)]!)]"
                if current == path { return index + 1 }
                continue
            }
            if line.hasPrefix("[") {
                current = String(line.dropFirst().prefix { $0 != "]" }.trimmingSpaces)
                if current == path { return index + 1 }
                if current == table { headerLine = index + 1 }
                continue
            }
            guard current == table, let equals = line.firstIndex(of: "=") else { continue }
            var name = line[..<equals].trimmingSpaces
            if name.hasPrefix("\"") && name.hasSuffix("\"") && name.count >= 2 { name = name.dropFirst().dropLast() }
            if name == key { return index + 1 }
        }
        return headerLine
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" || first == "\r" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text = text.dropLast() }
        return text
    }
}
