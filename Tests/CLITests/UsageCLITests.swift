import Foundation
import TestSupport
import Testing

/// The commands a person runs, as words, with what each needs to get past
/// its required options.
let everyCommand: [[String]] = [["plan"], ["encrypt"], ["redact"], ["verify"], ["decrypt"], ["reveal"],
                                ["autocrypt", "import"], ["keys", "lookup"], ["keys", "import"], ["keys", "forget"], ["keys", "accept"], ["keys", "publish"],
                                ["contacts", "list"], ["contacts", "learn"], ["filter"], ["serve"],
                                ["compose"], ["reply"], ["forward"], ["drafts", "list"], ["drafts", "show"], ["drafts", "edit"],
                                ["drafts", "delete"], ["outbox", "edit"]]

/// The exit statuses a help text lists under EXIT STATUS.
func exitStatuses(inHelp help: String) -> Set<Int> {
    guard let section = help.components(separatedBy: "EXIT STATUS:").dropFirst().first else { return [] }
    var codes: Set<Int> = []
    for line in section.split(separator: "\n", omittingEmptySubsequences: false).dropFirst() {
        if line.hasPrefix("      ") { continue }  // a continuation
        guard line.hasPrefix("  "), let code = line.split(separator: " ").first.flatMap({ Int($0) }) else { break }
        codes.insert(code)
    }
    return codes
}

@Suite("The command line as a person meets it", .serialized)
struct UsageCLITests {
    @Test("no command, an unknown command, a group without its command: 64, one line, pointing to the right help")
    func usageErrors() throws {
        let cases: [([String], String)] = [
            ([], "see 'mailsec --help'"),
            (["help", "nosuch"], "see 'mailsec --help'"),
            (["help", "keys", "nosuch"], "see 'mailsec keys --help'"),
            (["keys"], "see 'mailsec keys --help'"),
            (["autocrypt"], "see 'mailsec autocrypt --help'"),
            (["nosuch"], "see 'mailsec --help'"),
            (["plan", "--bogus"], "see 'mailsec plan --help'"),
            (["keys", "lookup", "--bogus", "a@example.org"], "see 'mailsec keys lookup --help'"),
            (["--gnupg-home", "/tmp", "keys", "lookup", "--bogus", "a@example.org"], "see 'mailsec keys lookup --help'"),
            (["reveal"], "see 'mailsec reveal --help'"),
        ]
        for (arguments, pointer) in cases {
            let result = try mailsec(arguments)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.errors)")
            expectOneLine(result)
            #expect(result.errors.contains(pointer), "\(arguments): \(result.errors)")
            #expect(result.stdout.isEmpty, "\(arguments)")
        }
        // Asking for help is no error, at every level.
        // sendmail's own arguments are read by hand, all but --help (it showed none and exited 64 before);
        // the filter's --listen and --check-config are options of the one filter command.
        for words in [["plan"], ["keys"], ["keys", "lookup"], ["autocrypt", "import"], ["sendmail"], ["filter"]] {
            let help = try mailsec(["help"] + words)
            #expect(help.status == 0, "\(words): \(help.errors)")
            let direct = try mailsec(words + ["--help"])
            #expect(direct.status == 0 && direct.output == help.output, "\(words)")
            #expect(help.output.contains("USAGE: mailsec \(words.joined(separator: " "))"), "\(words)")
        }
        #expect(try mailsec(["--help"]).status == 0)
    }

    @Test("--min-validity takes GnuPG's names and numbers; each number means its name")
    func minValidity() throws {
        try withGnuPGHome(importing: ["alice.pub.asc", "bob.pub.asc"]) { home throws in
            // Alice's key becomes fully valid (ownertrust ultimate would need a secret key): marginal needs a signature,
            // so compare what each spelling decides rather than assume.
            let pairs = [("unknown", ["0", "1", "UNKNOWN"]), ("marginal", ["3", "Marginal"]), ("full", ["4"]), ("ultimate", ["5"])]
            for (name, spellings) in pairs {
                let byName = try mailsec(["keys", "lookup", "--json", "--min-validity", name, "alice@example.org"], home: home)
                #expect(byName.status == 0, "\(name): \(byName.errors)")
                for spelling in spellings {
                    let other = try mailsec(["keys", "lookup", "--json", "--min-validity", spelling, "alice@example.org"], home: home)
                    #expect(other.status == 0 && other.output == byName.output, "\(spelling) is not \(name)")
                }
            }
            let unknown = try mailsec(["keys", "lookup", "--min-validity", "unknown", "alice@example.org"], home: home)
            #expect(!unknown.output.contains("no usable key"), "\(unknown.output)")
            let full = try mailsec(["keys", "lookup", "--min-validity", "4", "alice@example.org"], home: home)
            #expect(full.output.contains("no usable key"), "an unsigned key is not fully valid: \(full.output)")
            for bad in ["2", "never", "6", "-1", "", "fully", "3.0"] {
                let result = try mailsec(["plan", "--min-validity", bad, "/nonexistent/mail.eml"], home: home)
                #expect(result.status == 64, "\(bad): \(result.errors)")
                expectOneLine(result)
            }
            let help = try mailsec(["plan", "--help"]).output
            for value in ["unknown", "marginal", "full", "ultimate"] { #expect(help.contains(value)) }
        }
    }

    @Test("--max-size: one unit with K, M or G everywhere, the limit exact; 0, junk and overflow refused before reading")
    func maxSize() throws {
        let folder = try makePrivateDirectory(prefix: "ms-size")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var generator = SystemRandomNumberGenerator()
        let head = Array("From: a@example.org\nTo: b@example.org\nSubject: s\n\n".utf8)
        for round in 0..<6 {
            // A random size, written in bytes or as K; the message is exactly that long, then one byte longer.
            let kibibytes = Int.random(in: 1...48, using: &generator)
            let limit = kibibytes << 10
            let spelling = [String(limit), "\(kibibytes)K", "\(kibibytes)k"][round % 3]
            let fits = head + [UInt8](repeating: 0x61, count: limit - head.count - 1) + [10]
            let over = fits + [10]
            let path = folder + "/mail.eml"
            for (input, ok) in [(fits, true), (over, false)] {
                FileManager.default.createFile(atPath: path, contents: Data(input))
                for arguments in [["redact", "--max-size", spelling, path], ["redact", "--max-size", spelling, "-"],
                                  ["verify", "--max-size", spelling, "-"], ["decrypt", "--max-size", spelling, "-"]] {
                    let result = try mailsec(arguments, input: input)
                    if ok {
                        #expect(!result.errors.contains("larger than the limit"), "\(arguments) \(input.count): \(result.errors)")
                    } else {
                        #expect(result.status == 65 && result.errors.contains("larger than the limit"),
                                "\(arguments) \(input.count): \(result.status) \(result.errors)")
                    }
                }
            }
        }
        // M and G are MiB and GiB: a 2 MiB mail passes 3M and fails 1M.
        let large = head + [UInt8](repeating: 0x61, count: 2 << 20) + [10]
        #expect(try mailsec(["redact", "--max-size", "3M", "-"], input: large).status == 0)
        #expect(try mailsec(["redact", "--max-size", "1M", "-"], input: large).status == 65)
        #expect(try mailsec(["redact", "--max-size", "1G", "-"], input: large).status == 0)
        #expect(try mailsec(["redact", "--max-size", "4095M", "-"], input: large).status == 0)
        // Beyond what the parser holds (a 32-bit GLib array): refused as given, not clamped quietly to another number.
        for beyond in ["5G", "4096M", "4294901760", "\(Int.random(in: 5...4096, using: &generator))G"] {
            for command in [["redact"], ["plan"], ["verify"], ["decrypt"]] {
                let result = try mailsec(command + ["--max-size", beyond, "-"], input: large)
                #expect(result.status == 64 && result.errors.contains("--max-size \(beyond) is more than mailsec reads: at most 4095M"),
                        "\(command) \(beyond): \(result.status) \(result.errors)")
                expectOneLine(result)
            }
        }
        for bad in ["0", "0K", "-1", "", "12X", "1.5M", "M", "9999999999999G", "99999999999999999999", " 1"] {
            for command in [["redact"], ["plan"], ["verify"], ["decrypt"], ["encrypt", "--out", folder + "/o"],
                            ["serve", "--token-file", "/nonexistent"]] {
                let result = try mailsec(command + ["--max-size", bad] + (command[0] == "serve" ? [] : ["/nonexistent/mail.eml"]))
                #expect(result.status == 64, "\(command) \(bad): \(result.status) \(result.errors)")
                expectOneLine(result)
                #expect(result.errors.contains("--max-size"), "\(command) \(bad): \(result.errors)")
            }
        }
    }

    @Test("read errors say why (66); encrypt --out says why its folder cannot be made (73)")
    func readErrors() throws {
        let folder = try makePrivateDirectory(prefix: "ms-read")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cases: [([String], String)] = [
            (["redact", folder], "cannot read \(folder): is a directory"),
            (["redact", folder + "/missing.eml"], "cannot read \(folder)/missing.eml: no such file"),
            (["verify", folder + "/missing.eml"], "no such file"),
            (["keys", "import", folder], "cannot read \(folder): is a directory"),
            (["reveal", "--password-from", folder + "/pw", "http://127.0.0.1:9/r/AAAAAAAAAAAAAAAAAAAAAA"], "no such file"),
        ]
        for (arguments, expected) in cases {
            let result = try mailsec(arguments)
            #expect(result.status == 66, "\(arguments): \(result.errors)")
            expectOneLine(result)
            #expect(result.errors.contains(expected), "\(arguments): \(result.errors)")
        }
        // Permission denied: as root the file must be read by somebody else.
        let secret = folder + "/secret.eml"
        FileManager.default.createFile(atPath: secret, contents: Data(demoMail), attributes: [.posixPermissions: 0o600])
        chmod(folder, 0o755)
        let denied = getuid() == 0
            ? try run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Paths.mailsecExecutable.path, "redact", secret])
            : try { chmod(secret, 0); return try mailsec(["redact", secret]) }()
        #expect(denied.status == 66, "\(denied.errors)")
        #expect(denied.errors == "mailsec: cannot read \(secret): permission denied\n", "\(denied.errors)")

        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            FileManager.default.createFile(atPath: folder + "/file", contents: Data())
            for (out, expected) in [(folder + "/no/such/out", "the folder \(folder)/no/such does not exist"),
                                    (folder + "/file/out", "\(folder)/file is not a folder")] {
                let result = try mailsec(["encrypt", "--out", out, "-"], input: demoMail, home: home)
                #expect(result.status == 73, "\(out): \(result.errors)")
                expectOneLine(result)
                #expect(result.errors.contains("cannot create \(out): \(expected)"), "\(result.errors)")
            }
        }
    }

    @Test("keys import of a file that holds no key: 65, naming the file")
    func importHoldsNoKey() throws {
        try withGnuPGHome { home throws in
            let path = home.path + "/notes.txt"
            FileManager.default.createFile(atPath: path, contents: Data("not a key\n".utf8))
            let file = try mailsec(["keys", "import", path], home: home)
            #expect(file.status == 65)
            #expect(file.errors == "mailsec: \(path) holds no key\n", "\(file.errors)")
            let stdin = try mailsec(["keys", "import", "-"], input: Array("garbage".utf8), home: home)
            #expect(stdin.status == 65 && stdin.errors == "mailsec: standard input holds no key\n", "\(stdin.errors)")
            // A good file first, then the bad one: nothing is imported (all are read first, the bad one is named).
            let mixed = try mailsec(["keys", "import", Paths.key("alice.pub.asc").path, path], home: home)
            #expect(mixed.status == 65 && mixed.errors.contains(path))
        }
    }

    @Test("option values are checked before anything is read")
    func optionValues() throws {
        let missing = "/nonexistent/mail.eml"  // 66 if it were read: a 64 shows the check came first
        let bad: [[String]] = [
            ["plan", "--from", "x y <z>"], ["plan", "--from", ""], ["plan", "--from", "Alice <alice@example.org>"],
            ["plan", "--from", "alice@"], ["plan", "--from", "alice@example..org"],
            ["plan", "--require-letter-for", ""], ["plan", "--require-letter-for", "a b"], ["plan", "--require-letter-for", "*."],
            ["plan", "--require-letter-for", "@example.org"], ["encrypt", "--out", "/tmp/ms-x", "--require-letter-for", "-x.org"],
            ["plan", "--sign-as", ""], ["plan", "--open-marker", ""], ["redact", "--open-marker", "[[x]]", "--close-marker", "[[x]]"],
            ["encrypt", "--out", "/tmp/ms-x", "--extension", "partially-encrypted", "--publish-url", "ftp://x"],
            ["serve", "--token-file", "/nonexistent", "--lifetime-days", "0"],
        ]
        for arguments in bad {
            let result = try mailsec(arguments + (arguments[0] == "serve" ? [] : [missing]))
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.errors)")
            expectOneLine(result)
        }
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            for arguments in [["plan", "--from", "alice@example.org"], ["plan", "--require-letter-for", "*.example.gov"],
                              ["plan", "--require-letter-for", "example.org", "--require-letter-for", "bücher.example"]] {
                let result = try mailsec(arguments + ["-"], input: demoMail, home: home)
                #expect(result.status == 0, "\(arguments): \(result.errors)")
            }
        }
    }

    @Test("on a terminal with no file, the reading commands say they read standard input")
    func terminalInput() throws {
        for command in [["plan"], ["encrypt", "--out", "/tmp/ms-never-made"], ["redact"], ["verify"], ["decrypt"]] {
            let shown = try runOnTerminal([Paths.mailsecExecutable.path] + command, seconds: 1.5)
            #expect(shown.contains("reading the message from standard input (end with Ctrl-D)"), "\(command): \(shown)")
        }
        // Not on a pipe: scripts get no chatter.
        let piped = try mailsec(["redact"], input: demoMail)
        #expect(piped.status == 0 && piped.errors.isEmpty, "\(piped.errors)")
    }

    @Test("help reads like a man page: grouped commands and options, JSON contracts, every exit status")
    func helpTexts() throws {
        let root = try mailsec(["--help"]).output
        for title in ["WRITING MAIL SUBCOMMANDS:", "READING MAIL SUBCOMMANDS:", "KEYS SUBCOMMANDS:", "SERVERS SUBCOMMANDS:"] {
            #expect(root.contains(title), "\(title)")
        }
        let writing = try #require(root.components(separatedBy: "WRITING MAIL SUBCOMMANDS:").last?
            .components(separatedBy: "READING MAIL").first)
        #expect(["plan", "encrypt", "redact"].allSatisfy { writing.contains("  \($0) ") })
        let plan = try mailsec(["plan", "--help"]).output
        for title in ["POLICY:", "MARKERS:", "GNUPG:", "OUTPUT:"] { #expect(plan.contains(title), "plan: \(title)") }
        let policy = try #require(plan.components(separatedBy: "POLICY:").last?.components(separatedBy: "MARKERS:").first)
        #expect(policy.contains("--require-letter-for") && policy.contains("--min-validity") && !policy.contains("--open-marker"))
        // The JSON contracts stand beside --json.
        for (command, fields) in [(["plan"], ["recipientState", "mailState", "copies"]), (["verify"], ["coverage", "fromMatches"]),
                                  (["decrypt"], ["protectedHeaders", "signature"]), (["keys", "lookup"], ["chosen", "candidates"]),
                                  (["autocrypt", "import"], ["imported", "reason"])] {
            let help = try mailsec(command + ["--help"]).output
            let output = try #require(help.components(separatedBy: "OUTPUT:").last, "\(command)")
            for field in fields { #expect(output.contains(field), "\(command): \(field)") }
        }
        #expect(try mailsec(["encrypt", "--help"]).output.contains("--password-to"))
        #expect(try mailsec(["reveal", "--help"]).output.contains("--password-from"))
        // Every command lists its exit statuses, and docs/cli.md lists the same ones.
        let manual = try String(contentsOf: Paths.root.appendingPathComponent("docs/cli.md"), encoding: .utf8)
        for command in everyCommand {
            let help = try mailsec(command + ["--help"])
            #expect(help.status == 0)
            let listed = exitStatuses(inHelp: help.output)
            #expect(listed.contains(0) && listed.contains(64) || command == ["filter"], "\(command): \(listed)")
            let name = "`mailsec " + command.joined(separator: " ") + "`"
            let row = try #require(manual.split(separator: "\n").first { $0.hasPrefix("| \(name) |") }, "docs/cli.md: \(name)")
            let documented = Set(row.split(separator: "|")[1].split(separator: ",").compactMap {
                Int($0.trimmingCharacters(in: .whitespaces))
            })
            #expect(documented == listed, "\(command): docs/cli.md \(documented.sorted()), help \(listed.sorted())")
        }
    }
}
