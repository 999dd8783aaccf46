import TOMLKit

/// Typed access to one TOML table, naming the key in every error.
package struct TOMLKeys {
    package let table: TOMLTable
    package let path: String

    package init(_ table: TOMLTable, _ path: String) {
        self.table = table
        self.path = path
    }

    package func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func error(_ key: String, _ text: String) -> ConfigError {
        ConfigError("\(name(key)): \(text)", path: name(key))
    }

    package func allow(_ keys: Set<String>) throws(ConfigError) {
        for (key, _) in table where !keys.contains(key) { throw error(key, "unknown key") }
    }

    package func string(_ key: String) throws(ConfigError) -> String? {
        guard let value = table[key] else { return nil }
        guard let string = value.string else { throw error(key, "must be a string") }
        return string
    }

    package func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let value = table[key] else { return nil }
        guard let bool = value.bool else { throw error(key, "must be true or false") }
        return bool
    }

    /// The largest whole number a key takes unless it says otherwise: far
    /// below what would overflow once turned into seconds, nanoseconds or
    /// bytes, so that no number from a file can stop the program.
    package static let largest = 1_000_000_000
    /// The longest wait a key may ask for: a day, in seconds.
    package static let day = 86_400
    /// The most days a key may ask for: ten years.
    package static let tenYears = 3650
    /// The largest TCP port.
    package static let port = 65_535

    /// A whole number from 1 to `atMost`; anything else is one error line
    /// naming the key and the range (never the value).
    package func positiveInt(_ key: String, atMost: Int = largest) throws(ConfigError) -> Int? {
        try int(key, in: 1...atMost)
    }

    /// A whole number from 0 to `atMost`.
    package func nonNegativeInt(_ key: String, atMost: Int = largest) throws(ConfigError) -> Int? {
        try int(key, in: 0...atMost)
    }

    /// A whole number in `range`.
    package func int(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let value = table[key] else { return nil }
        guard let int = value.int, range.contains(int) else {
            throw error(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return int
    }

    package func strings(_ key: String) throws(ConfigError) -> [String] {
        guard let value = table[key] else { return [] }
        guard let array = value.array else { throw error(key, "must be a list of strings") }
        var strings: [String] = []
        for item in array {
            guard let string = item.string else { throw error(key, "must be a list of strings") }
            strings.append(string)
        }
        return strings
    }

    package func table(_ key: String) throws(ConfigError) -> TOMLKeys? {
        guard let value = table[key] else { return nil }
        guard let table = value.table else { throw error(key, "must be a table") }
        return TOMLKeys(table, name(key))
    }

    package func tables(_ key: String) throws(ConfigError) -> [TOMLKeys] {
        guard let value = table[key] else { return [] }
        guard let array = value.array else { throw error(key, "must be [[\(key)]] tables") }
        var tables: [TOMLKeys] = []
        for (index, item) in array.enumerated() {
            guard let table = item.table else { throw error(key, "must be [[\(key)]] tables") }
            tables.append(TOMLKeys(table, "\(name(key))[\(index + 1)]"))
        }
        return tables
    }
}

extension TOMLKeys {
    /// Reads TOML text. A syntax error is one line naming where it is (line,
    /// column) and the key on that line when there is one, never the text
    /// around it: TOMLKit's own message quotes what it found, which may be
    /// an unquoted password.
    package static func document(_ text: String) throws(ConfigError) -> TOMLTable {
        if let line = dateTimeWithoutTime(text) {
            let key = SourceLines(text).key(onLine: line)
            throw ConfigError("not TOML at line \(line): a date and 'T' without a time" + (key.map { " (key \($0))" } ?? ""),
                              path: key, line: line)
        }
        do { return try TOMLTable(string: text) } catch let error as TOMLParseError {
            let line = error.source.begin.line
            let key = SourceLines(text).key(onLine: line)
            throw ConfigError("not TOML at line \(line), column \(error.source.begin.column)" + (key.map { " (key \($0))" } ?? ""),
                              path: key, line: line)
        } catch {
            throw ConfigError("not TOML")
        }
    }

    /// The line of the first `YYYY-MM-DD` followed by `T` (or `t`) and no
    /// digit, or nil. TOMLKit's toml++ asserts that a digit follows there
    /// (`parse_time`: an abort in a debug build, undefined behaviour in a
    /// release one) instead of reporting an error, so such text never
    /// reaches it. One pass over the bytes; a third-party defect, worked around here.
    static func dateTimeWithoutTime(_ text: String) -> Int? {
        let bytes = Array(text.utf8)
        func digit(_ index: Int) -> Bool { index < bytes.count && bytes[index] >= 0x30 && bytes[index] <= 0x39 }
        var line = 1
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x0A { line += 1 }
            // …DDDD-DD-DD then T: the T at index.
            if (byte == 0x54 || byte == 0x74) && index >= 10 && !digit(index + 1)
                && digit(index - 1) && digit(index - 2) && bytes[index - 3] == 0x2D && digit(index - 4) && digit(index - 5)
                && bytes[index - 6] == 0x2D && digit(index - 7) && digit(index - 8) && digit(index - 9) && digit(index - 10) {
                return line
            }
            index += 1
        }
        return nil
    }
}
