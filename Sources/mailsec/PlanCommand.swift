import ArgumentParser
import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Policy
import Store

struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show who gets a letter and who a postcard, and why, before anything is sent.",
        discussion: """
            Looks up every recipient's key in one key listing and prints the decisions, both \
            security states and the copies that encrypt would write.

            \(ExitStatus.section([
                (.success, "the plan was printed"),
                (.usage, "usage error"),
                (.dataError, "not a message, no recipients, unbalanced markers"),
                (.noInput, "the message cannot be read"),
                (.refused, "the plan is refused: a letter is required but a key is missing, or a recipient's key changed (not yet accepted)"),
                (.temporary, "GnuPG or its agent unusable, or anything unexpected: try again"),
            ]))
            """
    )

    @OptionGroup(title: "Policy") var policy: PolicyOptions
    @OptionGroup(title: "Markers") var markers: MarkerOptions
    @OptionGroup(title: "GnuPG") var global: GlobalOptions

    @OptionGroup(title: "Output") var output: JSONOutput<PlanJSON>

    @OptionGroup(title: "Input") var size: MessageSizeOption

    @Option(help: ArgumentHelp("Key continuity: the filter's folder of remembered keys (see 'keys forget'); "
                               + "recipients whose remembered key is gone or lapsed are shown with that reason.",
                               valueName: "folder"))
    var continuity: String?

    @Argument(help: messageArgumentHelp)
    var message = "-"

    func run() throws {
        var pipeline = try policy.pipeline(global, markers: markers)
        if let continuity {
            pipeline = pipeline.with(continuity: KeyContinuity(directory: continuity))
        } else if FileManager.default.fileExists(atPath: LocalStore.defaultFolder() + "/mailsec.sqlite") {
            // What send would do: the command line's remembered and learned keys (key changes shown).
            pipeline = pipeline.with(continuity: try openContacts().continuity)
        }
        let prepared = try pipeline.prepare(readMessage(message, options: size.parseOptions), envelopeSender: policy.from)
        let report = PlanReport(prepared.plan)
        if output.json {
            try writeOutput(encodeJSON(report), to: nil)
        } else {
            print(PlanTable(report: report, colour: isatty(STDOUT_FILENO) != 0
                                && ProcessInfo.processInfo.environment["NO_COLOR"] == nil).text)
        }
        try MailPipeline.checkNotRefused(prepared.plan)
    }
}

/// The plan as a table for people.
struct PlanTable {
    let report: PlanReport
    let colour: Bool

    func paint(_ text: String, _ code: String) -> String { colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }

    var text: String {
        var lines: [String] = []
        let state = report.refused ? paint("refused", "1;31")
            : report.mailState + (report.postcardExtension.map { " (\($0))" } ?? "")
        lines.append("mail: \(state)   recipients: \(report.recipientState)"
                     + (report.hasMarkedSpans ? "   marked spans: yes" : ""))
        let width = report.recipients.map { $0.address.count + $0.role.count + 3 }.max() ?? 0
        for recipient in report.recipients {
            let label: String
            switch recipient.decision {
            case "letter": label = paint("LETTER  ", "1;32")
            case "postcard": label = paint("POSTCARD", "1;33")
            case "refused": label = paint("REFUSED ", "1;31")
            default: label = paint("UNCHANGED", "1;36")
            }
            let who = "\(recipient.address) (\(recipient.role))"
            lines.append("  \(label)  \(who.padding(toLength: width, withPad: " ", startingAt: 0))  \(recipient.detail)")
            if let change = recipient.keyChange, recipient.decision == "letter" {
                lines.append("            " + paint("key changed", "1;33") + ": " + change.description)
            }
        }
        for (label, parts) in [("withheld (not read, replaced by a note)", report.withheldParts),
                               ("passed unread", report.passedParts), ("refused (not read)", report.refusedParts),
                               ("dropped by the HTML allow-list", report.droppedByAllowList)] where !parts.isEmpty {
            lines.append("postcard parts \(label):")
            lines += parts.map { "  \($0)" }
        }
        if report.refused && report.recipients.contains(where: { $0.reason == "key-changed" }) {
            lines.append(paint("refused: a recipient's key changed; check it with the person, then 'mailsec keys accept ADDRESS FINGERPRINT'", "1;31"))
        } else if report.refused {
            lines.append(paint("refused: a letter is required but not every such recipient has a usable key; nothing would be sent", "1;31"))
        } else {
            lines.append("copies:")
            for (index, copy) in report.copies.enumerated() {
                lines.append("  \(index + 1). \(copy.kind) to \(copy.recipients.joined(separator: ", "))")
            }
        }
        return lines.joined(separator: "\n")
    }
}
