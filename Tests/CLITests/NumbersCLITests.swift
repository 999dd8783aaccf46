import Foundation
import TestSupport
import Testing

/// Numbers that have stopped programs: past every range, past Int64, negative, zero.
private let hostileNumbers = ["9223372036854775807", "9223372036854775806", "4611686018427387904", "106751991167300",
                              "99999999999", "-9223372036854775808", "-1", "0"]

@Suite("Every number from a file, an option or a server is range-checked with one error line", .serialized)
struct NumbersCLITests {
    /// A filter configuration with `line` added to the table `table` ("" for the top).
    func filterConfig(_ home: TemporaryGnuPGHome, table: String, line: String) throws -> String {
        let token = home.path + "/token"
        FileManager.default.createFile(atPath: token, contents: Data("0123456789abcdef0123".utf8), attributes: [.posixPermissions: 0o600])
        var tables = ["": ["gnupg_home = \"\(home.path)\"", "log = \"none\""],
                      "reinject": ["method = \"smtp\""],
                      "journal": ["directory = \"\(home.path)/journal\""],
                      "reading": ["publish_url = \"http://127.0.0.1:9\"", "token_file = \"\(token)\""],
                      "listen": ["address = \"127.0.0.1:0\""]]
        tables[table, default: []].append(line)
        let text = tables[""]!.joined(separator: "\n") + "\n" + tables.keys.filter { !$0.isEmpty }.sorted().map { name in
            "[\(name)]\n" + tables[name]!.joined(separator: "\n")
        }.joined(separator: "\n") + "\n"
        let path = home.path + "/filter.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("filter.toml: each number out of range defers the pipe filter (75) and fails --check-config, one line naming the key",
          arguments: [("", "timeout"), ("reinject", "timeout"), ("reinject", "final_timeout"), ("reinject", "port"),
                      ("journal", "expire_days"), ("reading", "timeout"), ("reading", "lifetime_days"),
                      ("listen", "idle_timeout"), ("listen", "drain_timeout"), ("listen", "max_message_size"),
                      ("listen", "max_connections"), ("listen", "parallel"), ("listen", "max_connections_per_address"),
                      ("listen", "first_command_timeout")])
    func filterNumbers(table: String, key: String) throws {
        let mail = Array("From: alice@example.org\nTo: nobody@example.org\nSubject: s\nMessage-ID: <n.1@example.org>\n\nhello\n".utf8)
        let name = table.isEmpty ? key : "\(table).\(key)"
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            for number in hostileNumbers {
                let config = try filterConfig(home, table: table, line: "\(key) = \(number)")
                let piped = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--", "nobody@example.org"],
                                        input: mail, home: home)
                #expect(piped.status == 75, "\(name) = \(number): \(piped.status) \(piped.errors)")
                expectOneLine(piped)
                #expect(piped.errors.contains(name), "\(name) = \(number): \(piped.errors)")
                let checked = try mailsec(["filter", "--listen", "--check-config", "--config", config], home: home)
                #expect(checked.status != 0, "\(name) = \(number): --check-config said ok")
                #expect(checked.errors.contains(name) && checked.status < 128, "\(name) = \(number): \(checked.status) \(checked.errors)")
                #expect(!checked.errors.contains(number) || number == "0" || number == "-1", "the line repeats the value: \(checked.errors)")
            }
        }
    }

    @Test("config.toml: each number out of range is a problem of `config check` naming the key and its line",
          arguments: [("", "keep_sent_days"), ("submission", "port"), ("submission", "timeout"), ("submission", "password_timeout"),
                      ("reading", "timeout"),
                      ("reading", "lifetime_days")])
    func userNumbers(table: String, key: String) throws {
        let folder = try makePrivateDirectory(prefix: "ms-numbers")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let token = folder + "/token"
        FileManager.default.createFile(atPath: token, contents: Data("0123456789abcdef0123".utf8), attributes: [.posixPermissions: 0o600])
        let name = table.isEmpty ? key : "\(table).\(key)"
        for number in hostileNumbers where number != "0" || key != "keep_sent_days" {
            var text = "from = \"alice@example.org\"\n" + (table.isEmpty ? "\(key) = \(number)\n" : "")
            text += "[submission]\nhost = \"mail.example.org\"\nusername = \"alice\"\n" + (table == "submission" ? "\(key) = \(number)\n" : "")
            text += "[reading]\npublish_url = \"http://127.0.0.1:9\"\ntoken_file = \"\(token)\"\n" + (table == "reading" ? "\(key) = \(number)\n" : "")
            let path = folder + "/config.toml"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
            let checked = try mailsec(["config", "check", "--config", path])
            #expect(checked.status == 78, "\(name) = \(number): \(checked.status) \(checked.output)")
            #expect(checked.output.contains(name), "\(name) = \(number): \(checked.output)")
        }
    }

    @Test("options: huge, negative or zero days, seconds and counts are usage errors (64) with one line",
          arguments: [["serve", "--idle-timeout"], ["serve", "--request-timeout"], ["serve", "--lifetime-days"],
                      ["serve", "--max-connections"], ["encrypt", "--lifetime-days"], ["outbox", "watch", "--interval"]])
    func options(option: [String]) throws {
        let folder = try makePrivateDirectory(prefix: "ms-numbers")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        FileManager.default.createFile(atPath: folder + "/token", contents: Data("0123456789abcdef0123".utf8))
        for number in hostileNumbers {
            var arguments = option + [number]
            if option.first == "serve" { arguments += ["--token-file", folder + "/token", "--store", folder + "/store", "--port", "0"] }
            if option.first == "encrypt" { arguments += ["--out", folder + "/out", "-"] }
            let result = try mailsec(arguments, input: demoMail)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.errors)")
            #expect(result.errors.contains(option.last!), "\(arguments): \(result.errors)")
        }
    }

    @Test("reveal: a server whose document places span Int.min, Int.max or 0 gets a data error (65), one line, nothing printed")
    func revealHostileSpanNumbers() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let out = home.path + "/out"
            let published = try mailsec(["encrypt", "--gnupg-home", home.path, "--out", out, "--extension", "partially-encrypted",
                                         "--publish-url", server.url, "-"], input: dinnerMail,
                                        environment: ["MAILSEC_PUBLISH_TOKEN": server.token, "GNUPGHOME": home.path])
            #expect(published.status == 0, "\(published.errors)")
            let password = try #require(published.errors.split(separator: "\n").first { $0.hasPrefix("mailsec: password: ") }
                .map { String($0.dropFirst("mailsec: password: ".count)) })
            let manifest = try JSONSerialization.jsonObject(with: FileManager.default.contents(atPath: out + "/manifest.json")!) as! [String: Any]
            let link = try #require((manifest["readingPage"] as? [String: Any])?["url"] as? String)
            let id = try #require(link.components(separatedBy: "/r/").last)
            let fetched = try run("/usr/bin/curl", ["-sf", server.url + "/api/postcards/" + id])
            var document = try #require(try JSONSerialization.jsonObject(with: Data(fetched.stdout)) as? [String: Any])
            for number in ["-9223372036854775808", "9223372036854775807", "0", "-1"] {
                document["body"] = ["x", 1]
                var json = String(decoding: try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]), as: UTF8.self)
                json = json.replacingOccurrences(of: "\"body\":[\"x\",1]", with: "\"body\":[\"x\",\(number)]")
                let hostile = try OneDocumentServer(json)
                defer { hostile.stop() }
                let revealed = try mailsec(["reveal", "http://127.0.0.1:\(hostile.port)/r/" + id], input: Array((password + "\n").utf8))
                #expect(revealed.status == 65, "\(number): \(revealed.status) \(revealed.errors)")
                expectOneLine(revealed)
                #expect(revealed.stdout.isEmpty)
            }
        }
    }
}

/// A real HTTP server (Python's http.server) that answers every GET with one JSON document.
final class OneDocumentServer {
    let process = Process()
    let port: Int
    let folder: String

    init(_ json: String) throws {
        folder = try makePrivateDirectory(prefix: "ms-onedoc")
        try json.write(toFile: folder + "/doc.json", atomically: true, encoding: .utf8)
        let script = """
            import http.server, sys
            body = open(sys.argv[1], 'rb').read()
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    self.send_response(200)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *a): pass
            s = http.server.HTTPServer(('127.0.0.1', 0), H)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, folder + "/doc.json"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(10), let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty { line += byte }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown)
        }
        self.port = port
    }

    func stop() {
        // SIGKILL: a child of the test runner may have SIGTERM blocked.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
    }
}
