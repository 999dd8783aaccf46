import ArgumentParser
import Foundation
import MIME
import OpenPGP

/// The `mailsec` command line tool.
@main
struct Mailsec: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "mailsec",
        abstract: "Encrypted mail with OpenPGP: letters for recipients with keys, postcards for the rest.",
        discussion: """
            Errors are one line on standard error. Exit status: 0 success, 64 usage error, \
            65 bad message (for example unbalanced markers), 66 input not readable, 69 refused by \
            policy (a letter is required but a key is missing), 73 output cannot be made, \
            75 temporary failure (try again: agent unreachable), 1 any other failure.
            """,
        version: "mailsec \(version) (GPGME \(GnuPG.libraryVersion ?? "unavailable"), GMime \(MIMELibrary.version))",
        subcommands: [PlanCommand.self, Encrypt.self, Redact.self, Decrypt.self, Keys.self, FilterCommand.self, Serve.self, Reveal.self, Verify.self, AutocryptCommand.self,
                      SendCommand.self, SendmailHelp.self, OutboxCommand.self, ConfigCommand.self]
    )

    /// Runs the command; every failure ends as one line on stderr.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "sendmail" && !arguments.contains("--help") { SendmailCommand.run(Array(arguments.dropFirst())) }
        if let filter = FilterCommand.plainInvocation(arguments) {
            FilterCommand.filter(config: filter.config, sender: filter.sender, recipients: filter.recipients)
        }
        do {
            var command = try parseAsRoot(GlobalOptions.movedToLeaf(arguments))
            try command.run()
        } catch {
            if let code = error as? ExitCode { Foundation.exit(code.rawValue) }
            let code = exitCode(for: error)
            // As a filter, wrong arguments are a mis-edited master.cf: defer, never bounce.
            if CommandLine.arguments.dropFirst().first(where: { !$0.hasPrefix("-") }) == "filter", code != .success {
                fail("deferred: " + message(for: error) + " (check the filter's command line)", status: .temporary)
            }
            if code == .success { exit(withError: error) }  // --help, --version
            if code == .validationFailure {
                fail(message(for: error) + " (see 'mailsec help')", status: .usage)
            }
            fail(describe(error), status: ExitStatus(for: error))
        }
    }
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong("gnupg-home"), help: ArgumentHelp(
        "The GnuPG home directory (default: $GNUPGHOME, then ~/.gnupg).", valueName: "dir"))
    var gnupgHome: String?

    var gnupg: GnuPG { GnuPG(home: gnupgHome) }

    /// gpg would quietly create a missing home and then find no keys, which
    /// reads like "nobody has a key": a mistyped path must fail instead.
    func validate() throws {
        var isDirectory: ObjCBool = false
        if let gnupgHome, !(FileManager.default.fileExists(atPath: gnupgHome, isDirectory: &isDirectory) && isDirectory.boolValue) {
            throw ValidationError("--gnupg-home \(gnupgHome) is not a directory")
        }
    }

    /// Lets the global options stand before the subcommand too
    /// (`mailsec --gnupg-home DIR keys lookup ADDR`): argument-parser reads
    /// options only in the leaf command, so they are moved behind the other
    /// arguments, yet before any `--`.
    static func movedToLeaf(_ arguments: [String]) -> [String] {
        let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
        var rest: [String] = [], global: [String] = []
        var index = arguments.startIndex
        while index < end {
            let argument = arguments[index]
            if argument == "--gnupg-home", index + 1 < end {
                global += [argument, arguments[index + 1]]
                index += 2
                continue
            }
            if argument.hasPrefix("--gnupg-home=") { global.append(argument) } else { rest.append(argument) }
            index += 1
        }
        return rest + global + arguments[end...]
    }
}
