import ArgumentParser
import Foundation
import MIME
import Outbox
import Sending
import Settings
import Store

/// sysexits.h for a delivery: 0 every recipient tried was delivered; 76
/// EX_PROTOCOL when the server refused some for good (they wait in the
/// outbox: resend or discard); 75 when some wait for a later try.
func deliveryStatus(_ report: DeliveryReport) -> ExitStatus? {
    if report.failed > 0 { return .serverRefused }
    if report.pending > 0 || report.busy { return .temporary }
    return nil
}

/// The words that tell the person a password notice was queued for them
/// (partially encrypted postcards): where the password goes, never the password.
func noticeClause(sender: String, copy: String) -> String {
    "password notice queued to \(sender) (copy \(copy)): it holds the reading page's password, "
        + "and the postcards wait until it was delivered"
}

/// The words for postcards that wait for their password notice at the end
/// of a run (``DeliveryReport/held``); nil when none waits.
func heldClause(_ report: DeliveryReport) -> String? {
    let held = report.held.filter { $0.recipients > 0 }
    guard let first = held.first else { return nil }
    let count = held.reduce(0) { $0 + $1.recipients }
    let who = "\(count) postcard recipient\(count == 1 ? " waits" : "s wait")"
    if held.count == 1 {
        return "\(who) for the password notice (copy \(first.notice))"
            + (first.noticeFailed ? ", which was refused: 'mailsec outbox resend \(first.notice)' (or discard it)" : "")
    }
    return "\(who) for their password notices (copies \(held.map { String($0.notice) }.joined(separator: ", ")))"
        + (held.contains(where: \.noticeFailed) ? "; resend or discard the refused ones (see 'mailsec outbox')" : "")
}

/// One `mailsec: sent, but …` line on stderr per own copy that could not be
/// filed in `sent_maildir` (the mail itself went).
func warnFilingProblems(_ report: DeliveryReport?) {
    for problem in report?.filingProblems ?? [] { warn("sent, but \(problem)") }
}

/// One line about a delivery that did not deliver everything; nil when it
/// did. Postcards held for their password notice are named after the rest.
func deliveryLine(_ report: DeliveryReport, queuedCopies: Int? = nil) -> String? {
    let why = report.reasons.isEmpty ? "" : ": " + report.reasons.prefix(2).joined(separator: "; ")
    let held = heldClause(report).map { "; " + $0 } ?? ""
    if report.failed > 0 {
        return "\(report.failed) recipient\(report.failed == 1 ? "" : "s") failed\(why)"
            + (report.pending > 0 ? "; \(report.pending) queued for a later try" : "")
            + (report.delivered > 0 ? "; \(report.delivered) delivered" : "")
            + held + "; see 'mailsec outbox' (resend ID or discard ID)"
    }
    if report.busy {
        return "queued\(queuedCopies.map { " (\($0) cop\($0 == 1 ? "y" : "ies"))" } ?? ""): another mailsec is delivering the outbox"
    }
    if report.pending > 0 {
        return "\(report.pending) recipient\(report.pending == 1 ? "" : "s") queued for a later try\(why)"
            + (report.delivered > 0 ? "; \(report.delivered) delivered" : "") + held
    }
    return nil
}
