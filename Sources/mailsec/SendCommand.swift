import ArgumentParser
import Foundation
import Outbox
import Sending

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Encrypt where keys allow, queue every copy in the outbox, and deliver now.",
        discussion: """
            Plans the mail as 'encrypt' does (recipients from To, Cc and Bcc; settings from the \
            configuration), writes every copy, stores them all in the outbox, and hands them to the \
            submission server. Exit status: 0 every copy was delivered; 75 copies are queued for a \
            later try (one line says how many and why; 'mailsec outbox flush' or a running 'mailsec \
            outbox watch' sends them); 76 the server refused recipients for good (they wait in the \
            outbox: resend or discard); 65 bad message and 69 refused by policy, with nothing queued; \
            75 with nothing queued when a recipient's remembered key is gone from the keyring (key \
            continuity: the line names the recipient; restore the key or 'mailsec keys forget ADDRESS'). \
            Every recipient is noted in the contacts ('mailsec contacts'). With partially encrypted \
            postcards ([reading], --extension or extension = "partially-encrypted") a password notice \
            goes to you (the envelope sender) after the letters and before the postcards, which are not \
            sent until it was delivered; one line says so. Without a key of your own the notice is \
            not mailed ([reading] notice = "letter-required", the default): the password is shown \
            once on your terminal (/dev/tty, not standard output or error), and without a terminal \
            the mail is refused (69), nothing queued, nothing published. notice = "plain" mails it \
            to you in clear instead.
            """
    )

    @OptionGroup var configOption: ConfigOption

    @OptionGroup(title: "Input") var size: MessageSizeOption

    @Argument(help: ArgumentHelp("The message file; - (the default) reads standard input.", valueName: "message"))
    var message = "-"

    func run() async throws {
        let submission = try configOption.submission()
        let input = try readInput(message, limit: size.parseOptions.maxSize)
        let queued = try submission.queue(input, origin: "send", parseOptions: size.parseOptions,
                                          showPassword: terminalPasswordDisplay())
        let report = try await submission.deliver(only: Set(queued.copies), ignoringSchedule: true)
        warnFilingProblems(report)
        let notice = queued.notice.map { noticeClause(sender: queued.envelopeSender, copy: String($0)) }
        if let status = deliveryStatus(report) {
            let line = deliveryLine(report, queuedCopies: queued.copies.count) ?? "not delivered"
            throw CommandFailure(line + (notice.map { "; " + $0 } ?? ""), status: status)
        }
        if let notice { print("sent; \(notice)") }
    }
}
