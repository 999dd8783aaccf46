import Foundation
import Policy
import Settings

/// The copies one run of the filter handed on, by kind.
package struct HandedCopies: Sendable, Equatable {
    /// Letters (encrypted and signed) handed on.
    package var letters = 0
    /// Postcards handed on.
    package var postcards = 0
    /// Copies of a mail that was encrypted already, handed on as it came.
    package var unchanged = 0
    /// Password notices of partially encrypted postcards (to the sender).
    package var notices = 0

    /// None yet.
    package init() {}
}

extension FilterResult {
    /// The outcome as a word: `sent`, `deferred`, `refused` (69) or `rejected` (65).
    package var outcome: String {
        switch status {
        case 0: "sent"
        case MailFilter.refused: "refused"
        case MailFilter.dataError: "rejected"
        default: "deferred"
        }
    }

    /// The Message-ID as the plain line has it (sanitised: no spaces, no angle
    /// brackets, at most 200 characters); nil when the mail had none or was not read.
    var messageID: String? {
        guard logLine.hasPrefix("message-id=<"), let end = logLine.firstIndex(of: ">") else { return nil }
        let id = String(logLine[logLine.index(logLine.startIndex, offsetBy: 12)..<end])
        return id == "-" ? nil : id
    }

    /// Postcards handed on with marked spans taken out (censored, or linked to a reading page).
    package var censoredPostcards: Int {
        guard handed.postcards > 0, let plan, plan.hasMarkedSpans else { return 0 }
        return handed.postcards
    }

    /// Parts the postcards handed on withheld (`opaque_parts = "withhold"`).
    package var withheldParts: Int {
        guard handed.postcards > 0, let plan else { return 0 }
        return plan.postcardParts.withheld.count
    }

    /// Each recipient's decision and its reason code, as `mailsec plan --json`
    /// names them (`letter`/`key`, `postcard`/`no-key`, `refused`/…); empty
    /// when no plan was made.
    package var decisions: [(decision: String, reason: String)] {
        guard let plan else { return [] }
        return PlanReport(plan).recipients.map { ($0.decision, $0.reason) }
    }

    /// The one log line for this mail, without the `mailsec: ` prefix.
    /// Never message content, a subject or a password; the envelope
    /// addresses only with `addresses` (`log_addresses = true`), and without
    /// it any address in the error line is replaced by `<address>`.
    /// `queueID` is the resident filter's number for the mail. With
    /// `plainError` false the plain line leaves the error line out (the pipe
    /// filter prints it on its own, for the MTA).
    package func line(format: LogFormat, addresses: Bool, sender: String, recipients: [String],
                     seconds: Double, queueID: UInt64? = nil, plainError: Bool = true) -> String {
        let error = errorLine.map { addresses ? $0 : Self.withoutAddresses($0) }
        let duration = (seconds * 1000).rounded() / 1000
        switch format {
        case .plain:
            var line = logLine + " duration=\(duration)"
            if let queueID { line += " queue-id=\(queueID)" }
            if handed.postcards > 0 { line += " censored=\(censoredPostcards) withheld-parts=\(withheldParts)" }
            if addresses { line += " from=<\(sender)> to=" + recipients.map { "<\($0)>" }.joined(separator: ",") }
            return line + (plainError ? error.map { " (\($0))" } ?? "" : "")
        case .json:
            let record = MailLogRecord(
                queueID: queueID, messageID: messageID, status: outcome, exitStatus: status, letters: handed.letters,
                postcards: handed.postcards, unchanged: handed.unchanged, passwordNotices: handed.notices,
                censoredPostcards: censoredPostcards, withheldParts: withheldParts, recipients: recipients.count,
                decisions: Dictionary(decisions.map { ("\($0.decision)/\($0.reason)", 1) }, uniquingKeysWith: +),
                durationSeconds: duration, error: error,
                sender: addresses ? sender : nil, recipientAddresses: addresses ? recipients : nil)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            // Escaped by the encoder: a line break in a value stays inside the string.
            return (try? encoder.encode(record)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
    }

    /// `text` with everything shaped like `local@domain` replaced by `<address>`: each run
    /// of scalars between separators (white space as ICU's `\s` takes it, `<>(),;:"'`) that
    /// holds an `@` with something before and after it, as the regular expression
    /// `[^\s<>(),;:"']+@[^\s<>(),;:"']+` replaces it. Hand-written: compiling that
    /// expression cost every error line 16 million instructions (ICU's sets), a pipe
    /// filter's deferral half its own work.
    static func withoutAddresses(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var run: [Unicode.Scalar] = []
        func flush() {
            if run.count > 2, run[1..<(run.count - 1)].contains("@") { out += "<address>".unicodeScalars } else { out += run }
            run.removeAll(keepingCapacity: true)
        }
        for scalar in text.unicodeScalars {
            if isSeparator(scalar) {
                flush()
                out.append(scalar)
            } else {
                run.append(scalar)
            }
        }
        flush()
        return String(out)
    }

    /// ``withoutAddresses(_:)``'s separators: white space (Unicode's White_Space, as ICU's `\s`), `<>(),;:"'`.
    private static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "<", ">", "(", ")", ",", ";", ":", "\"", "'": return true
        default: return scalar.properties.isWhitespace
        }
    }
}

/// The JSON log line (`log_format = "json"`): one object per mail, keys
/// sorted. `sender` and `recipientAddresses` only with `log_addresses = true`.
struct MailLogRecord: Encodable {
    let queueID: UInt64?
    let messageID: String?
    let status: String
    let exitStatus: Int32
    let letters, postcards, unchanged, passwordNotices, censoredPostcards, withheldParts, recipients: Int
    /// `decision/reason` → how many recipients.
    let decisions: [String: Int]
    let durationSeconds: Double
    let error: String?
    let sender: String?
    let recipientAddresses: [String]?

    enum CodingKeys: String, CodingKey {
        case queueID = "queue_id", messageID = "message_id", status, exitStatus = "exit_status", letters, postcards, unchanged
        case passwordNotices = "password_notices", censoredPostcards = "censored_postcards", withheldParts = "withheld_parts"
        case recipients, decisions, durationSeconds = "duration_seconds", error, sender, recipientAddresses = "recipient_addresses"
    }
}
