import Foundation
import TestSupport
import Testing

@Suite("Configuration error lines name the key and the line, never the value", .serialized)
struct ConfigErrorCLITests {
    /// Malformed lines, each holding `secret` where a value (or a key) stands.
    /// `password = 1979-05-27T` + letters made toml++ abort (an assertion in
    /// its parse_time): such text is refused before TOMLKit reads it.
    static func malformed(_ secret: String) -> [String] {
        ["password = \(secret)", "password = \"\(secret)", "password = '\(secret)", "password = \"\"\"\(secret)",
         "password = \(secret)\"", "password = [\(secret)", "password = {a = \(secret)}", "password = 12\(secret)",
         "password = \"\(secret)\\q\"", "password = \"\(secret)\" \(secret)", "password_command = pass show \(secret)",
         "password = \"\(secret)\"\npassword = \"\(secret)\"", "password = 0x\(secret)", "password = \(secret) # note",
         "password = \"\(secret)\u{1}\"", "password = +\(secret)", "password = true\(secret)",
         "password = 1979-05-27T\(secret)", "password = 1979-05-27t\(secret)"]
    }

    /// Secret-looking values: letters, digits and punctuation a password may hold.
    static func secrets(_ random: inout SeededRandom) -> [String] {
        let alphabet = Array("abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!%&*+-/:;<>?@^_|~")
        return ["hunter2hunter2", "Zx9$kQ7!mP2w"] + (0..<3).map { _ in
            "S" + String((0..<Int.random(in: 10...20, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
        }
    }

    @Test("TOMLKit's syntax errors on malformed lines with a secret: config check and the filter print the line, never the secret")
    func syntaxErrors() throws {
        var random = SeededRandom(seed: 22_10)
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            for secret in Self.secrets(&random) {
                for line in Self.malformed(secret) {
                    // The bad line is line 4 of [submission] in config.toml, line 3 of [reinject] in filter.toml
                    // (a key given twice: the line after).
                    let twice = line.contains("\n")
                    let user = home.path + "/config.toml"
                    try "from = \"alice@example.org\"\n[submission]\nhost = \"mail.example.org\"\n\(line)\n"
                        .write(toFile: user, atomically: true, encoding: .utf8)
                    chmod(user, 0o600)
                    let checked = try mailsec(["config", "check", "--config", user])
                    #expect(checked.status == 78, "\(line): \(checked.status)")
                    #expect(!checked.output.contains(secret) && !checked.errors.contains(secret), "\(line): \(checked.output)")
                    #expect(checked.output.contains(twice ? ":5" : ":4"), "\(line): \(checked.output)")

                    let filter = home.path + "/filter.toml"
                    try "gnupg_home = \"\(home.path)\"\n[reinject]\n\(line)\n".write(toFile: filter, atomically: true, encoding: .utf8)
                    let piped = try mailsec(["filter", "--config", filter, "-f", "a@example.org", "--", "b@example.org"],
                                            input: Array("From: a@example.org\n\nx\n".utf8), home: home)
                    #expect(piped.status == 75, "\(line): \(piped.errors)")
                    expectOneLine(piped)
                    #expect(!piped.errors.contains(secret), "\(line): \(piped.errors)")
                    #expect(piped.errors.contains(twice ? "line 4" : "line 3"), "\(line): \(piped.errors)")
                }
            }
        }
    }
}
