import Foundation

/// Runs `executable` on a pseudo-terminal of its own (script(1)), as when a
/// person runs it: its `/dev/tty` is that terminal. Standard output and error
/// go to files apart from it, so `terminal` is only what was written to
/// `/dev/tty` (line ends as a terminal shows them). Standard input is empty.
public func runOnTerminal(_ executable: String, _ arguments: [String],
                          environment: [String: String]) throws -> (result: ProcessResult, terminal: String) {
    let folder = try makePrivateDirectory(prefix: "ms-tty")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" }
    let command = ([executable] + arguments).map(quoted).joined(separator: " ")
        + " >" + quoted(folder + "/out") + " 2>" + quoted(folder + "/err")
    var environment = environment
    environment["SHELL"] = "/bin/sh"
    let shown = try run("script", ["-qec", command, "/dev/null"], environment: environment)
    let out = FileManager.default.contents(atPath: folder + "/out") ?? Data()
    let err = FileManager.default.contents(atPath: folder + "/err") ?? Data()
    return (ProcessResult(status: shown.status, stdout: Array(out), stderr: Array(err)), shown.output)
}
