import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Policy
import Settings
import Redaction

/// An error of the mail pipeline. The description never quotes message content.
///
/// Match a code in a `catch` clause with `catch PipelineError.Code.refused`; the
/// addresses or detail that go with a code are on the error (``addresses``, ``detail``).
public struct PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong. A struct rather than an enum, so that codes can be
    /// added without breaking a caller's `switch` (after GRDB's `ResultCode`).
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The code's stable name.
        public let rawValue: String
        /// A code by its name; the named static members are the ones mailsec throws.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The mail names no recipient.
        public static let noRecipients = Code(rawValue: "noRecipients")
        /// The mail has no From address and no sender was given.
        public static let noSender = Code(rawValue: "noSender")
        /// Letters are due but the sender has no key that can sign (``PipelineError/detail``:
        /// the address or fingerprint asked for).
        public static let noSigningKey = Code(rawValue: "noSigningKey")
        /// The plan is refused (requireLetter); ``PipelineError/addresses`` are those without a usable key.
        public static let refused = Code(rawValue: "refused")
        /// A signed mail with marked spans would go out with a broken signature.
        public static let signedMailNeedsRedaction = Code(rawValue: "signedMailNeedsRedaction")
        /// A feature that is planned but not built yet (``PipelineError/detail``: which).
        public static let notYetSupported = Code(rawValue: "notYetSupported")
        /// A marked span stands where it cannot be redacted (``PipelineError/detail``: the place).
        public static let unredactable = Code(rawValue: "unredactable")
        /// The mail has marked spans and a place (``PipelineError/detail``) that cannot be read
        /// with certainty: a charset or transfer encoding no reader can be
        /// relied on to decode, or fields that readers resolve differently.
        public static let unreadable = Code(rawValue: "unreadable")
        /// The mail has marked spans and a part mailsec does not read (``PipelineError/detail``:
        /// the place), and `opaque_parts = "refuse"`.
        public static let opaquePartRefused = Code(rawValue: "opaquePartRefused")
        /// The message is labelled encrypted, and its content is not ciphertext.
        public static let falselyEncrypted = Code(rawValue: "falselyEncrypted")
        /// Partially encrypted postcards are due but no reading server is configured.
        public static let noPublisher = Code(rawValue: "noPublisher")
        /// The spans could not be published (``PipelineError/detail``: the reason, without
        /// content); nothing was sent.
        public static let publishFailed = Code(rawValue: "publishFailed")
        /// The reading server refuses the document for good, too large or malformed
        /// (``PipelineError/detail``: its reason); nothing was sent.
        public static let publishRefused = Code(rawValue: "publishRefused")
        /// The password notice must be a letter, but the sender (``PipelineError/addresses``)
        /// has no key to encrypt to.
        public static let noticeNeedsLetter = Code(rawValue: "noticeNeedsLetter")

        /// Lets `catch PipelineError.Code.refused` match a thrown ``PipelineError``.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? PipelineError)?.code == code
        }
    }

    /// What went wrong.
    public let code: Code
    /// The addresses the code is about: those without a usable key (``Code/refused``),
    /// the sender (``Code/noticeNeedsLetter``).
    public let addresses: [String]
    /// The place, reason or key the code is about (see each code); never message content.
    public let detail: String?

    /// An error with `code`, and the addresses or detail that go with it.
    public init(_ code: Code, addresses: [String] = [], detail: String? = nil) {
        self.code = code
        self.addresses = addresses
        self.detail = detail
    }

    /// One line naming the problem, without message content.
    public var description: String {
        let detail = detail ?? "?"
        return switch code {
        case .noRecipients: "message has no recipients"
        case .noSender: "message has no From address; name the sender"
        case .noSigningKey: "no usable signing key for \(detail)"
        case .refused: "a letter is required but there is no usable key for " + addresses.joined(separator: ", ")
        case .signedMailNeedsRedaction:
            "the mail is signed and has marked spans: redacting them would break the signature, so it is refused"
        case .notYetSupported: "\(detail) is not yet supported"
        case .unredactable: "a private marker in \(detail) cannot be redacted; remove it or send the mail to letter recipients only"
        case .unreadable:
            "the mail has marked spans, and \(detail) cannot be read with certainty, so it is refused; send it to letter recipients only"
        case .opaquePartRefused:
            "the mail has marked spans, and \(detail) is a part mailsec cannot read, so it is refused (opaque_parts = \"refuse\")"
        case .falselyEncrypted:
            "the message is labelled encrypted (\(detail)) but its content is not ciphertext, so it is refused"
        case .noPublisher: "partially encrypted postcards need a reading server to publish to (a publish URL and token)"
        case .publishFailed: "the private parts could not be published, so nothing was sent: \(detail)"
        case .publishRefused: "the reading server will not take this mail's private parts, so nothing was sent: \(detail)"
        case .noticeNeedsLetter:
            "the password of a partially encrypted postcard may only reach the sender in a letter, and there is no usable key for "
                + addresses.joined(separator: ", ") + " (nor a terminal to show it on; [reading] notice = \"plain\" mails it in clear)"
        default: "mail pipeline error \(code.rawValue)" + (self.detail.map { ": \($0)" } ?? "")
        }
    }
}

/// Options of the pipeline.
public struct PipelineOptions: Sendable {
    /// Per-mail policy options.
    public var mail: MailOptions
    /// Markers and placeholder.
    public var redactor: Redactor
    /// The key to sign letters with: an address or a fingerprint. Default: the From address.
    public var signAs: String?
    /// What keys must satisfy.
    public var requirements: KeyRequirements
    /// The Subject shown outside letters.
    public var outerSubject: String
    /// Where partially encrypted postcards publish their spans.
    public var publisher: (any SpanPublisher)?
    /// How long a published reading page lives, in seconds (nil: the server's default).
    public var readingLifetime: Int?
    /// `[reading] notice = "letter-required"` (the default of the
    /// configurations): the password notice may only reach the sender as a
    /// letter. For a sender without a usable key of their own the password is
    /// shown through ``showPassword`` when there is one; else the mail is
    /// refused before anything is published (``MailPipeline/checkNotice(_:)``).
    public var noticeMustBeLetter: Bool
    /// Shows the reading page's password (the text of
    /// ``PasswordNotice/shownText(password:publication:recipients:)``) to the
    /// sender on their terminal, never in a log or a file: what `send` and
    /// `compose` do when the notice must be a letter and the sender has no key.
    /// Called after publishing and before anything is queued; a throw
    /// withdraws the page. Nil: no terminal (the filter, `sendmail`).
    public var showPassword: (@Sendable (String) throws -> Void)?
    /// Every letter's ciphertext is written to a private spool file; one of
    /// more than this many bytes that is 7-bit clean stays there instead of
    /// being read into memory (see ``WrittenCopy/forEachPiece(_:)``).
    public var spoolAbove: Int = 8 << 20
    /// Key continuity: where the keys recipients last got letters with are
    /// remembered (nil: not used). The plan holds a mail whose remembered key vanished.
    public var continuity: (any KeyContinuityStore)?
    /// A resident program's cache of exported Autocrypt key data (the
    /// sender's key in every letter); nil: exported for each mail.
    package var keyCache: KeyCache?

    /// Options; the defaults are standard policy and markers, signing as the From address.
    public init(mail: MailOptions = .standard, redactor: Redactor = .standard, signAs: String? = nil,
                requirements: KeyRequirements = .anyValidity, outerSubject: String = "...",
                publisher: (any SpanPublisher)? = nil, readingLifetime: Int? = nil, noticeMustBeLetter: Bool = false) {
        self.mail = mail
        self.redactor = redactor
        self.signAs = signAs
        self.requirements = requirements
        self.outerSubject = outerSubject
        self.publisher = publisher
        self.readingLifetime = readingLifetime
        self.noticeMustBeLetter = noticeMustBeLetter
    }
}

extension PipelineOptions {
    /// The options a configuration sets (the filter's, the user's, the
    /// command line's): its policy keys and its `[reading]` table. The one
    /// place where settings become pipeline options.
    public init(policy: PolicySettings, reading: ReadingSettings?) {
        self.init(mail: policy.mail, redactor: policy.redactor, signAs: policy.signAs,
                  requirements: KeyRequirements(minimumValidity: policy.minimumValidity),
                  publisher: reading?.publisher, readingLifetime: reading?.lifetime,
                  noticeMustBeLetter: reading?.noticeMustBeLetter ?? true)
    }
}

/// A mail with its plan, ready to be written. Holds GMime objects, so it is
/// not `Sendable`.
public final class PreparedMail {
    /// The mail as given.
    public let message: MIMEMessage
    /// Decisions, reasons, states and copies.
    public let plan: Plan
    /// The envelope sender every copy keeps.
    public let envelopeSender: String
    /// The key letters are signed with (and also encrypted to).
    public let signingKey: Key?
    /// The mail as its bytes came, if given: what an unchanged copy is made of.
    public let original: [UInt8]?
    let keys: [String: Key]
    /// What reading the mail every way found: where a marker shows (for a
    /// mail that is encrypted already: outside its ciphertext) and which
    /// places cannot be read with certainty.
    let readings: Redactor.ReadingsFinding

    /// True when writing publishes spans: partially encrypted postcards are
    /// due and the mail has marked spans (unless every span stands in an
    /// attribute or a comment, which leaves nothing to show).
    public var publishesSpans: Bool {
        plan.hasMarkedSpans && plan.options.postcardExtension == .partiallyEncrypted && plan.copies.contains { $0.kind == .postcard }
    }

    /// The envelope sender's own usable key, if any: what a password notice is encrypted to.
    public let senderKey: Key?

    /// The censored postcard as ``MailPipeline/write(_:)`` sends it (before an
    /// invitation or a reading-page notice is added): the rebuilt one for a
    /// mail with marked spans, else the mail as it is, Bcc removed.
    public func censoredPostcard() throws -> MIMEMessage {
        if let rebuilt { return try rebuilt.get().message }
        if plan.hasMarkedSpans || readings.marker != nil, let place = readings.uncertain.first {
            throw PipelineError(.unreadable, detail: place)
        }
        return try Postcard.unchanged(message)
    }
    /// The postcard rebuilt from the mail (``Postcard/rebuilt(_:redactor:mode:opaque:check:made:stopped:)``),
    /// or why it could not be: made once, in `prepare`, for a mail with marked spans that
    /// has a postcard or unchanged copy; nil otherwise.
    let rebuilt: Result<RebuiltPostcard, any Error>?
    /// The catalog the rebuilt postcard numbered its spans in (partially encrypted postcards); nil otherwise.
    let catalog: SpanCatalog?

    /// True when a password notice can go to the envelope sender as a letter:
    /// the sender has a usable key and there is a key to sign with.
    public var senderCanReceiveLetter: Bool { senderKey != nil && signingKey != nil }

    init(message: MIMEMessage, original: [UInt8]?, plan: Plan, envelopeSender: String, signingKey: Key?, senderKey: Key?,
         keys: [String: Key], readings: Redactor.ReadingsFinding, rebuilt: Result<RebuiltPostcard, any Error>? = nil,
         catalog: SpanCatalog? = nil) {
        self.rebuilt = rebuilt
        self.catalog = catalog
        self.readings = readings
        self.senderKey = senderKey
        self.message = message
        self.original = original
        self.plan = plan
        self.envelopeSender = envelopeSender
        self.signingKey = signingKey
        self.keys = keys
    }
}

/// Every copy of a mail, and for a partially encrypted postcard where its
/// spans were published and the password, which belongs to the sender alone
/// and is in no copy.
public struct WrittenMail: Sendable {
    /// The copies, in the plan's order.
    public let copies: [WrittenCopy]
    /// Where the postcard's spans can be read; nil unless a partially encrypted postcard was written.
    public let publication: Publication?
    /// The password of the reading page; nil when there is none.
    public let password: SpanPassword?
}

/// One written message and where it goes.
public struct WrittenCopy: Sendable {
    /// Letter, postcard or the mail unchanged.
    public let kind: PlannedCopy.Kind
    /// Envelope recipients.
    public let recipients: [String]
    /// Fingerprints the copy is encrypted to (recipients, then the sender); empty for postcards.
    public let fingerprints: [String]
    /// The envelope sender.
    public let envelopeSender: String
    /// The message, LF line endings: in memory, or for a large letter its
    /// ciphertext in a spool file between the letter's first and last lines.
    let content: Content

    enum Content: Sendable {
        case memory([UInt8])
        case spooled(head: [UInt8], ciphertext: Spool, tail: [UInt8])
    }

    init(kind: PlannedCopy.Kind, recipients: [String], fingerprints: [String], envelopeSender: String, bytes: [UInt8]) {
        self.init(kind: kind, recipients: recipients, fingerprints: fingerprints, envelopeSender: envelopeSender,
                  content: .memory(bytes))
    }

    init(kind: PlannedCopy.Kind, recipients: [String], fingerprints: [String], envelopeSender: String, content: Content) {
        self.kind = kind
        self.recipients = recipients
        self.fingerprints = fingerprints
        self.envelopeSender = envelopeSender
        self.content = content
    }

    /// For a letter, each recipient with the key it is encrypted to (what
    /// key continuity remembers once the letter is on its way); empty for
    /// other copies. The sender's own key comes after the recipients' keys.
    public var letterKeys: [(address: String, fingerprint: String)] {
        guard kind == .letter, fingerprints.count >= recipients.count else { return [] }
        return Array(zip(recipients, fingerprints)).map { (address: $0.0, fingerprint: $0.1) }
    }

    /// The whole message in memory (a spooled letter is read in).
    public var bytes: [UInt8] {
        get throws {
            switch content {
            case .memory(let bytes): return bytes
            case .spooled(let head, let ciphertext, let tail): return try head + ciphertext.bytes() + tail
            }
        }
    }

    /// The message's size in bytes.
    public var size: Int {
        switch content {
        case .memory(let bytes): bytes.count
        case .spooled(let head, let ciphertext, let tail): head.count + ciphertext.size + tail.count
        }
    }

    /// Calls `body` with the message in pieces, in order, never whole: how a
    /// large letter is written out.
    public func forEachPiece(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        switch content {
        case .memory(let bytes): try bytes.withUnsafeBytes(body)
        case .spooled(let head, let ciphertext, let tail):
            try head.withUnsafeBytes(body)
            try ciphertext.forEachPiece(body)
            try tail.withUnsafeBytes(body)
        }
    }
}

/// From a mail to its copies: recipients, one key look-up, the plan, then
/// letters and postcards, all made before any is returned.
public struct MailPipeline: Sendable {
    /// The GnuPG home for key look-up, signing and encryption.
    public let gnupg: GnuPG
    /// Policy, markers, signing key and publishing.
    public let options: PipelineOptions

    /// A pipeline over `gnupg` with `options`.
    public init(gnupg: GnuPG, options: PipelineOptions = PipelineOptions()) {
        self.gnupg = gnupg
        self.options = options
    }

    /// The same pipeline with key continuity kept in `continuity`.
    public func with(continuity: (any KeyContinuityStore)?) -> MailPipeline {
        var options = options
        options.continuity = continuity
        return MailPipeline(gnupg: gnupg, options: options)
    }

    /// The recipients of `message`: To, Cc and Bcc. With `envelope`, exactly
    /// those addresses, each with its role from the header fields; an envelope
    /// recipient in neither To nor Cc counts as Bcc.
    public static func recipients(of message: MIMEMessage, envelope: [String]? = nil) -> [Recipient] {
        let byRole: [(RecipientRole, [MailAddress])] = [(.to, message.addresses(.to)), (.cc, message.addresses(.cc)),
                                                        (.bcc, message.addresses(.bcc))]
        let headerRecipients = byRole.flatMap { role, addresses in addresses.map { Recipient($0.address, role) } }
        guard let envelope else { return headerRecipients }
        return envelope.map { address in
            let role = headerRecipients.first { $0.address.lowercased() == address.lowercased() && $0.role != .bcc }?.role
            return Recipient(address, role ?? .bcc)
        }
    }

    /// True for mail that is encrypted already (``EncryptedAlready``): an
    /// OpenPGP message whose packets are PKESK/SKESK followed by encrypted
    /// data (PGP/MIME, or a text body that is nothing but one armored such
    /// message), or S/MIME enveloped-data. Literal, compressed or signed-only
    /// OpenPGP, an armored block inside other text and S/MIME signed-data are not.
    public static func isEncrypted(_ message: MIMEMessage) -> Bool {
        message.body.map(EncryptedAlready.isEncrypted) ?? false
    }

    /// Looks up every recipient's key (and the signer's) in one listing and
    /// makes the plan. Nothing is written yet. With `original`, the bytes the
    /// message was parsed from, a mail that is encrypted already goes out as
    /// exactly those bytes (Bcc aside) rather than written anew.
    package func prepare(_ message: MIMEMessage, original: [UInt8]? = nil, envelopeSender: String? = nil,
                        envelopeRecipients: [String]? = nil) throws -> PreparedMail {
        let wanted = try keysWanted(for: message, envelopeSender: envelopeSender, envelopeRecipients: envelopeRecipients)
        let book = try lookUp(wanted)
        return try prepare(message, original: original, envelopeSender: envelopeSender,
                           envelopeRecipients: envelopeRecipients, keys: book)
    }

    /// The addresses (and a signer's fingerprint) whose keys ``prepare(_:original:envelopeSender:envelopeRecipients:keys:)``
    /// needs for `message`: what a caller that keeps a ``KeyBook`` looks up when it lacks some.
    package func keysWanted(for message: MIMEMessage, envelopeSender: String? = nil,
                           envelopeRecipients: [String]? = nil) throws -> KeyBook.Wanted {
        let (envelopeSender, envelopeRecipients) = try Self.checkedEnvelope(envelopeSender, envelopeRecipients)
        let recipients = Self.recipients(of: message, envelope: envelopeRecipients)
        guard !recipients.isEmpty else { throw PipelineError(.noRecipients) }
        let from = message.addresses(.from).first?.address
        guard let sender = envelopeSender ?? from else { throw PipelineError(.noSender) }
        let signer = options.signAs ?? from ?? sender
        let signerIsFingerprint = GnuPG.isFingerprint(signer)
        // A sender like MAILER-DAEMON has no key to look for: letters then fail
        // for want of a signing key, postcards go out as they should.
        let signerIsAddress = !signerIsFingerprint && GnuPG.isLookupAddress(signer)
        // An address gpg cannot look up ("john doe"@example.net) simply has no key.
        var addresses = recipients.map(\.address).filter(GnuPG.isLookupAddress) + (signerIsAddress ? [signer] : [])
        // The envelope sender may get a password notice, as a letter when it has a key.
        if GnuPG.isLookupAddress(sender) && !addresses.contains(where: { $0.lowercased() == sender.lowercased() }) {
            addresses.append(sender)
        }
        return KeyBook.Wanted(addresses: addresses, fingerprints: signerIsFingerprint ? [signer] : [])
    }

    /// One key-listing operation for everything in `wanted`.
    package func lookUp(_ wanted: KeyBook.Wanted) throws -> KeyBook {
        var book = KeyBook()
        guard !wanted.isEmpty else { return book }
        let (lookups, listed) = try gnupg.lookup(wanted.addresses, requirements: options.requirements,
                                                  fingerprints: wanted.fingerprints)
        book.add(lookups, listed: listed, fingerprints: wanted.fingerprints)
        return book
    }

    /// Makes the plan from keys looked up before (`keys` must hold every
    /// address and fingerprint of ``keysWanted(for:envelopeSender:envelopeRecipients:)``;
    /// one it lacks counts as having no key). No gpg process runs.
    package func prepare(_ message: MIMEMessage, original: [UInt8]? = nil, envelopeSender: String? = nil,
                        envelopeRecipients: [String]? = nil, keys book: KeyBook) throws -> PreparedMail {
        let (envelopeSender, envelopeRecipients) = try Self.checkedEnvelope(envelopeSender, envelopeRecipients)
        let recipients = Self.recipients(of: message, envelope: envelopeRecipients)
        guard !recipients.isEmpty else { throw PipelineError(.noRecipients) }
        let from = message.addresses(.from).first?.address
        guard let sender = envelopeSender ?? from else { throw PipelineError(.noSender) }
        let alreadyEncrypted = Self.isEncrypted(message)
        if !alreadyEncrypted { try Postcard.refuseFalseEncryption(message) }
        // A mail has marked spans when any reading of it shows a marker.
        var readings = options.redactor.readings(of: message)
        // Encrypted mail goes out as its bytes came: what GMime's reading
        // dropped (a malformed header line) is searched in them too.
        if alreadyEncrypted, readings.marker == nil, let original {
            var search = Redactor.MarkerSearch(options.redactor, encodings: false)
            original.withUnsafeBytes { search.feed($0) }
            if search.finish() { readings = Redactor.ReadingsFinding(marker: "the mail as it came", uncertain: readings.uncertain) }
        }
        // For a mail encrypted already, a marker outside the ciphertext (the
        // Subject, say) is a span too: the plan says so, as the copy is censored.
        // Otherwise the model is read by rebuilding the postcard as it would be
        // written (numbered for partially encrypted postcards), so that a mail is
        // rebuilt once: below, the postcard is taken from that rebuild.
        let numbering = options.mail.postcardExtension == .partiallyEncrypted ? SpanCatalog() : nil
        let found = alreadyEncrypted ? Postcard.SpanFinding(hasSpans: readings.marker != nil, model: nil)
            : try Postcard.hasMarkedSpans(message, redactor: options.redactor, readings: readings,
                                          mode: numbering.map { .number($0) } ?? .censor, opaque: options.mail.opaqueParts)
        let hasSpans = found.hasSpans

        let signer = options.signAs ?? from ?? sender
        let signerIsFingerprint = GnuPG.isFingerprint(signer)
        let learned = try options.continuity?.learned(recipients.map(\.address) + [sender]) ?? [:]
        var availability: [String: KeyAvailability] = [:]
        var keys: [String: Key] = [:]
        var chosen: [String: (key: Key, origin: KeyOrigin, since: Date?)] = [:]
        for recipient in recipients {
            let address = recipient.address.lowercased()
            guard let found = book.availability(address, learned: learned[address] ?? []) else { continue }
            availability[address] = found
            if let choice = book.choice(address, learned: learned[address] ?? []) {
                keys[choice.key.fingerprint] = choice.key
                chosen[address] = choice
            }
        }
        let signerKeys = signerIsFingerprint ? book.listed(signer) : book.lookup(signer)?.candidates.map(\.key) ?? []
        let signingKey = signerKeys.first { key in
            !key.isRevoked && !key.isExpired && !key.isDisabled && !key.isInvalid
                && key.subkeys.contains(where: \.isUsableForSigning)
        }
        let remembered = try options.continuity?.remembered(recipients.map(\.address)) ?? [:]
        // Key changes: the key a recipient would get is not the one they last got a letter with.
        var changes: [String: KeyChange] = [:]
        for (address, choice) in chosen {
            guard let previous = remembered[address], previous != choice.key.fingerprint else { continue }
            changes[address] = KeyChange(address: address, previous: previous, current: choice.key.fingerprint,
                                         origin: choice.origin.rawValue,
                                         since: choice.since.map { $0.formatted(.iso8601) },
                                         certifiedByPrevious: choice.key.isCertified(by: previous, for: address))
        }
        var plan = try Plan(recipients: recipients, keys: availability, hasMarkedSpans: hasSpans,
                            alreadyEncrypted: alreadyEncrypted, options: options.mail, remembered: remembered, changes: changes)
        // The postcard is rebuilt here, once: the plan shows what it withholds,
        // passes and drops, and `write` sends it. What stops the rebuild stops
        // the mail when it is written, not the plan.
        var rebuilt: Result<RebuiltPostcard, any Error>?
        var catalog: SpanCatalog?
        if hasSpans || readings.marker != nil, readings.uncertain.isEmpty,
           plan.copies.contains(where: { $0.kind == .postcard || $0.kind == .unchanged }) {
            let numbered = hasSpans && options.mail.postcardExtension == .partiallyEncrypted
                && plan.copies.contains { $0.kind == .postcard }
            // The catalog the model was read with (filled when that rebuild is taken, empty when none was made).
            catalog = numbered ? numbering : nil
            var stopped: PostcardParts?
            rebuilt = Result {
                try Postcard.rebuilt(message, redactor: options.redactor, mode: catalog.map { Redactor.Mode.number($0) } ?? .censor,
                                     opaque: options.mail.opaqueParts, check: false, made: found.model) { stopped = $0 }
            }
            if let parts = (try? rebuilt?.get())?.parts ?? stopped { plan.postcardParts = parts }
        }
        let senderKey = book.choice(sender.lowercased(), learned: learned[sender.lowercased()] ?? [])?.key
        return PreparedMail(message: message, original: original, plan: plan, envelopeSender: sender, signingKey: signingKey,
                            senderKey: senderKey, keys: keys, readings: readings, rebuilt: rebuilt, catalog: catalog)
    }

    /// Envelope addresses reach argv and SMTP: checked (and `<…>` taken off)
    /// for every caller, before anything else.
    static func checkedEnvelope(_ sender: String?, _ recipients: [String]?) throws -> (String?, [String]?) {
        let sender = try sender.map { address throws(EnvelopeAddressError) in
            try EnvelopeAddress.normalised(address, which: "sender", mayBeEmpty: true)
        }
        let recipients = try recipients.map { list throws(EnvelopeAddressError) in
            try list.enumerated().map { index, address throws(EnvelopeAddressError) in
                try EnvelopeAddress.normalised(address, which: "recipient \(index + 1)")
            }
        }
        return (sender, recipients)
    }

    /// Throws for a refused plan: ``KeyLossError`` when key continuity holds
    /// it (temporary), ``KeyChangeError`` when a recipient's key changed and
    /// the change is not accepted, `PipelineError.refused` otherwise.
    package static func checkNotRefused(_ plan: Plan) throws {
        let lost = plan.keyLoss
        if !lost.isEmpty {
            throw KeyLossError(losses: lost.map { item in
                guard case .refused(let why) = item.decision else { return (item.recipient.address, "") }
                return (item.recipient.address, why.description)
            })
        }
        let changed = plan.heldKeyChanges
        if !changed.isEmpty { throw KeyChangeError(changes: changed) }
        if plan.isRefused { throw PipelineError(.refused, addresses: plan.refused.map(\.recipient.address)) }
    }

    /// Writes every copy of the plan. All cryptography happens here, before
    /// anything is returned; any failure throws and nothing is written.
    ///
    /// With the partially encrypted extension, postcards' spans are numbered,
    /// encrypted and published first; when publishing fails nothing is
    /// written (`publishFailed`), and when a later step fails the
    /// publication is withdrawn again.
    package func write(_ prepared: PreparedMail) throws -> WrittenMail {
        let plan = prepared.plan
        try Self.checkNotRefused(plan)
        // Read it or refuse it: in a mail with marked spans (for one encrypted
        // already: a marker outside the ciphertext), what cannot be read with
        // certainty stops the mail before anything is written.
        if plan.hasMarkedSpans || prepared.readings.marker != nil, let place = prepared.readings.uncertain.first {
            throw PipelineError(.unreadable, detail: place)
        }
        let kinds = Set(plan.copies.map(\.kind))
        let body = prepared.message.body
        // multipart/signed, cleartext-signed text, S/MIME signed-data: a
        // letter unwraps only the first, at the top.
        let isSigned = EncryptedAlready.isSigned(prepared.message)
        if plan.hasMarkedSpans && isSigned
            && (kinds.contains(.postcard) || !(body?.contentType.is("multipart", "signed") ?? false)) {
            throw PipelineError(.signedMailNeedsRedaction)
        }

        // The sender's key goes into letters (Autocrypt) and invitations.
        var exported: Key?
        if kinds.contains(.letter) || (kinds.contains(.postcard) && options.mail.invite) {
            guard let signer = prepared.signingKey else {
                throw PipelineError(.noSigningKey, detail: options.signAs ?? prepared.message.addresses(.from).first?.address ?? prepared.envelopeSender)
            }
            exported = signer
        }

        // Censored once: the letters' outside and the postcard both come from it.
        var censoredCopy: MIMEMessage?
        func censored() throws -> MIMEMessage {
            if let censoredCopy { return censoredCopy }
            let made: MIMEMessage
            if let rebuilt = prepared.rebuilt {
                made = try rebuilt.get().message
            } else if plan.hasMarkedSpans || prepared.readings.marker != nil {
                // Letters only: their outside is all that is shown, its fields rebuilt.
                made = try PostcardRebuild.outside(prepared.message, redactor: options.redactor)
            } else {
                made = try Postcard.unchanged(prepared.message)
            }
            censoredCopy = made
            return made
        }
        var reading: (postcard: ReadingPostcard, publication: Publication)?
        if prepared.publishesSpans {
            guard let publisher = options.publisher else { throw PipelineError(.noPublisher) }
            if let rebuilt = try prepared.rebuilt?.get(), let catalog = prepared.catalog,
               let postcard = try ReadingPostcard(rebuilt, catalog: catalog, redactor: options.redactor, lifetime: options.readingLifetime) {
                do { reading = (postcard, try publisher.publish(postcard.document)) } catch {
                    // A document the server will never take (too large, refused as malformed) must not be retried.
                    if error.status == 400 || error.status == 413 { throw PipelineError(.publishRefused, detail: error.description) }
                    throw PipelineError(.publishFailed, detail: error.description)
                }
            }
        }
        do {
            let copies = try writeCopies(prepared, reading: reading, exporting: exported, censored: censored)
            return WrittenMail(copies: copies, publication: reading?.publication, password: reading?.postcard.password)
        } catch {
            if let reading { try? options.publisher?.withdraw(reading.publication) }
            throw error
        }
    }

    private func writeCopies(_ prepared: PreparedMail, reading: (postcard: ReadingPostcard, publication: Publication)?,
                             exporting exported: Key?, censored: () throws -> MIMEMessage) throws -> [WrittenCopy] {
        let plan = prepared.plan
        // First the letters' drafts, on this thread: GMime objects stay on one thread.
        var drafts: [Int: (draft: Letter.Draft, keys: [Key], signer: Key)] = [:]
        var letterSource: MIMEMessage?
        for (index, planned) in plan.copies.enumerated() where planned.kind == .letter {
            guard let signer = prepared.signingKey else { throw PipelineError(.noSigningKey, detail: prepared.envelopeSender) }
            if letterSource == nil { letterSource = try revealed(prepared.message, spans: plan.hasMarkedSpans) }
            var keys = try planned.fingerprints.map { fingerprint in
                guard let key = prepared.keys[fingerprint] else { throw PipelineError(.noSigningKey, detail: fingerprint) }
                return key
            }
            if signer.subkeys.contains(where: \.isUsableForEncryption) && !keys.contains(signer) { keys.append(signer) }
            drafts[index] = (try Letter.draft(letterSource!, outside: plan.hasMarkedSpans ? try censored() : letterSource,
                                              outerSubject: options.outerSubject), keys, signer)
        }

        // Autocrypt key data, all from one export: the sender's for the
        // Autocrypt header, and for a letter to several recipients each
        // recipient's for the Autocrypt-Gossip headers inside it. A Bcc letter
        // carries no gossip (it has one recipient, and must not tell a Bcc
        // recipient's key to anyone); the To/Cc letter never names a Bcc recipient.
        let fromAddress = prepared.message.addresses(.from).first?.address
            ?? exported?.userIDs.first { !$0.address.isEmpty }?.address ?? prepared.envelopeSender
        var wanted: [(key: Key, address: String)] = exported.map { [($0, fromAddress)] } ?? []
        var gossip: [Int: [Int]] = [:]  // letter index: indices into `wanted`
        for (index, planned) in plan.copies.enumerated() where planned.kind == .letter && drafts[index] != nil {
            guard planned.recipients.count > 1, !planned.recipients.contains(where: { $0.role == .bcc }) else { continue }
            gossip[index] = zip(planned.recipients, planned.fingerprints).compactMap { recipient, fingerprint in
                guard let key = prepared.keys[fingerprint] else { return nil }
                if let known = wanted.firstIndex(where: { $0.key == key && $0.address.lowercased() == recipient.address.lowercased() }) {
                    return known
                }
                wanted.append((key, recipient.address))
                return wanted.count - 1
            }
        }

        // Then the GnuPG work: the key export runs beside the letters'
        // sign+encrypt steps, each a gpg process of its own. The letters that
        // carry gossip (made from the export) come last, so that the export
        // runs beside the others (a Bcc letter, say) instead of ahead of every
        // letter. The letters go one after another: two gpg processes that
        // encrypt in one home at once collide on libgcrypt's random_seed lock
        // when they exit, and the loser sleeps 250 ms (found by scripts/bench);
        // an export uses no random numbers and writes no random_seed. Each
        // letter's body streams into gpg and its ciphertext into a spool file.
        let gnupg = self.gnupg
        let exportWanted = wanted
        let cache = options.keyCache
        let export = try Background(wanted.isEmpty ? nil : {
            try cache?.autocryptKeydata(exportWanted, gnupg: gnupg) ?? gnupg.autocryptKeydata(exportWanted)
        })
        var ciphertexts: [Int: Spool] = [:]
        do {
            let order = drafts.keys.sorted { (gossip[$0] == nil ? 0 : 1, $0) < (gossip[$1] == nil ? 0 : 1, $1) }
            var gossipAdded = gossip.isEmpty
            for index in order {
                if !gossipAdded && gossip[index] != nil {
                    let keydata = try export.wait().get() ?? []
                    for (letter, entries) in gossip {
                        for entry in entries {
                            try drafts[letter]!.draft.inner.appendRawHeader(
                                "Autocrypt-Gossip", Autocrypt.gossipHeader(address: wanted[entry].address, keydata: keydata[entry]))
                        }
                    }
                    gossipAdded = true
                }
                let (draft, keys, signer) = drafts[index]!
                let spool = try Spool()
                do {
                    try Letter.encrypt(draft, to: keys, signer: signer, using: gnupg, into: spool.fd)
                } catch let error as GPGMEError where error.code == .noSecretKey || error.code == .unusableSecretKey {
                    // The signer's public key was listed, but GnuPG holds no usable secret part.
                    throw PipelineError(.noSigningKey, detail: signer.fingerprint)
                }
                ciphertexts[index] = spool
            }
        } catch {
            _ = export.wait()
            throw error
        }
        var keydata: [UInt8] = []
        var autocrypt: String?
        if exported != nil {
            keydata = try export.wait().get()?.first ?? []
            autocrypt = Autocrypt.header(address: fromAddress, keydata: keydata)
        }

        var copies: [WrittenCopy] = []
        var postcard: [UInt8]?
        for (index, planned) in plan.copies.enumerated() {
            let addresses = planned.recipients.map(\.address)
            switch planned.kind {
            case .unchanged where prepared.readings.marker != nil:
                // Encrypted already, with a marker outside the ciphertext (the
                // Subject, say): censored as a postcard is, the ciphertext as it was.
                copies.append(WrittenCopy(kind: .unchanged, recipients: addresses, fingerprints: [],
                                          envelopeSender: prepared.envelopeSender,
                                          bytes: try Self.checked(try censored().serialize(), redactor: options.redactor)))
            case .unchanged:
                let bytes = try prepared.original.map { Self.withoutBcc($0) } ?? {
                    let copy = try prepared.message.copy()
                    copy.removeHeader("Bcc")
                    copy.removeHeader("Resent-Bcc")
                    return copy.serialize()
                }()
                copies.append(WrittenCopy(kind: .unchanged, recipients: addresses, fingerprints: [],
                                          envelopeSender: prepared.envelopeSender, bytes: bytes))
            case .letter:
                let (draft, keys, _) = drafts[index]!
                copies.append(WrittenCopy(kind: .letter, recipients: addresses, fingerprints: keys.map(\.fingerprint),
                                          envelopeSender: prepared.envelopeSender,
                                          content: try letterContent(draft, ciphertext: ciphertexts[index]!, autocrypt: autocrypt)))
            case .postcard:
                if postcard == nil {
                    let base = try reading.map { try $0.postcard.postcard($0.publication) } ?? censored()
                    postcard = try Self.checked(try postcardBytes(base, invite: options.mail.invite ? (autocrypt, keydata) : nil),
                                                redactor: options.redactor)
                }
                copies.append(WrittenCopy(kind: .postcard, recipients: addresses, fingerprints: [],
                                          envelopeSender: prepared.envelopeSender, bytes: postcard!))
            }
        }
        return copies
    }

    /// The letter around its spooled ciphertext: in memory when small, else
    /// the letter's lines before and after the ciphertext with the spool
    /// between (the letter is made with a stand-in line, then cut there).
    /// The stand-in is plain 7-bit text, so the part is written as 7bit: the
    /// ciphertext must be so too (armor is, unless a gpg.conf comment or
    /// the like brings in other bytes or long lines); if not, the letter is
    /// made in memory, where the part's encoding follows its real content.
    func letterContent(_ draft: Letter.Draft, ciphertext: Spool, autocrypt: String?) throws -> WrittenCopy.Content {
        if try ciphertext.size <= options.spoolAbove || !Self.isShortLineASCII(ciphertext) {
            return .memory(try Letter.assemble(draft, ciphertext: try ciphertext.bytes(), autocrypt: autocrypt).serialize())
        }
        let standIn = Array("-----MAILSEC CIPHERTEXT \(UUID().uuidString)-----\n".utf8)
        let letter = try Letter.assemble(draft, ciphertext: standIn, autocrypt: autocrypt).serialize()
        guard let start = letter.firstRange(of: standIn)?.lowerBound else {
            throw StreamingError(description: "the letter could not be assembled around its ciphertext")
        }
        return .spooled(head: Array(letter[..<start]), ciphertext: ciphertext, tail: Array(letter[(start + standIn.count)...]))
    }

    /// True when every byte is 7-bit, not NUL or a lone CR, and every line is at most 998 bytes long.
    static func isShortLineASCII(_ spool: Spool) throws -> Bool {
        struct Unclean: Error {}
        var clean = true, lineLength = 0, previous: UInt8 = 0
        do {
            try spool.forEachPiece { piece in
                for byte in piece {
                    if byte == 10 {
                        lineLength = 0
                    } else {
                        // A CR must end its line; it does not count towards the length.
                        if previous == 13 || byte >= 0x80 || byte == 0 { throw Unclean() }
                        if byte != 13 { lineLength += 1 }
                        if lineLength > 998 { throw Unclean() }
                    }
                    previous = byte
                }
            }
        } catch is Unclean {
            clean = false  // read no further
        }
        return clean && previous != 13
    }

    /// The final check of a postcard as written: `bytes` parsed again and
    /// read every way (``Redactor/readings(of:)``); a marker in any reading
    /// stops the mail. A postcard larger than `wholeAbove` is checked as the
    /// message it was written from (by the caller) and here in its bytes
    /// only, so that it is never held twice.
    static func checked(_ bytes: [UInt8], redactor: Redactor, wholeAbove: Int = 32 << 20) throws -> [UInt8] {
        try checkedMessage(bytes, redactor: redactor, wholeAbove: wholeAbove).bytes
    }

    /// ``checked(_:redactor:wholeAbove:)``, with the message it parsed (nil
    /// above `wholeAbove`), so that a caller who needs the postcard as a
    /// message does not parse it again.
    static func checkedMessage(_ bytes: [UInt8], redactor: Redactor,
                               wholeAbove: Int = 32 << 20) throws -> (bytes: [UInt8], message: MIMEMessage?) {
        if bytes.count <= wholeAbove {
            guard let written = try? MIMEMessage.parse(bytes, options: .unlimited) else {
                throw PipelineError(.unredactable, detail: "the postcard as written (not readable)")
            }
            if let place = redactor.remainingMarker(in: written) { throw PipelineError(.unredactable, detail: place) }
            return (bytes, written)
        }
        try bytes.withUnsafeBytes { try searched($0, redactor: redactor) }
        return (bytes, nil)
    }

    /// ``checked(_:redactor:wholeAbove:)`` of bytes lent where they were written
    /// (``MIME/MIMEMessage/withSerialized(newline:_:)``): copied into an array only at or
    /// below `wholeAbove`, to be parsed again.
    static func check(_ bytes: UnsafeRawBufferPointer, redactor: Redactor, wholeAbove: Int = 32 << 20) throws {
        guard bytes.count > wholeAbove else {
            _ = try checkedMessage(Array(bytes), redactor: redactor, wholeAbove: wholeAbove)
            return
        }
        try searched(bytes, redactor: redactor)
    }

    /// The check of a postcard above `wholeAbove`: its bytes searched for a marker.
    private static func searched(_ bytes: UnsafeRawBufferPointer, redactor: Redactor) throws {
        var search = Redactor.MarkerSearch(redactor, encodings: false)
        search.feed(bytes)
        if search.finish() { throw PipelineError(.unredactable, detail: "the postcard as written") }
    }

    /// `bytes` with every Bcc and Resent-Bcc header field taken out (and
    /// the fields named in `also`), nothing else changed: what an unchanged
    /// (already encrypted) copy is made of.
    package static func withoutBcc(_ bytes: [UInt8], also: Set<String> = []) -> [UInt8] {
        let dropped = Set(["bcc", "resent-bcc"] + also.map { $0.lowercased() })
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        var dropping = false
        while index < bytes.count {
            let end = bytes[index...].firstIndex(of: 10).map { $0 + 1 } ?? bytes.count
            let line = bytes[index..<end]
            if line.first == 10 || (line.first == 13 && line.dropFirst().first == 10) {
                out += bytes[index...]  // end of the header section: the rest as it is
                return out
            }
            if line.first != 32 && line.first != 9 {  // a new field, not a continuation
                let name = line.prefix { $0 != UInt8(ascii: ":") }
                let field = String(decoding: name, as: UTF8.self).trimmingBlanks.lowercased()
                dropping = name.count < line.count && dropped.contains(field)
            }
            if !dropping { out += line }
            index = end
        }
        return out
    }

    /// Prepares and writes in one go. `password` and `publication` are set
    /// when a partially encrypted postcard was written: the password is for
    /// the sender alone.
    public func process(_ message: MIMEMessage, envelopeSender: String? = nil, envelopeRecipients: [String]? = nil)
        throws -> (plan: Plan, copies: [WrittenCopy], publication: Publication?, password: SpanPassword?) {
        let prepared = try prepare(message, envelopeSender: envelopeSender, envelopeRecipients: envelopeRecipients)
        let written = try write(prepared)
        return (prepared.plan, written.copies, written.publication, written.password)
    }

    /// The full text with markers removed; a signed body is unwrapped, since
    /// the letter's own signature takes its place.
    func revealed(_ message: MIMEMessage, spans: Bool) throws -> MIMEMessage {
        func unwrapped() throws -> MIMEMessage {
            let copy = try message.copySharingContent()
            copy.removeHeader("Bcc")
            copy.removeHeader("Resent-Bcc")
            if spans, let body = copy.body, body.contentType.is("multipart", "signed"), let content = body.children.first {
                copy.setBody(try content.copySharingContent())
            }
            return copy
        }
        let copy = try unwrapped()
        guard spans else { return copy }
        do {
            try options.redactor.apply(.reveal, to: copy)
            return copy
        } catch let error as PolicyError {
            // As ``Postcard/hasMarkedSpans``: markers that pair up in the model the rebuild
            // reads are spans, whatever the raw text of a part it does not read as text says.
            // The letter keeps such a part as it came (markers and all), so `encrypt` with a
            // letter agrees with `redact`; without a model the error stands.
            guard (try? PostcardRebuild.rebuild(message, redactor: options.redactor)) != nil else { throw error }
            let lenient = try unwrapped()
            try options.redactor.apply(.reveal, to: lenient, keepingUnpaired: true)
            return lenient
        }
    }

    /// The postcard written from the censored copy, with the invitation when
    /// asked for (on a copy of its own, so the letters' outside stays as it is).
    func postcardBytes(_ censored: MIMEMessage, invite: (autocrypt: String?, keydata: [UInt8])?) throws -> [UInt8] {
        // Every postcard's header fields are 7-bit (a partially encrypted one is no censored copy).
        censored.encodeEightBitHeaders()
        censored.foldLongHeaders()
        guard let invite else { return censored.serialize() }
        let copy = try censored.copy()
        if let body = copy.body {
            let sender = censored.addresses(.from).first
            let who = sender.map { $0.name.isEmpty ? $0.address : "\($0.name) <\($0.address)>" } ?? "The sender"
            let text = MIMEEntity.text("""
                \(who) can send you encrypted mail.

                This mail was not encrypted, because we do not have a key for you. To receive \
                encrypted mail, set up OpenPGP in your mail program (Thunderbird has it built in) \
                and reply to this mail. The attached file is the sender's public key.

                """)
            text.setHeader("Content-Description", "Invitation to encrypted mail")
            let key = try MIMEEntity.part(Array(Armor.armor(invite.keydata).utf8), type: "application",
                                          subtype: "pgp-keys", filename: "public-key.asc")
            copy.setBody(.multipart("mixed", [try body.copy(), text, key]))
            if let autocrypt = invite.autocrypt { try copy.appendRawHeader("Autocrypt", autocrypt) }
        }
        return copy.serialize()
    }
}
