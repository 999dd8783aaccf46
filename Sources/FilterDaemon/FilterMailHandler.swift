import Filter
import Foundation
import Pipeline
import Settings
import SMTPListener
import Synchronization

/// The resident filter's answer to each mail the listener received: the
/// pipe filter's own decision path (``MailFilter``) run on a worker thread,
/// with the resources kept between mails, and its status turned into the
/// SMTP reply Postfix acts on — 250 only once every copy was handed on.
package final class FilterMailHandler: MailHandler {
    private let current: Mutex<MailFilter>
    private let workers: WorkerPool
    private let log: @Sendable (String) -> Void
    /// The journal records of mails answered 250 whose reply has not reached Postfix yet.
    private let unanswered = Mutex([UInt64: RecordClearance]())
    /// What is kept between mails: key look-ups and re-injection sessions.
    package let resources: FilterResources
    /// What `GET /metrics` shows; nil without `[listen] metrics_address`.
    let metrics: FilterMetrics?

    /// `parallel` mails at once; `log` gets one line per mail; `metrics` counts each.
    package convenience init(config: FilterConfig, parallel: Int, log: @escaping @Sendable (String) -> Void) {
        self.init(config: config, parallel: parallel, metrics: nil, log: log)
    }

    /// With `keyring`, each mail uses the generation of the published keys current at its start.
    init(config: FilterConfig, parallel: Int, metrics: FilterMetrics?, keyring: NodeKeyring? = nil,
         log: @escaping @Sendable (String) -> Void) {
        resources = FilterResources(keys: KeyCache(), reinjection: ReinjectionPool(capacity: parallel), keyring: keyring)
        current = Mutex(MailFilter(config: config, resources: resources))
        workers = WorkerPool(threads: parallel, name: "mailsec-filter")
        self.metrics = metrics
        self.log = log
    }

    /// Before a scrape: the metrics read rather than counted.
    func refreshMetrics() {
        let (busy, waiting) = workers.counts
        metrics?.refresh(busy: busy, waiting: waiting)
    }

    /// The configuration mails are filtered with now.
    package var config: FilterConfig { current.withLock { $0.config } }

    /// Takes `config` for every mail from now on (SIGHUP); mails in progress
    /// finish with the one they began with.
    package func replace(_ config: FilterConfig) {
        let filter = MailFilter(config: config, resources: resources)
        current.withLock { $0 = filter }
    }

    /// Mails being filtered or waiting for a worker.
    package var mailsInProgress: Int { workers.load }

    /// Waits until no mail is being filtered, at most `timeout` seconds.
    package func waitIdle(timeout: TimeInterval) -> Bool { workers.waitIdle(timeout: timeout) }

    /// Filters `mail` on a worker and answers with its verdict for the client.
    package func handle(_ mail: ReceivedMail) async -> Verdict {
        let started = ContinuousClock.now
        let bytes: [UInt8]
        do { bytes = Self.unixLines(try mail.bytes()) } catch {
            log("mailsec: message-id=<-> status=deferred reason=the received mail cannot be read back")
            metrics?.record(FilterResult(status: MailFilter.deferred, errorLine: nil, logLine: ""), elapsed: ContinuousClock.now - started)
            return .temporary("deferred: the received mail cannot be read back; try again")
        }
        let filter = current.withLock { $0 }
        let timeout = filter.config.timeout
        let result = await workers.run(timeout: .milliseconds(Int64(timeout * 1000)), late: {
            // The work goes on; what it hands on is journalled, and the retry
            // (deferred while the first try still runs) sends only the rest.
            FilterResult.late(seconds: Int(timeout))
        }) { claim in
            // A try answered 451 for being late keeps its journal record when
            // it ends well: the MTA's retry then finds every copy sent. One
            // answered 250 keeps it until the 250 reached the client (`replied`).
            filter.run(bytes, sender: mail.sender, recipients: mail.recipients, answering: claim, keepingRecord: true)
        }
        if let clearance = result.clearance {
            if result.status == 0 { unanswered.withLock { $0[mail.serial] = clearance } } else { clearance.clear() }
        }
        let elapsed = ContinuousClock.now - started
        metrics?.record(result, elapsed: elapsed)
        let config = filter.config
        if config.log != .none {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            log("mailsec: " + result.line(format: config.logFormat, addresses: config.logAddresses, sender: mail.sender,
                                          recipients: mail.recipients, seconds: seconds, queueID: mail.serial))
        }
        return Self.verdict(result)
    }

    /// The 250 reached Postfix: the mail's journal record goes. When it did
    /// not (Postfix gave up waiting and will try the mail again), the record
    /// stays, and the retry finds every copy sent: it sends nothing and
    /// removes the record itself once its own 250 reached Postfix.
    package func replied(to mail: ReceivedMail, reached: Bool) {
        guard let clearance = unanswered.withLock({ $0.removeValue(forKey: mail.serial) }) else { return }
        if reached { clearance.clear() }
    }

    /// The SMTP answer for a filter result: 0 → 250, 65 → 554 5.6.0 (bad
    /// input), 69 → 554 5.7.1 (refused by policy), anything else → 451.
    package static func verdict(_ result: FilterResult) -> Verdict {
        switch result.status {
        case 0: return .accepted("mailsec: every copy handed on")
        case MailFilter.dataError: return .permanent("5.6.0 " + (result.errorLine ?? "rejected"))
        case MailFilter.refused: return .permanent("5.7.1 " + (result.errorLine ?? "refused"))
        default: return .temporary(result.errorLine ?? "deferred")
        }
    }

    /// The mail with CRLF line ends as LF, as Postfix's pipe(8) hands it to
    /// the pipe filter: the same mail gives the same copies and the same
    /// journal key either way. A lone CR stays.
    static func unixLines(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 13, index + 1 < bytes.count, bytes[index + 1] == 10 {
                index += 1
                continue
            }
            out.append(byte)
            index += 1
        }
        return out
    }
}
