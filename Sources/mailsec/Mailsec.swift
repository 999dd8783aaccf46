import ArgumentParser
import Foundation
import MIME
import OpenPGP

/// The `mailsec` command line tool.
@main
struct Mailsec: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "mailsec",
        abstract: "Encrypted mail with OpenPGP: letters for recipients with keys, postcards for the rest.",
        discussion: """
            Each command reads one message (a file, or - for standard input) and writes its \
            result on standard output, one file or one folder. Errors are one line on \
            standard error that never quotes the message. Every command that touches keys \
            takes --gnupg-home DIR (default: $GNUPGHOME, then ~/.gnupg). 'mailsec COMMAND \
            --help' describes a command, its options and its exit status. \
            'mailsec --generate-completion-script bash|zsh|fish' writes a shell completion \
            script (addresses for --to, --cc, --bcc from 'mailsec contacts'; see docs/cli.md).

            \(ExitStatus.section([
                (.success, "done"),
                (.failure, "the answer is no: not verified (verify), nothing imported (autocrypt import); GnuPG refused for good"),
                (.usage, "usage error: an unknown command or option, or an option value that is not acceptable"),
                (.dataError, "bad input: not a message, unbalanced markers, a file that holds no key"),
                (.noInput, "an input cannot be read: no such file, a folder, permission denied"),
                (.refused, "refused by policy: a letter is required but a key is missing, unsafe ciphertext"),
                (.cannotCreate, "an output cannot be made"),
                (.temporary, "temporary or unexpected failure: try again (agent unreachable, server down)"),
            ]))
            """,
        version: "mailsec \(version) (GPGME \(GnuPG.libraryVersion ?? "unavailable"), GMime \(MIMELibrary.version))",
        groupedSubcommands: [
            CommandGroup(name: "Writing mail", subcommands: [ComposeCommand.self, ReplyCommand.self, ForwardCommand.self,
                                                             DraftsCommand.self, PlanCommand.self, EncryptCommand.self, RedactCommand.self,
                                                             ContactsCommand.self]),
            CommandGroup(name: "Reading mail", subcommands: [VerifyCommand.self, DecryptCommand.self, RevealCommand.self, AutocryptCommand.self]),
            CommandGroup(name: "Keys", subcommands: [KeysCommand.self]),
            CommandGroup(name: "Sending", subcommands: [SendCommand.self, SendmailHelp.self, OutboxCommand.self, ConfigCommand.self]),
            CommandGroup(name: "Servers", subcommands: [FilterCommand.self, ServeCommand.self]),
        ]
    )

    /// Runs the command; every failure ends as one line on stderr.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // The shells' completion scripts: `---completion …` and `--generate-completion-script SHELL`,
        // and the help dump the man pages are generated from (`--experimental-dump-help`, read by
        // swift-argument-parser's generate-manual), go to argument-parser as they are (they name no
        // command of ours).
        if arguments.first == "---completion" || arguments.first?.hasPrefix("--generate-completion-script") == true
            || arguments.first == "--experimental-dump-help" {
            do { var command = try parseAsRoot(arguments); try command.run() } catch { finish(error, arguments, arguments) }
            Foundation.exit(0)
        }
        if arguments.first == "sendmail" && !arguments.contains("--help") { await SendmailCommand.run(Array(arguments.dropFirst())) }
        if arguments.first == "filter" && arguments.contains("--listen")
            && !arguments.contains(where: { ["-h", "--help"].contains($0) }) {
            FilterCommand.listen(Array(arguments.dropFirst()))
        }
        if let filter = FilterCommand.plainInvocation(arguments) {
            FilterCommand.filter(config: filter.config, sender: filter.sender, recipients: filter.recipients)
        }
        if arguments.first == "help" { help(Array(arguments.dropFirst())) }
        let leaf = GlobalOptions.movedToLeaf(arguments)
        let named = commandPath(leaf)
        let group = named.type.configuration.subcommands.map { $0._commandName }
        let asksForHelp = leaf.contains { ["-h", "--help", "--version"].contains($0) }
        // `mailsec`, `mailsec keys`: a group, no command (`mailsec outbox`, `mailsec drafts` list by default).
        if !group.isEmpty && named.type.configuration.defaultSubcommand == nil && !asksForHelp {
            fail("\(named.name) needs a command: \(group.joined(separator: ", ")) (see '\(named.name) --help')",
                 status: .usage)
        }
        do {
            var command = try parseAsRoot(leaf)
            if var command = command as? AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch {
            finish(error, arguments, leaf)
        }
    }

    /// Ends with the error's one line and status.
    static func finish(_ error: any Error, _ arguments: [String], _ leaf: [String]) -> Never {
        if let code = error as? ExitCode { Foundation.exit(code.rawValue) }
        let code = exitCode(for: error)
        // As a filter, wrong arguments are a mis-edited master.cf: defer, never bounce.
        if arguments.first(where: { !$0.hasPrefix("-") }) == "filter", code != .success {
            fail("deferred: " + message(for: error) + " (check the filter's command line)", status: .temporary)
        }
        if code == .success { exit(withError: error) }  // --help, --version
        if code == .validationFailure {
            fail(message(for: error) + " (see '\(commandPath(leaf).name) --help')", status: .usage)
        }
        fail(describe(error), status: ExitStatus(for: error))
    }

    /// The command the arguments name, as far as they name one: its type
    /// and its words (`mailsec keys lookup`). Options and what follows the
    /// first word that names no subcommand are not looked at.
    static func commandPath(_ arguments: [String]) -> (type: ParsableCommand.Type, name: String, rest: [String]) {
        var current: ParsableCommand.Type = Mailsec.self
        var name = "mailsec"
        var words = arguments.prefix { $0 != "--" }.filter { !$0.hasPrefix("-") }[...]
        while let word = words.first,
              let next = current.configuration.subcommands.first(where: { $0._commandName == word }) {
            current = next
            name += " " + word
            words.removeFirst()
        }
        return (current, name, Array(words))
    }

    /// `mailsec help [COMMAND…]`: the command's help on standard output, or a
    /// usage error for a command that does not exist.
    static func help(_ words: [String]) -> Never {
        let found = commandPath(words)
        if let unknown = found.rest.first {
            fail("\(found.name) has no command '\(unknown)' (see '\(found.name) --help')", status: .usage)
        }
        if let option = words.first(where: { $0.hasPrefix("-") }) {
            fail("help takes command names, not '\(option)' (see 'mailsec --help')", status: .usage)
        }
        print(helpMessage(for: found.type))
        Foundation.exit(0)
    }
}
