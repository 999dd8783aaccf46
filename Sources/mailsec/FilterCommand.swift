import ArgumentParser
import Filter
import FilterDaemon
import Foundation
import OpenPGP
import Settings

struct FilterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "filter",
        abstract: "Run as a sendmail/Postfix content filter: message on stdin, copies handed back on.",
        discussion: """
            Invoked like Postfix's simple content filter (pipe(8)): 'mailsec filter --config FILE \
            -f ${sender} -- ${recipient}'. On failure it prints one line, which becomes the bounce \
            or defer text.

            'mailsec filter --listen [ADDR:PORT] --config FILE' runs the resident filter instead: an \
            SMTP (or LMTP) server for Postfix's after-queue content filter set-up, on the address of \
            filter.toml's [listen] table (default 127.0.0.1:10025; port 0: any free port). It prints \
            'mailsec filter: listening on ADDR:PORT' once it accepts mail, tells systemd READY=1 when \
            $NOTIFY_SOCKET is set, logs one line per mail on stderr, answers 250 once every copy was \
            handed on, 451 for anything temporary, 554 for bad input or a refusal. SIGHUP reloads \
            filter.toml (a broken one keeps the running one); SIGTERM stops accepting, lets the mails \
            in progress finish within drain_timeout and exits 0. With --check-config it only checks \
            the configuration: one line per problem, exit 0 or 78.

            \(ExitStatus.section([
                (.success, "every copy handed on"),
                (.dataError, "bad message (Postfix bounces it)"),
                (.refused, "refused by policy (Postfix bounces it)"),
                (.temporary, "anything transient or unexpected, an unreadable configuration and wrong arguments included "
                    + "(Postfix keeps the mail and retries)"),
            ]))
            """
    )

    static let defaultConfig = "/etc/mailsec/filter.toml"

    @Option(help: ArgumentHelp("The TOML configuration (default: \(defaultConfig)); without one, mail is deferred.",
                               valueName: "file"))
    var config: String?

    @Option(name: .customShort("f"), help: ArgumentHelp("The envelope sender; empty for the null sender.", valueName: "sender"))
    var sender: String?

    @Flag(help: ArgumentHelp("Run the resident filter, on ADDR:PORT when given after it (default: filter.toml's [listen] address)."))
    var listen = false

    @Flag(help: "With --listen: only check the configuration, one line per problem (0 or 78).")
    var checkConfig = false

    @Argument(help: ArgumentHelp("Envelope recipients, after --; with --listen, the address to listen on.", valueName: "recipient"))
    var recipients: [String] = []

    /// How the resident filter is started, for its usage errors.
    static let listenUsage = "(usage: mailsec filter --listen [ADDR:PORT] --config FILE [--check-config])"

    func validate() throws {
        guard !listen else { return }
        // The pipe filter's arguments, as Postfix's master.cf gives them.
        guard sender != nil else { throw ValidationError("Missing expected argument '-f <sender>'") }
        if checkConfig { throw ValidationError("--check-config goes with --listen") }
    }

    func run() async throws {
        guard listen else { Self.filter(config: config, sender: sender ?? "", recipients: recipients) }
        // argument-parser has no option whose value may be left out: the address is the one word after --listen.
        if let extra = sender != nil ? "-f" : recipients.dropFirst().first {
            fail("filter --listen: unexpected argument '\(extra)' " + Self.listenUsage, status: .usage)
        }
        var address: (host: String, port: Int)?
        if let word = recipients.first {
            do { address = try ListenConfig.address(word) } catch { fail("filter --listen: \(error)", status: .usage) }
        }
        await Self.listen(config: config ?? Self.defaultConfig, address: address, checkOnly: checkConfig)
    }

    /// The command line as Postfix's pipe(8) gives it, `filter [--config FILE]
    /// -f SENDER -- RECIPIENT…` (options in either order, `--config=FILE`
    /// too), read without argument-parser: the filter runs once per mail, and
    /// parsing through the command tree costs every mail the runtime's
    /// conformance look-ups: in a release build 46.6 million instructions
    /// (callgrind: 18.1 M for a deferred mail this way, 64.7 M through the
    /// parser) and 14 ms of user time, half the floor of case 1 in
    /// `scripts/bench`. Anything else, --help or an unknown option say,
    /// returns nil and goes through argument-parser as before.
    static func plainInvocation(_ arguments: [String]) -> (config: String?, sender: String, recipients: [String])? {
        guard arguments.first == "filter", let end = arguments.firstIndex(of: "--") else { return nil }
        var config: String?, sender: String?
        var index = 1
        while index < end {
            let argument = arguments[index]
            if argument.hasPrefix("--config="), config == nil {
                config = String(argument.dropFirst("--config=".count))
                index += 1
                continue
            }
            guard index + 1 < end, !arguments[index + 1].hasPrefix("-") else { return nil }
            switch argument {
            case "--config" where config == nil: config = arguments[index + 1]
            case "-f" where sender == nil: sender = arguments[index + 1]
            default: return nil
            }
            index += 2
        }
        guard let sender else { return nil }
        return (config, sender, Array(arguments[(end + 1)...]))
    }

    static func filter(config: String?, sender: String, recipients: [String]) -> Never {
        let settings: FilterConfig
        do {
            settings = try FilterConfig.load(path: config ?? Self.defaultConfig)
        } catch {
            finish(FilterResult.unreadableConfiguration(error), log: .syslog)
        }
        let started = ContinuousClock.now
        GnuPG.makeHomeTheDefault(settings.gnupgHome)
        GnuPG.startLibrarySetUp()
        // The re-injection session opens while the mail is encrypted (SMTP only).
        let reinjection = settings.prepareHandover()
        // Every wait has a limit below the MTA's: past it the mail is deferred, not bounced.
        let watchdog = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "mailsec.watchdog"))
        watchdog.schedule(deadline: .now() + settings.timeout)
        watchdog.setEventHandler {
            let line = "mailsec: deferred: no result within \(Int(settings.timeout)) s (gpg or re-injection hung); the mail stays queued\n"
            _ = line.withCString { Glibc.write(STDERR_FILENO, $0, strlen($0)) }
            Stop.killRunningChild()  // no sendmail child outlives the filter
            _exit(MailFilter.deferred)
        }
        watchdog.resume()
        // SIGTERM and SIGINT end the hand-over between copies (what went out is
        // journalled) and the mail is deferred: 75, never a half-sent mail.
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: DispatchQueue(label: "mailsec.signals"))
            source.setEventHandler { Stop.request() }
            source.resume()
            return source
        }
        let input = Array(FileHandle.standardInput.readDataToEndOfFile())
        let resources = FilterResources(keys: nil, reinjection: reinjection)
        let result = withExtendedLifetime(signals) {
            MailFilter(config: settings, resources: resources).run(input, sender: sender, recipients: recipients)
        }
        reinjection?.closeAll()  // QUIT, without waiting for its answer
        // A few seconds at most, and well inside the watchdog's limit.
        let elapsed = ContinuousClock.now - started
        // The error line goes to stderr on its own (the MTA's bounce or defer text); the plain log line is without it.
        let line = result.line(format: settings.logFormat, addresses: settings.logAddresses, sender: sender, recipients: recipients,
                               seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
                               plainError: false)
        finish(result, log: settings.log, line: line, setUpWait: min(3, settings.timeout / 2))
    }

    /// Runs the resident filter on `address` (or the configuration's), or
    /// only checks its configuration, and exits.
    static func listen(config path: String, address: (host: String, port: Int)?, checkOnly: Bool) async -> Never {
        if checkOnly {
            let problems = ResidentFilter.check(configPath: path, address: address)
            report(problems, to: FileHandle.standardError)
            Foundation.exit(problems.isEmpty ? 0 : ResidentFilter.configError)
        }
        Foundation.exit(await ResidentFilter.run(configPath: path, address: address))
    }

    /// Logs the mail's line, prints the error line if any, and exits.
    ///
    /// First it waits up to `setUpWait` seconds for GPGME's set-up (begun at
    /// the start, see ``GnuPG/startLibrarySetUp()``), so that `exit` does not
    /// tear the libraries down under its thread. A mail that used GnuPG has
    /// waited for the set-up already; one rejected early has not, and if the
    /// probe's gpg hangs it must not wait for the watchdog's 75: past the
    /// bound the filter leaves with `_exit` and the mail's own result. That is
    /// sound with the probe thread still running: the result does not depend
    /// on the probe (nothing used GnuPG, or it would have waited for it),
    /// `_exit` runs no exit handlers or destructors that the thread could
    /// trip over, and nothing is left unwritten (the log and error lines go out
    /// unbuffered, through `syslog` and `write`, before it). The hung gpg is
    /// the probe's child, not a hand-over: no copy goes out twice or half.
    /// `line` is the log line (`log_format`); nil: the result's plain one.
    static func finish(_ result: FilterResult, log: LogDestination, line: String? = nil, setUpWait: TimeInterval = 0) -> Never {
        let settled = GnuPG.awaitLibrarySetUp(within: setUpWait)
        let line = line ?? result.logLine
        switch log {
        case .syslog:
            openlog("mailsec", LOG_PID, LOG_MAIL)
            withVaList([line]) { vsyslog(result.status == 0 ? LOG_INFO : LOG_WARNING, "%s", $0) }
        case .stderr where result.errorLine == nil:
            FileHandle.standardError.write(Data("mailsec: \(line)\n".utf8))
        default:
            break
        }
        let status = result.errorLine == nil ? 0 : (ExitStatus(rawValue: result.status) ?? .temporary).rawValue
        if let line = result.errorLine { warn(line) }
        if !settled { _exit(status) }
        Foundation.exit(status)
    }
}
