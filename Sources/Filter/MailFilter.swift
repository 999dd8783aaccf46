import Foundation
import MIME
import Settings
import Synchronization
import OpenPGP
import Pipeline
import Platform
import Policy

/// How one run of the filter ended: the exit status for the MTA, the one
/// line for stderr (which becomes the bounce or defer text), and the line
/// for the mail log.
package struct FilterResult: Sendable {
    /// sysexits.h: 0 all copies handed on, 65 bad message, 69 refused by
    /// policy, 75 anything transient or unexpected (the MTA keeps the mail).
    package let status: Int32
    /// The one line to print on failure; nil on success. Never message content.
    package let errorLine: String?
    /// One line for the mail log: Message-ID, counts, outcome.
    package let logLine: String
    /// With ``MailFilter/run(_:sender:recipients:answering:keepingRecord:)``
    /// keeping the record: the mail's journal record, to clear once the MTA
    /// heard this result (nil when there is none to clear).
    package var clearance: RecordClearance?

    /// The copies handed on, by kind (for the metrics and the structured log line).
    package var handed = HandedCopies()
    /// The mail's plan, when one was made: the recipients' decisions and what
    /// the postcard withheld (for the metrics and the structured log line).
    package var plan: Plan?

    package init(status: Int32, errorLine: String?, logLine: String, clearance: RecordClearance? = nil,
                 handed: HandedCopies = HandedCopies(), plan: Plan? = nil) {
        self.status = status
        self.errorLine = errorLine
        self.logLine = logLine
        self.clearance = clearance
        self.handed = handed
        self.plan = plan
    }

    /// The result for a mail not finished within `seconds` (the resident
    /// filter answers it while the work goes on): defer.
    package static func late(seconds: Int) -> FilterResult {
        FilterResult(status: MailFilter.deferred,
                     errorLine: "deferred: no result within \(seconds) s (gpg or re-injection hung); the mail stays queued",
                     logLine: "message-id=<-> status=deferred reason=timeout")
    }

    /// The same result with another status and line (for tests of what callers make of it).
    package func with(status: Int32, line: String?) -> FilterResult {
        FilterResult(status: status, errorLine: line, logLine: logLine)
    }

    /// The result for a configuration that cannot be read: defer.
    package static func unreadableConfiguration(_ error: any Error) -> FilterResult {
        let (status, line) = MailFilter.classify(error)
        return FilterResult(status: status, errorLine: line, logLine: "status=deferred reason=configuration")
    }
}

/// What a filter keeps from one mail to the next. A per-mail process keeps
/// nothing in memory (``perMail``; its Autocrypt exports are kept in the
/// journal's folder, ``Journal/keptExports``); the resident filter (`mailsec filter --listen`)
/// keeps key look-ups, dropped when the keyring changes, and its SMTP
/// sessions to the re-injection address.
package struct FilterResources: Sendable {
    /// Key look-ups across mails; nil: every mail lists its keys.
    package let keys: KeyCache?
    /// Kept-open SMTP sessions for `[reinject] method = "smtp"`; nil: one session per mail.
    package let reinjection: ReinjectionPool?
    /// The GnuPG home kept by the published keys (`[store]`, resident
    /// filter): each mail takes its current generation once and uses it
    /// throughout. Nil: `gnupg_home` as it is.
    package let keyring: NodeKeyring?

    /// Resources holding `keys`, `reinjection` and `keyring`.
    package init(keys: KeyCache?, reinjection: ReinjectionPool?, keyring: NodeKeyring? = nil) {
        self.keys = keys
        self.reinjection = reinjection
        self.keyring = keyring
    }

    /// Nothing kept: the pipe filter's one mail per process.
    package static let perMail = FilterResources(keys: nil, reinjection: nil)
}

/// The sendmail/Postfix content filter: one mail in, its copies handed on.
/// The one decision path for a mail, for the pipe filter and the resident
/// filter alike; they differ only in the ``FilterResources`` passed in.
package struct MailFilter: Sendable {
    /// EX_TEMPFAIL: Postfix keeps the mail and retries.
    package static let deferred: Int32 = ExitStatus.temporary.rawValue
    /// EX_DATAERR: the message is bad; Postfix bounces it.
    package static let dataError: Int32 = ExitStatus.dataError.rawValue
    /// EX_UNAVAILABLE: refused by policy; Postfix bounces it.
    package static let refused: Int32 = ExitStatus.refused.rawValue

    /// The mails being filtered in this process, by journal key. A resident
    /// filter may be given the same mail again while its first try still
    /// runs (the MTA stopped waiting and retried): the second try must not
    /// read the journal record the first is still marking, or both would send.
    private static let inProgress = Mutex(Set<String>())

    /// The loop tag every written copy carries (an HMAC, so it cannot be forged).
    static let tagHeader = "X-Mailsec-Copy"

    /// The filter's configuration.
    package let config: FilterConfig
    /// What this filter keeps from one mail to the next.
    package let resources: FilterResources

    /// A filter with `config`, keeping across mails what `resources` holds.
    package init(config: FilterConfig, resources: FilterResources = .perMail) {
        self.config = config
        self.resources = resources
    }

    /// Plans, writes and hands on every copy of `bytes` for `recipients`, or
    /// none. Never throws: every failure becomes a status and one line.
    /// `answering` is asked once every copy went out, before the mail's
    /// journal record is removed: false means the MTA was already told to
    /// try again (a resident filter that stopped waiting), so the record
    /// stays and the retry sends nothing twice. With `keepingRecord` the
    /// record is not removed here at all but handed back in the result
    /// (``FilterResult/clearance``): the resident filter removes it once its
    /// 250 reached Postfix, so that a retry by a client that gave up before
    /// hearing it finds every copy sent.
    package func run(_ bytes: [UInt8], sender: String, recipients: [String],
                    answering: () -> Bool = { true }, keepingRecord: Bool = false) -> FilterResult {
        var messageID = "-"
        var counts = HandedCopies()
        var plan: Plan?
        var clearance: RecordClearance?
        func result(_ status: Int32, _ line: String?, _ outcome: String) -> FilterResult {
            FilterResult(status: status, errorLine: line,
                         logLine: "message-id=<\(messageID)> letters=\(counts.letters) postcards=\(counts.postcards) "
                            + "unchanged=\(counts.unchanged)" + (counts.notices > 0 ? " password-notices=\(counts.notices)" : "")
                            + " status=\(outcome)", clearance: clearance, handed: counts, plan: plan)
        }
        func finished(_ record: MailRecord) {
            guard answering() else { return }
            if keepingRecord { clearance = record.clearance } else { record.clear() }
        }
        guard !recipients.isEmpty else {
            return result(Self.deferred, "deferred: no recipients on the command line (check the pipe argv in master.cf)", "deferred")
        }
        do {
            // Before anything uses them: `<bob@example.org>` is Bob, a line break is nobody.
            let sender = try EnvelopeAddress.normalised(sender, which: "sender", mayBeEmpty: true)
            let recipients = try recipients.enumerated().map { index, address throws(EnvelopeAddressError) in
                try EnvelopeAddress.normalised(address, which: "recipient \(index + 1)")
            }
            let journal = try Journal(directory: config.journalDirectory, expiry: config.journalExpiry,
                                      sweepOncePerMinute: resources.keys != nil)
            let message = try MIMEMessage.parse(bytes)
            messageID = message.messageID.map { sanitise($0) } ?? "-"
            // The journal keys on the mail exactly as the MTA gives it, the same on
            // every retry; two different mails that share a Message-ID never mix.
            let mailKey = Digest.sha256Hex(bytes)
            guard Self.inProgress.withLock({ $0.insert(mailKey).inserted }) else {
                return result(Self.deferred, "deferred: the same mail is being filtered already (a retry while the first try runs)",
                              "deferred")
            }
            defer { _ = Self.inProgress.withLock { $0.remove(mailKey) } }
            let secret = try journal.secret()

            // A copy this filter wrote came back: pass it on as it is.
            if let tag = message.header(Self.tagHeader),
               Digest.constantTimeEqual(tag, Self.tag(secret, message.messageID ?? "", recipients, Self.body(of: bytes))) {
                let handover = Handover(config, pool: resources.reinjection)
                try handover.send(bytes, sender: sender, recipients: recipients)
                handover.close()
                counts.unchanged = 1
                return result(0, nil, "sent-loop")
            }
            message.removeHeader(Self.tagHeader)

            var options = config.policy.mail
            try Overrides.apply(message, to: &options)
            // What an earlier try handed on is not sent again. A letter it handed
            // on whose continuity record could not be written then gets it now.
            let record = try journal.open(mail: mailKey)
            let continuity = config.continuityStore
            for recipient in recipients where record.wasSent(recipient) {
                if let fingerprint = record.letterKey(recipient) { try continuity.record(recipient, fingerprint: fingerprint) }
            }
            let remaining = recipients.filter { !record.wasSent($0) }
            guard !remaining.isEmpty else {
                finished(record)
                return result(0, nil, "sent-before")
            }
            var pipelineOptions = PipelineOptions(policy: config.policy, reading: config.reading)
            pipelineOptions.mail = options
            pipelineOptions.continuity = continuity
            // One mail per process keeps its exports in the journal's folder for the next.
            pipelineOptions.keyCache = resources.keys ?? KeyCache(keeping: journal.keptExports)
            // One keyring for the whole mail: a key sync swapping the home meanwhile is seen by the next mail.
            let home = resources.keyring?.enter() ?? config.gnupgHome
            defer { if let home, let keyring = resources.keyring { keyring.leave(home) } }
            let pipeline = MailPipeline(gnupg: GnuPG(home: home), options: pipelineOptions)
            // Our own fields never leave, not even on a mail passed on unchanged.
            let original = MailPipeline.withoutBcc(bytes, also: Set(Overrides.names + [Self.tagHeader]))
            let wanted = try pipeline.keysWanted(for: message, envelopeSender: sender, envelopeRecipients: remaining)
            let keys = try resources.keys?.book(for: wanted, pipeline: pipeline) ?? pipeline.lookUp(wanted)
            let prepared = try pipeline.prepare(message, original: original, envelopeSender: sender,
                                                envelopeRecipients: remaining, keys: keys)
            plan = prepared.plan
            // All crypto before the first hand-over; letters first, the password
            // notice just before the first postcard (so the sender has it before
            // anyone has a link, and a retry after a failed letter sends no second
            // notice); the journal's intent on disk before anything goes.
            let handover = Handover(config, pool: resources.reinjection)
            defer { handover.close() }
            func stopped(_ destination: MTADestination) -> FilterResult {
                result(Self.deferred, "deferred: stopped by a signal after \(destination.handed) of \(destination.total) copies; "
                       + "the mail stays queued and only the rest is sent on retry", "deferred")
            }
            let destination = MTADestination(handover: handover, record: record, recipients: recipients, secret: secret,
                                             messageID: message.messageID ?? "", sender: sender)
            do {
                try pipeline.send(prepared, to: destination)
                counts = destination.counts
            } catch {
                counts = destination.counts
                if error is MTADestination.Stopped { return stopped(destination) }
                guard let failure = error as? CopyNotHanded else { throw error }
                if Stop.isRequested { return stopped(destination) }
                return result(Self.deferred, "deferred: \(failure.error)" + (failure.isNotice ? " (the password notice)" : "")
                              + " after \(destination.handed) of \(destination.total) copies; "
                              + "the mail stays queued and only the rest is sent on retry", "deferred")
            }
            finished(record)
            return result(0, nil, "sent")
        } catch {
            let (status, line) = Self.classify(error)
            return result(status, line, status == Self.deferred ? "deferred" : status == Self.refused ? "refused" : "rejected")
        }
    }

    /// Each letter recipient's key: the fingerprints of a letter are its
    /// recipients' in order, the sender's own key last.
    static func letterKeys(_ copies: [WrittenCopy]) -> [String: String] {
        var keys: [String: String] = [:]
        for copy in copies {
            for (address, fingerprint) in copy.letterKeys { keys[address] = fingerprint }
        }
        return keys
    }

    /// The status and line for an error. Anything not known to be the
    /// message's or the policy's fault defers (75), so that nothing is lost.
    static func classify(_ error: any Error) -> (Int32, String) {
        switch error {
        case let error as MIMEError:
            return (dataError, "rejected: the message cannot be read as mail (\(error.description))")
        case let error as OverrideError:
            return (dataError, "rejected: \(error.description)")
        case let error as PolicyError:
            if error.code == .conflictingOptions {
                return (refused, "refused: X-Mailsec-Mode enforce-postcard conflicts with the require-letter policy")
            }
            return (dataError, "rejected: unbalanced private markers: \(error.description); fix the markers and send again")
        case let error as InvalidAddressError:
            return (dataError, "rejected: \(error.description)")
        case is KeyChangeError, is KeyringError:
            return (deferred, "deferred: \(error); the mail stays queued")
        case let error as PipelineError:
            // The status is the error's own, as the command line's (PipelineError+Status); the line adds what the MTA's admin reads.
            let line = error.safeDescription
            return switch error.exitStatus {
            case .dataError: (dataError, "rejected: \(line)")
            case .temporary where error.code == .noSigningKey:
                (deferred, "deferred: \(line) (give the filter's GnuPG home the sender's secret key)")
            case .temporary: (deferred, "deferred: \(line); the mail stays queued")
            case .refused where error.code == .refused: (refused, "refused: \(line); nothing was sent")
            case let status: (status.rawValue, "refused: \(line)")
            }
        case let error as any MailsecError:
            // The status is the error's own, as the command line's. The MTA
            // is answered 65, 69 or 75; a status that means something else
            // at the command line (an output not made, a usage error) defers,
            // so that nothing is lost.
            return switch error.exitStatus {
            case .dataError: (dataError, "rejected: \(error.safeDescription)")
            case .refused: (refused, "refused: \(error.safeDescription)")
            default: (deferred, "deferred: \(error.safeDescription); the mail stays queued")
            }
        case let error as GPGMEError:
            return (deferred, "deferred: GnuPG failed (\(error.description)); the mail stays queued")
        case let error as ConfigError:
            return (deferred, "deferred: \(error.description); fix it and flush the queue")
        case let error as JournalError:
            return (deferred, "deferred: \(error.description)")
        case let error as HandoverError:
            return (deferred, "deferred: \(error.description)")
        default:
            return (deferred, "deferred: unexpected error (\(type(of: error))); the mail stays queued")
        }
    }

    /// The tag of a copy: over its Message-ID, its recipients (a copy that
    /// comes back carries exactly its own) and its body, so that it cannot be
    /// put on other content.
    static func tag(_ secret: [UInt8], _ messageID: String, _ recipients: [String], _ body: [UInt8]) -> String {
        let what = messageID + "\n" + recipients.map { $0.lowercased() }.sorted().joined(separator: ",") + "\n"
            + Digest.sha256Hex(body)
        return "v2 " + Digest.hmacSHA256Hex(key: secret, data: Array(what.utf8))
    }

    /// The body of a message (after the header section), with line endings
    /// and trailing white space evened out, as the MTA may change those.
    static func body(of bytes: [UInt8]) -> [UInt8] {
        var start = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == 10 && index + 1 < bytes.count && (bytes[index + 1] == 10 || (bytes[index + 1] == 13
                && index + 2 < bytes.count && bytes[index + 2] == 10)) {
                start = index + 1
                break
            }
            index += 1
        }
        // One pass into reserved storage: ArraySlice.filter grew its array
        // byte by byte (190,000 instructions for a 10 KB copy, three copies a mail, issue 24).
        var end = bytes.count
        while end > start, bytes[end - 1] == 10 || bytes[end - 1] == 13 || bytes[end - 1] == 32 || bytes[end - 1] == 9 { end -= 1 }
        var body = [UInt8]()
        body.reserveCapacity(end - start)
        for byte in bytes[start..<end] where byte != 13 { body.append(byte) }
        return body
    }

    /// Message-IDs go to the log: keep them printable and short.
    func sanitise(_ text: String) -> String {
        String(scalars: text.unicodeScalars.filter { $0.value > 0x20 && $0.value < 0x7F && $0 != "<" && $0 != ">" }.prefix(200))
    }
}
