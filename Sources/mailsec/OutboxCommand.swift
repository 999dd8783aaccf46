import ArgumentParser
import Foundation
import Outbox
import Sending

struct OutboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "Show and deliver the outbox: copies waiting, sent, or failed.",
        discussion: """
            Every copy 'send' and 'sendmail' write waits here until the server has it. A copy and \
            each of its recipients is pending (waiting for its next try), sending, sent, or failed \
            (refused for good: 5xx, authentication, TLS verification; or no delivery for 5 days). \
            A temporary failure (no network, refused connection, time-out, 4xx) stays pending and \
            is tried again after 1, 2, 4 … minutes, at most an hour apart. A mail with partially \
            encrypted postcards has a copy of kind 'notice': the password notice to you. Its postcards \
            stay pending ('waiting for the password notice') until the notice was delivered; resending \
            a failed notice sends them after it, discarding it discards them too (without the \
            password their link opens nothing).
            """,
        subcommands: [OutboxList.self, OutboxFlush.self, OutboxResend.self, OutboxDiscard.self, OutboxEdit.self, OutboxWatch.self],
        defaultSubcommand: OutboxList.self
    )
}

struct OutboxList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the copies in the outbox: id, created, kind, recipients, state, attempts, last error, next try.")

    @OptionGroup var configOption: ConfigOption

    @Flag(help: "Print JSON for machines.")
    var json = false

    func run() throws {
        let entries = try configOption.submission().outbox.entries()
        if json {
            try writeOutput(encodeJSON(entries.map(EntryJSON.init)), to: nil)
            return
        }
        if entries.isEmpty {
            print("the outbox is empty")
            return
        }
        let formatter = localTimes("yyyy-MM-dd HH:mm:ss")
        for entry in entries {
            let next = entry.nextTry.map { formatter.string(from: $0) } ?? "-"
            print("\(entry.id)  \(formatter.string(from: entry.created))  \(entry.kind)  \(entry.state.rawValue)  "
                  + "attempts=\(entry.attempts)  next-try=\(next)")
            for recipient in entry.recipients {
                print(oneLine("    \(recipient.address)  \(recipient.state.rawValue)" + (recipient.reason.map { "  (\($0))" } ?? "")))
            }
            if let error = entry.lastError { print(oneLine("    last error: \(error)")) }
            if let notice = entry.waitingFor { print("    waiting for the password notice (copy \(notice))") }
        }
    }
}

/// One copy in `outbox list --json` (docs/sending.md, "The outbox").
struct EntryJSON: Encodable {
    struct Recipient: Encodable {
        let address: String
        let state: String
        let reason: String?
    }

    let id: Int64
    let created: Date
    let kind: String
    let state: String
    let envelopeSender: String
    let messageID: String?
    let recipients: [Recipient]
    let attempts: Int
    let lastError: String?
    let nextTry: Date?
    let waitingFor: Int64?

    init(_ entry: OutboxEntry) {
        id = entry.id
        created = entry.created
        kind = entry.kind
        state = entry.state.rawValue
        envelopeSender = entry.envelopeSender
        messageID = entry.messageID
        recipients = entry.recipients.map { Recipient(address: $0.address, state: $0.state.rawValue, reason: $0.reason) }
        attempts = entry.attempts
        lastError = entry.lastError
        nextTry = entry.nextTry
        waitingFor = entry.waitingFor
    }

    enum CodingKeys: String, CodingKey {
        case id, created, kind, state, envelopeSender, messageID, recipients, attempts, lastError, nextTry, waitingFor
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(created, forKey: .created)
        try container.encode(kind, forKey: .kind)
        try container.encode(state, forKey: .state)
        try container.encode(envelopeSender, forKey: .envelopeSender)
        try container.encode(messageID, forKey: .messageID)  // explicit nulls, as the contracts in docs/json.md
        try container.encode(recipients, forKey: .recipients)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(nextTry, forKey: .nextTry)
        try container.encode(waitingFor, forKey: .waitingFor)
    }
}

struct OutboxFlush: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Try every pending copy now, whatever its next try.",
        discussion: """
            Exit status: 0 all delivered; 75 some still pending; 76 the server refused some for good. \
            Postcards waiting for a password notice refused earlier are named (0): resend or discard the notice.
            """)

    @OptionGroup var configOption: ConfigOption

    func run() async throws {
        let submission = try configOption.submission()
        let report = try await submission.deliver(ignoringSchedule: true)
        warnFilingProblems(report)
        if let status = deliveryStatus(report) { throw CommandFailure(deliveryLine(report) ?? "not delivered", status: status) }
        // Held postcards are not a failure of this run (0): they wait for the notice, or for the person.
        let held = heldClause(report)
        if report.delivered == 0 {
            print(held.map { "nothing delivered: " + $0 } ?? "nothing to deliver")
        } else {
            print("delivered to \(report.delivered) recipient\(report.delivered == 1 ? "" : "s")" + (held.map { "; " + $0 } ?? ""))
        }
    }
}

/// The copy an action is for, and the configuration.
struct CopyChoice: ParsableArguments {
    @OptionGroup var configOption: ConfigOption

    @Argument(help: ArgumentHelp("The copy's id (see 'mailsec outbox').", valueName: "id"))
    var id: Int64

    /// Opens the outbox and applies `action` to the copy; a wrong id is a usage error.
    func apply(_ action: (Outbox, Int64) throws(OutboxError) -> Void) throws -> Submission {
        let submission = try configOption.submission()
        do { try action(submission.outbox, id) } catch { throw CommandFailure(error.description, status: .usage) }
        return submission
    }
}

struct OutboxResend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resend",
        abstract: "Send a failed copy again (to its failed recipients), now.",
        discussion: "A password notice sent again is followed, in the same run, by the postcards that wait for it.")

    @OptionGroup var copy: CopyChoice

    func run() async throws {
        let submission = try copy.apply { outbox, id throws(OutboxError) in _ = try outbox.resend(id) }
        // A password notice sent again releases the postcards that wait for it: they go in the same run, after it.
        let waiting = (try? submission.outbox.entries().filter { $0.waitingFor == copy.id }.map(\.id)) ?? []
        let only = Set([copy.id] + waiting)
        let report = try await submission.deliver(only: only, ignoringSchedule: true)
        warnFilingProblems(report)
        if let status = deliveryStatus(report) { throw CommandFailure(deliveryLine(report) ?? "not delivered", status: status) }
        print("delivered to \(report.delivered) recipient\(report.delivered == 1 ? "" : "s")")
    }
}

struct OutboxDiscard: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discard",
        abstract: "Remove a copy from the outbox for good (it is not sent).",
        discussion: """
            Discarding a password notice that was not delivered also discards the postcards waiting \
            for it (without the password their link opens nothing); one line names them.
            """)

    @OptionGroup var copy: CopyChoice

    func run() throws {
        var removed: [Int64] = []
        _ = try copy.apply { outbox, id throws(OutboxError) in removed = try outbox.discard(id) }
        let along = removed.filter { $0 != copy.id }
        if !along.isEmpty {
            print("discarded copy \(copy.id) and the postcard\(along.count == 1 ? "" : "s") waiting for it ("
                  + along.map(String.init).joined(separator: ", ") + ")")
        }
    }
}

struct OutboxWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Stay running: report the connection (online, offline, unreachable) and deliver when online.",
        discussion: """
            Prints one line per change of the connection to the submission server: online (it \
            answers), offline (no route to anywhere), unreachable (the network is up, the server \
            does not answer); and one line per delivery. Delivers every pending copy as soon as the \
            state becomes online, and what falls due while it stays online. Looks again on every \
            network change (netlink link, address and route events) and at least every --interval \
            seconds. Stops on SIGINT or SIGTERM.
            """)

    @OptionGroup var configOption: ConfigOption

    @Option(help: ArgumentHelp("Seconds between looks when nothing changes (default 30).", valueName: "seconds"))
    var interval: Int = 30

    func validate() throws {
        try check("--interval", interval, in: Limits.seconds)
    }

    func run() async throws {
        let submission = try configOption.submission()
        await submission.watch(interval: TimeInterval(interval)) { state, report in
            var line = state.rawValue
            if let report, report.delivered + report.pending + report.failed > 0 {
                line += ": delivered \(report.delivered), pending \(report.pending), failed \(report.failed)"
                if !report.reasons.isEmpty { line += " (\(report.reasons.prefix(2).joined(separator: "; ")))" }
                if let held = heldClause(report) { line += "; " + held }  // only with a run's news: not every interval
            }
            // A line at a time, also into a pipe or a journal; a server's
            // reason cannot split it.
            FileHandle.standardOutput.write(Data((oneLine(line) + "\n").utf8))
            warnFilingProblems(report)
        }
    }
}

struct OutboxEdit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Take a failed mail back into a draft, to fix and send again ('mailsec drafts edit').",
        discussion: """
            The mail of the failed copy ID leaves the outbox and becomes a draft, as it was written \
            (from the source 'mailsec compose' keeps, sealed to your own key, until every recipient \
            has the mail), less the recipients the server already accepted. Mail queued by 'send' or \
            'sendmail' keeps no source: resend or discard it. A copy being sent, sent, or still \
            pending is refused.

            \(ExitStatus.section([
                (.success, "taken back: the line names the new draft"),
                (.usage, "usage error, no such copy, a copy that is not failed, a mail without a source"),
                (.refused, "no key of your own to keep the draft with, or a source not signed by it"),
                (.temporary, "temporary or unexpected: the outbox changed meanwhile, GnuPG or the store unusable; try again"),
            ]))
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var copy: CopyChoice

    func run() throws {
        let context = try ComposeContext(config: copy.configOption, global: global)
        let draft: String
        do { draft = try context.drafts.takeBack(copy.id, from: context.submission.outbox) } catch let error as OutboxError {
            throw CommandFailure(error.description, status: error.isConflict ? .temporary : .usage)
        }
        print("copy \(copy.id) taken back into draft \(draft) ('mailsec drafts edit \(draft.prefix(8))')")
    }
}
