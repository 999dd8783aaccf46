import ArgumentParser
import Foundation
import MIME
import Outbox
import Pipeline
import Sending
import Settings

/// `mailsec sendmail`: the sendmail command line that mail clients call
/// (neomutt's `sendmail`, git send-email's `--sendmail-cmd`, aerc's
/// `outgoing`). Read without argument-parser, as sendmail's own flags
/// (`-oi`, `-f ADDR`, `-F NAME`, `-odb` …) are not its grammar: `main`
/// hands them to ``queueAndDeliver(_:)``; argument-parser sees only
/// `sendmail --help` (and the help dump, the completions).
///
/// It exits 0 once the mail is safely in the outbox — the client must not
/// keep it for a retry of its own — and says in one line on standard error
/// when it was only queued or a recipient failed; 65 (bad message) or 69
/// (refused by policy) when nothing was queued; 75 only when it could not
/// even queue (the client keeps the mail).
struct SendmailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sendmail",
        abstract: "The sendmail interface for mail clients: queue in the outbox, then deliver.",
        discussion: """
            mailsec sendmail [-t] [-i] [-oi] [-f ADDR] [-F NAME] [-C CONFIG] [--] [RCPT…]. The mail \
            on standard input; recipients from the command line, or with -t from To, Cc and Bcc \
            (command-line recipients are added). -f sets the envelope sender (default: 'from' of \
            the configuration), -F the name for a From header the mail lacks. Without -i (or -oi) a \
            line with a single dot ends the input. Other sendmail flags mail clients pass (-odb, \
            -oem, -B 8BITMIME …) are accepted and ignored. Exit status: 0 once the mail is safely \
            in the outbox (a line on standard error says when it was only queued, or a recipient \
            failed); 65 bad message and 69 refused by policy, with nothing queued; 75 only when it \
            could not queue (the client keeps the mail). For neomutt: set sendmail="mailsec \
            sendmail"; git: git send-email --sendmail-cmd="mailsec sendmail"; aerc: outgoing = \
            mailsec sendmail.
            """)

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("sendmail's arguments.", valueName: "arguments"),
              completion: AddressCompletion.kind)
    var arguments: [String] = []

    /// Only for `mailsec sendmail --help`, which argument-parser would
    /// otherwise take as one of sendmail's arguments.
    func run() async throws {
        if arguments.contains("--help") { throw CleanExit.helpRequest(self) }
        await Self.queueAndDeliver(arguments)
    }

    struct Invocation: Equatable {
        var readRecipientsFromHeaders = false
        /// `-i` / `-oi`: a line with a single dot does not end the input.
        var ignoreDots = false
        var sender: String?
        var fullName: String?
        var config: String?
        var recipients: [String] = []
    }

    /// Parses sendmail's arguments (after the word `sendmail`). Flags
    /// mail clients pass that mean nothing here (`-odb`, `-oem`, `-B 8BITMIME`,
    /// `-N …`, `-R …`, `-V …`, `-bm`, `-U`, `-G`, `-v`) are accepted and ignored.
    static func parse(_ arguments: [String]) throws -> Invocation {
        var invocation = Invocation()
        var index = 0
        func value(_ flag: String, _ attached: Substring) throws -> String {
            if !attached.isEmpty { return String(attached) }
            index += 1
            guard index < arguments.count else { throw CommandFailure("sendmail: \(flag) needs a value", status: .usage) }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                invocation.recipients += arguments[(index + 1)...]
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1 else {
                invocation.recipients.append(argument)
                index += 1
                continue
            }
            let flag = argument.dropFirst()
            switch flag.first! {
            case "t" where flag == "t": invocation.readRecipientsFromHeaders = true
            case "i" where flag == "i": invocation.ignoreDots = true
            case "f": invocation.sender = try value("-f", flag.dropFirst())
            case "r": invocation.sender = try value("-r", flag.dropFirst())  // an old name of -f
            case "F":
                // It becomes part of a From line: a line break would add header
                // fields of its own (a Bcc recipient, say). Not echoed.
                let name = try value("-F", flag.dropFirst())
                guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\u{2028}" || $0 == "\u{2029}" }) else {
                    throw CommandFailure("sendmail: -F NAME holds a control character (a line break, say)", status: .usage)
                }
                invocation.fullName = name
            case "C": invocation.config = try value("-C", flag.dropFirst())
            case "o":
                // -oi (and -o i); -oXvalue options otherwise ignored.
                let option = flag.dropFirst().isEmpty ? try value("-o", "") : String(flag.dropFirst())
                if option == "i" { invocation.ignoreDots = true }
            case "B", "N", "R", "V", "L", "X", "h", "p", "q":
                _ = try value("-\(flag.first!)", flag.dropFirst())
            case "b":
                let mode = flag.dropFirst()
                guard mode == "m" else {
                    throw CommandFailure("sendmail: -b\(mode) is not supported (only delivery, -bm)", status: .usage)
                }
            case "d", "U", "G", "v", "m", "e", "A", "n", "s", "x":
                break
            default:
                throw CommandFailure("sendmail: unknown option \(argument)", status: .usage)
            }
            index += 1
        }
        return invocation
    }

    /// Without `-i`, a line holding a single "." ends the message (sendmail's
    /// old rule); the rest is not read.
    static func cutAtDot(_ bytes: [UInt8]) -> [UInt8] {
        var lineStart = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == 10 {
                let line = bytes[lineStart..<index]
                if line == [46] || line == [46, 13] { return Array(bytes[..<lineStart]) }
                lineStart = index + 1
            }
            index += 1
        }
        return bytes
    }

    static func queueAndDeliver(_ arguments: [String]) async -> Never {
        let invocation: Invocation
        do { invocation = try parse(arguments) } catch {
            fail(describe(error), status: .usage)
        }
        guard invocation.readRecipientsFromHeaders || !invocation.recipients.isEmpty else {
            fail("sendmail: no recipients (give them, or -t to read To, Cc and Bcc)", status: .usage)
        }
        var queuedCopies: [Int64] = []
        var notice: String?
        let submission: Submission
        do {
            submission = try openSubmission(configPath: invocation.config ?? UserConfig.defaultPath())
            var input = try readInput("-", limit: ParseOptions.standard.maxSize)
            if !invocation.ignoreDots { input = cutAtDot(input) }
            let sender = invocation.sender ?? submission.config.from
            // With -t, recipients on the command line are added (as Postfix does).
            var envelope: [String]?
            if invocation.readRecipientsFromHeaders {
                if !invocation.recipients.isEmpty {
                    let fromHeaders = MailPipeline.recipients(of: try MIMEMessage.parse(input)).map(\.address)
                    envelope = fromHeaders + invocation.recipients
                }
            } else {
                envelope = invocation.recipients
            }
            let queued = try submission.queue(input, envelopeSender: sender, envelopeRecipients: envelope, origin: "sendmail",
                                              fullName: invocation.fullName)
            queuedCopies = queued.copies
            notice = queued.notice.map { noticeClause(sender: queued.envelopeSender, copy: String($0)) }
        } catch {
            var status = ExitStatus(for: error)
            // Only the message's or the policy's fault is final; anything else
            // could not queue, and the client must keep the mail.
            if status != .dataError && status != .refused { status = .temporary }
            fail(describe(error) + (status == .temporary ? "; nothing was queued, try again" : "; nothing was queued"), status: status)
        }
        // Safely queued from here on: exit 0 whatever delivery does.
        let ids = Set(queuedCopies)
        let report = try? await submission.deliver(only: ids, ignoringSchedule: true, lockWait: 30)
        if let report {
            if let line = deliveryLine(report, queuedCopies: ids.count) {
                warn(line + (notice.map { "; " + $0 } ?? ""))
            } else if let notice {
                warn("sent; " + notice)
            }
            warnFilingProblems(report)
        } else {
            warn("queued; delivery could not start ('mailsec outbox flush' sends it)" + (notice.map { "; " + $0 } ?? ""))
        }
        Foundation.exit(0)
    }
}
