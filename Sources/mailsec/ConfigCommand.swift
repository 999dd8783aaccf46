import ArgumentParser
import Foundation
import Settings

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check the sending configuration.",
        subcommands: [ConfigCheck.self]
    )
}

struct ConfigCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Say what is wrong with the configuration, one line per problem (with its line number).",
        discussion: """
            Reads $XDG_CONFIG_HOME/mailsec/config.toml (or --config) as send, sendmail and outbox \
            would, and prints FILE:LINE: PROBLEM for each problem found, or 'FILE: ok'. It does not \
            run password_command nor connect. Exit status: 0 fine, 78 (EX_CONFIG) problems found.
            """)

    @OptionGroup var configOption: ConfigOption

    func run() throws {
        let problems = UserConfig.check(path: configOption.path)
        guard problems.isEmpty else {
            report(problems, to: FileHandle.standardOutput)
            throw ExitCode(ExitStatus.config.rawValue)
        }
        print("\(configOption.path): ok")
    }
}

/// Writes each problem of a configuration as its one line, `FILE:LINE: problem`
/// (``ConfigError/description``): `config check` on standard output,
/// `filter --check-config` on standard error, the same lines.
func report(_ problems: [ConfigError], to output: FileHandle) {
    for problem in problems { output.write(Data((oneLine(problem.description) + "\n").utf8)) }
}
