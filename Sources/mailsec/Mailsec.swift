import ArgumentParser
import SharedStore
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
            CommandGroup(name: "Sending", subcommands: [SendCommand.self, SendmailCommand.self, OutboxCommand.self, ConfigCommand.self]),
            CommandGroup(name: "Servers", subcommands: [FilterCommand.self, ServeCommand.self]),
        ]
    )

    /// Runs the command; every failure ends as one line on stderr.
    ///
    /// Everything goes through argument-parser (`help`, completions, the
    /// help dump the man pages are made of) except two: `sendmail`, whose
    /// arguments are sendmail's (`-oi`, `-f ADDR`, `-bm` …) and no grammar
    /// argument-parser reads, and the pipe filter's own command line, read
    /// without the parser because parsing costs every mail the runtime's
    /// protocol-conformance look-ups over the whole command tree (release
    /// build: 14 ms of user time and 46.6 million instructions per mail;
    /// ``FilterCommand/plainInvocation(_:)``, docs/hacking.md).
    /// Argument-parser's errors and help pass through ``finish(_:_:_:)``.
    static func main() async {
        // The filter's `[store]`: key continuity in the shared database (SharedStore links postgres-nio; Filter does not).
        SharedStore.install()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "sendmail" && !arguments.contains("--help") {
            await SendmailCommand.queueAndDeliver(Array(arguments.dropFirst()))
        }
        if let filter = FilterCommand.plainInvocation(arguments) {
            FilterCommand.filter(config: filter.config, sender: filter.sender, recipients: filter.recipients)
        }
        let leaf = GlobalOptions.movedToLeaf(arguments)
        do {
            var command = try parseAsRoot(leaf)
            // argument-parser's own `help` shows the help of any words it is given: an unknown one is our usage error.
            if type(of: command)._commandName == "help", leaf.first == "help", let problem = helpProblem(Array(leaf.dropFirst())) {
                fail(problem, status: .usage)
            }
            // `mailsec`, `mailsec keys`: a group, no command (`mailsec outbox`, `mailsec drafts` list by default).
            let named = commandPath(leaf)
            if ObjectIdentifier(named.type) == ObjectIdentifier(type(of: command)), let line = needsCommand(named) {
                fail(line, status: .usage)
            }
            if var command = command as? AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch {
            finish(error, arguments, leaf)
        }
    }

    /// Ends with the error's one line and status.
    static func finish(_ error: any Error, _ arguments: [String], _ leaf: [String]) -> Never {
        if let code = error as? ExitCode { Foundation.exit(code.rawValue) }
        let code = exitCode(for: error)
        if arguments.first(where: { !$0.hasPrefix("-") }) == "filter", code != .success {
            // The resident filter is started by a person or a unit file: a usage error.
            if arguments.contains("--listen") {
                fail("filter --listen: " + message(for: error) + " " + FilterCommand.listenUsage, status: .usage)
            }
            // As a filter, wrong arguments are a mis-edited master.cf: defer, never bounce.
            fail("deferred: " + message(for: error) + " (check the filter's command line)", status: .temporary)
        }
        if code == .success { exit(withError: error) }  // --help, --version, help, completions
        if code == .validationFailure {
            if leaf.first == "help", let problem = helpProblem(Array(leaf.dropFirst())) { fail(problem, status: .usage) }
            let named = commandPath(leaf)
            if let line = needsCommand(named) { fail(line, status: .usage) }
            fail(message(for: error) + " (see '\(named.name) --help')", status: .usage)
        }
        fail(describe(error), status: ExitStatus(for: error))
    }

    /// The line for a group of commands named without one of its commands
    /// (`mailsec keys`), nil for a command, or a group that has a default one.
    static func needsCommand(_ named: (type: ParsableCommand.Type, name: String, rest: [String])) -> String? {
        let group = named.type.configuration.subcommands.map { $0._commandName }
        guard !group.isEmpty, named.type.configuration.defaultSubcommand == nil else { return nil }
        return "\(named.name) needs a command: \(group.joined(separator: ", ")) (see '\(named.name) --help')"
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

    /// What is wrong with `mailsec help WORDS…`: a command that does not
    /// exist, or an option; nil when the words name a command.
    static func helpProblem(_ words: [String]) -> String? {
        let found = commandPath(words)
        if let unknown = found.rest.first { return "\(found.name) has no command '\(unknown)' (see '\(found.name) --help')" }
        if let option = words.first(where: { $0.hasPrefix("-") }) { return "help takes command names, not '\(option)' (see 'mailsec --help')" }
        return nil
    }
}
