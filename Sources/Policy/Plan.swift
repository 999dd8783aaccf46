/// A recipient's place in the mail.
public enum RecipientRole: String, Sendable, Hashable, Codable, CaseIterable {
    case to, cc, bcc
}

/// One recipient of a mail.
public struct Recipient: Sendable, Hashable, Codable {
    /// The mail address, `local@domain`.
    public let address: String
    /// To, Cc or Bcc.
    public let role: RecipientRole

    /// A recipient at `address` in `role`.
    public init(_ address: String, _ role: RecipientRole) {
        self.address = address
        self.role = role
    }

    /// The domain part, lower-cased.
    public var domain: String {
        address.split(separator: "@").last.map { $0.lowercased() } ?? ""
    }
}

/// Why one key for a recipient cannot be used (from the key look-up).
public struct KeyRefusal: Sendable, Hashable, Codable {
    /// The refused key's fingerprint.
    public let fingerprint: String
    /// A stable reason code: `revoked`, `expired`, `disabled`, `invalid`,
    /// `no-encryption-subkey`, `validity-too-low`.
    public let reason: String
    /// The reason in words.
    public let detail: String

    /// A refused key, with its reason as a keyword and in words.
    public init(fingerprint: String, reason: String, detail: String) {
        self.fingerprint = fingerprint
        self.reason = reason
        self.detail = detail
    }
}

/// What the key look-up found for one recipient: the input the policy needs.
public enum KeyAvailability: Sendable, Hashable {
    /// A usable key: its fingerprint and where it came from (e.g. `keyring`).
    case usable(fingerprint: String, source: String)
    /// Keys exist but none is usable, each with its reason.
    case unusable([KeyRefusal])
    /// No key for the address at all.
    case missing

    /// True when a usable key is there.
    public var isUsable: Bool {
        if case .usable = self { return true }
        return false
    }
}

/// How postcards of a mail with marked spans treat the spans.
public enum PostcardExtension: String, Sendable, Hashable, Codable {
    /// Each span replaced by a fixed placeholder.
    case censored
    /// Each span replaced by a link to a reading page (password-protected).
    case partiallyEncrypted = "partially-encrypted"
}

/// A rule for the recipients in some domains.
public struct DomainRule: Sendable, Hashable {
    /// What the rule demands for the domain's recipients.
    public enum Mode: String, Sendable, Hashable {
        case requireLetter = "require-letter"
        case enforcePostcard = "enforce-postcard"
    }

    /// `example.org` (that domain only) or `*.example.gov` (every subdomain of it).
    public let pattern: String
    /// What the rule demands.
    public let mode: Mode

    /// A rule for the domains `pattern` names.
    public init(_ pattern: String, _ mode: Mode) {
        self.pattern = pattern.lowercased()
        self.mode = mode
    }

    /// True when `domain` (any case) is the pattern's domain, or a subdomain for `*.`.
    public func matches(_ domain: String) -> Bool {
        let domain = domain.lowercased()
        if pattern.hasPrefix("*.") { return domain.hasSuffix(String(pattern.dropFirst(1))) }
        return domain == pattern
    }
}

/// Key continuity: what a recipient whose remembered key is now revoked or
/// expired gets. (A remembered key that vanished altogether always holds the mail.)
public enum KeyLossRule: String, Sendable, Hashable, Codable {
    /// The mail is held (the filter defers it) until the key is renewed or the record is forgotten.
    case `defer`
    /// The recipient gets a postcard, with the key loss as its reason.
    case postcard
}

/// What a postcard of a mail with marked spans does with a part mailsec
/// does not read (an image, a PDF, an office file, an inline uuencoded block):
/// `opaque_parts` in filter.toml and config.toml, `--opaque-parts`.
public enum OpaqueParts: String, Sendable, Hashable, Codable, CaseIterable {
    /// Replaced in the postcard by a short note naming the file (the default).
    case withhold
    /// Sent unchanged and named in the plan as passed unread; a marker in its bytes refuses the mail.
    case pass
    /// The mail is refused.
    case refuse
}

/// What the rebuilt postcard of a mail with marked spans leaves out or
/// passes on unread: what `plan` shows. Each entry names the part and its
/// file by its censored name (`part 2 (application/pdf) "report.pdf"`).
public struct PostcardParts: Sendable, Hashable, Codable {
    /// Parts replaced by a note (`opaque_parts = "withhold"`).
    public var withheld: [String] = []
    /// Parts sent unchanged, unread (`opaque_parts = "pass"`).
    public var passed: [String] = []
    /// Parts that refuse the mail (`opaque_parts = "refuse"`).
    public var refused: [String] = []
    /// What the HTML allow-list dropped (elements, attributes), each with its part.
    public var dropped: [String] = []

    /// Nothing withheld, passed, refused or dropped.
    public init() {}

    /// True when there is nothing to show.
    public var isEmpty: Bool { withheld.isEmpty && passed.isEmpty && refused.isEmpty && dropped.isEmpty }
}

/// Key changes: what happens when the key a recipient would get differs
/// from the one they last got a letter with (key continuity). The command
/// line always holds such a mail until the person accepts the key.
public enum KeyChangeRule: String, Sendable, Hashable, Codable, CaseIterable {
    /// The mail is held (the filter defers it) until the change is accepted.
    case `defer`
    /// A new key certified by the remembered one is taken; any other change is held.
    case acceptCertified = "accept-certified"
    /// Every new key is taken.
    case accept
}

/// A recipient's key is not the one they last got a letter with.
public struct KeyChange: Sendable, Hashable, Codable {
    /// The recipient's address (lower case).
    public let address: String
    /// The key they last got a letter with.
    public let previous: String
    /// The key they would get now.
    public let current: String
    /// Where the new key came from: `imported` (the person's keyring),
    /// `autocrypt` or `gossip` (learned from mail).
    public let origin: String
    /// When: for a learned key when it was first learned, for an imported one
    /// when the key was made (ISO 8601); nil when unknown.
    public let since: String?
    /// The remembered key certified the new one (a rotation it vouches for).
    public let certifiedByPrevious: Bool

    /// A change of `address` from `previous` to `current`.
    public init(address: String, previous: String, current: String, origin: String, since: String?, certifiedByPrevious: Bool) {
        self.address = address.lowercased()
        self.previous = previous
        self.current = current
        self.origin = origin
        self.since = since
        self.certifiedByPrevious = certifiedByPrevious
    }

    /// The change in words: both keys, where the new one came from and when.
    public var description: String {
        let source = switch origin {
        case "autocrypt": "learned from an Autocrypt header"
        case "gossip": "learned from Autocrypt gossip"
        default: "imported"
        }
        return "the key changed from \(previous) to \(current) (\(source)" + (since.map { ", \($0)" } ?? "") + ")"
            + (certifiedByPrevious ? ", certified by the old key" : ", not certified by the old key")
    }
}

/// Per-mail options.
public struct MailOptions: Sendable, Hashable {
    /// Everybody gets a postcard, even recipients with keys.
    public var enforcePostcard: Bool
    /// Everybody must get a letter, or the mail is refused.
    public var requireLetter: Bool
    /// Rules by recipient domain; the first that matches a recipient applies.
    public var domainRules: [DomainRule]
    /// Postcards invite their recipients to encrypted mail.
    public var invite: Bool
    /// What postcards do with marked spans.
    public var postcardExtension: PostcardExtension
    /// What happens to a recipient whose remembered key (key continuity) is
    /// now revoked or expired.
    public var onKeyLoss: KeyLossRule
    /// What postcards of a mail with marked spans do with parts mailsec does not read.
    public var opaqueParts: OpaqueParts = .withhold
    /// What happens when a recipient's key differs from the one they last got
    /// a letter with (default: held until accepted).
    public var onKeyChange: KeyChangeRule = .defer

    /// Options; the defaults are ``standard``.
    public init(enforcePostcard: Bool = false, requireLetter: Bool = false, domainRules: [DomainRule] = [],
                invite: Bool = false, postcardExtension: PostcardExtension = .censored, onKeyLoss: KeyLossRule = .defer) {
        self.enforcePostcard = enforcePostcard
        self.requireLetter = requireLetter
        self.domainRules = domainRules
        self.invite = invite
        self.postcardExtension = postcardExtension
        self.onKeyLoss = onKeyLoss
    }

    /// Letters where keys allow, postcards elsewhere, censored spans.
    public static let standard = MailOptions()

    func rule(for recipient: Recipient) -> DomainRule.Mode? {
        domainRules.first { $0.matches(recipient.domain) }?.mode
    }
}

/// The decision for one recipient, with its reason.
public enum Decision: Sendable, Hashable {
    /// Encrypted and signed to this key.
    case letter(fingerprint: String, source: String)
    /// Plain, because of `why`.
    case postcard(PostcardReason)
    /// A letter was required but cannot be made; the mail is refused.
    case refused(PostcardReason)
    /// The mail is encrypted already; it goes out as it came.
    case unchanged

    /// True for a letter.
    public var isLetter: Bool {
        if case .letter = self { return true }
        return false
    }
}

/// Why a recipient does not get a letter.
public enum PostcardReason: Sendable, Hashable {
    /// `enforcePostcard` was set (the recipient may well have a key).
    case enforced
    /// No key for the address.
    case noKey
    /// Keys exist but none is usable.
    case noUsableKey([KeyRefusal])
    /// Key continuity: the recipient got a letter to this key before, and now
    /// there is no key for them at all (a damaged keyring, a deleted key).
    case keyVanished(fingerprint: String)
    /// Key continuity: the key the recipient last got a letter with is now
    /// revoked or expired (the refusals say which), and no other key is usable.
    case rememberedKeyUnusable(fingerprint: String, [KeyRefusal])
    /// Key changes: the recipient's key is not the one they last got a letter
    /// with, and the change is not accepted (yet).
    case keyChanged(KeyChange)

    /// A short, stable code: `enforced`, `no-key`, `no-usable-key`,
    /// `key-vanished`, `remembered-key-unusable`, `key-changed`.
    public var code: String {
        switch self {
        case .enforced: "enforced"
        case .noKey: "no-key"
        case .noUsableKey: "no-usable-key"
        case .keyVanished: "key-vanished"
        case .rememberedKeyUnusable: "remembered-key-unusable"
        case .keyChanged: "key-changed"
        }
    }

    /// The key change that holds the recipient, if that is the reason.
    public var keyChange: KeyChange? {
        if case .keyChanged(let change) = self { change } else { nil }
    }

    /// True for the reasons of key continuity.
    public var isKeyLoss: Bool {
        switch self {
        case .keyVanished, .rememberedKeyUnusable: true
        default: false
        }
    }

    /// The reason in words, as the plan and `--json` show it.
    public var description: String {
        switch self {
        case .enforced: "postcard enforced for this mail"
        case .noKey: "no key"
        case .noUsableKey(let refusals):
            "no usable key (" + refusals.map { "\($0.fingerprint) \($0.detail)" }.joined(separator: "; ") + ")"
        case .keyVanished(let fingerprint):
            "the key \(fingerprint) this recipient last got a letter with is gone from the keyring"
        case .rememberedKeyUnusable(let fingerprint, let refusals):
            "the key \(fingerprint) this recipient last got a letter with is "
                + (refusals.first { $0.fingerprint == fingerprint }?.detail ?? "unusable")
        case .keyChanged(let change): change.description
        }
    }
}

/// Whether the recipients have usable keys (regardless of options).
public enum RecipientSecurityState: String, Sendable, Hashable, Codable {
    case none, allSecure, allInsecure, mixed
}

/// What the mail as a whole becomes.
public enum MailSecurityState: Sendable, Hashable {
    /// Every recipient gets a letter.
    case letter
    /// Some recipients get plain postcards.
    case postcard
    /// Some recipients get postcards, and the mail has marked spans.
    case extendedPostcard(PostcardExtension)

    /// `letter`, `postcard`, `extendedPostcard(censored)` …
    public var name: String {
        switch self {
        case .letter: "letter"
        case .postcard: "postcard"
        case .extendedPostcard(let ext): "extendedPostcard(\(ext == .censored ? "censored" : "partiallyEncrypted"))"
        }
    }
}

/// One message to write, and who receives it.
public struct PlannedCopy: Sendable, Hashable {
    /// The kind of message: letter, postcard, or the mail unchanged.
    public enum Kind: String, Sendable, Hashable, Codable {
        case letter, postcard
        /// The mail as it came (it was encrypted already).
        case unchanged
    }

    /// What is written for these recipients.
    public let kind: Kind
    /// Envelope recipients of this copy, in the mail's order.
    public let recipients: [Recipient]
    /// For a letter: the recipients' key fingerprints, in the same order.
    public let fingerprints: [String]
}

/// A recipient with its decision.
public struct RecipientDecision: Sendable, Hashable {
    /// The recipient.
    public let recipient: Recipient
    /// What they get, with the reason.
    public let decision: Decision
}

/// The plan for one mail: decisions with reasons, both security states, and
/// the copies to write. Made before anything is sent.
public struct Plan: Sendable, Hashable {
    /// One decision per recipient, in the mail's order.
    public let decisions: [RecipientDecision]
    /// Whether all, some or none of the recipients have usable keys.
    public let recipientState: RecipientSecurityState
    /// What the mail as a whole becomes: letter, postcard or extended postcard.
    public let mailState: MailSecurityState
    /// The copies to write; empty when the plan is refused.
    public let copies: [PlannedCopy]
    /// True when the mail has marked spans.
    public let hasMarkedSpans: Bool
    /// The options the plan was made with.
    public let options: MailOptions
    /// What the rebuilt postcard withholds, passes unread or drops (empty
    /// for a mail without marked spans, which is not rebuilt); filled in by
    /// whoever rebuilt it.
    public var postcardParts = PostcardParts()
    /// Every recipient whose key differs from the one they last got a letter
    /// with: held ones (refused, ``PostcardReason/keyChanged(_:)``) and ones
    /// the rule took (their letter goes to the new key).
    public let keyChanges: [KeyChange]

    /// Recipients for whom a letter was required but no usable key exists.
    public var refused: [RecipientDecision] {
        decisions.filter { if case .refused = $0.decision { true } else { false } }
    }

    /// A refused plan writes nothing.
    public var isRefused: Bool { !refused.isEmpty }

    /// Refused recipients whose reason is key continuity (the mail waits for
    /// their key, or for the record to be forgotten).
    public var keyLoss: [RecipientDecision] {
        refused.filter { if case .refused(let why) = $0.decision { why.isKeyLoss } else { false } }
    }

    /// Refused recipients whose key changed and the change is not accepted.
    public var heldKeyChanges: [KeyChange] {
        refused.compactMap { if case .refused(let why) = $0.decision { why.keyChange } else { nil } }
    }

    /// Decides for every recipient. Recipients are taken in order, each
    /// address once (the first role wins: To before Cc before Bcc).
    ///
    /// - `enforcePostcard` gives everybody a postcard;
    /// - `requireLetter` (or a `requireLetter` domain rule) refuses the mail when
    ///   such a recipient has no usable key, or when a postcard is enforced for them;
    /// - an `enforcePostcard` domain rule gives that domain's recipients postcards;
    /// - otherwise a letter where a usable key exists, a postcard elsewhere.
    ///
    /// Copies: one letter for all To/Cc letter recipients, one letter for each
    /// Bcc letter recipient, one postcard for all postcard recipients.
    ///
    /// A mail that is `alreadyEncrypted` is never touched: one unchanged copy
    /// goes to everybody, whatever the options (its mail state is `letter`:
    /// nobody receives plain text from us).
    ///
    /// Key continuity: `remembered` maps a lower-case address to the key it
    /// last got a letter with. Such a recipient without a usable key now is
    /// refused (`keyVanished`) when that key is gone, and when it is revoked or
    /// expired follows `options.onKeyLoss` (refused, or a postcard, with the
    /// reason `rememberedKeyUnusable` either way; a key that is there but
    /// unusable for another reason is treated alike). An enforced postcard stays one.
    ///
    /// Key changes: `changes` holds, by lower-case address, the recipients
    /// whose usable key is not the remembered one. `options.onKeyChange`
    /// decides: held (refused, ``PostcardReason/keyChanged(_:)``), or a letter
    /// to the new key (`accept`, or `accept-certified` when the old key
    /// certified the new one).
    public init(recipients: [Recipient], keys: [String: KeyAvailability], hasMarkedSpans: Bool,
                alreadyEncrypted: Bool = false, options: MailOptions = .standard,
                remembered: [String: String] = [:], changes: [String: KeyChange] = [:]) throws(PolicyError) {
        if options.enforcePostcard && options.requireLetter {
            throw PolicyError(.conflictingOptions)
        }
        var seen = Set<String>()
        let unique = recipients.filter { seen.insert($0.address.lowercased()).inserted }
        func availability(_ recipient: Recipient) -> KeyAvailability {
            keys[recipient.address.lowercased()] ?? keys[recipient.address] ?? .missing
        }

        decisions = unique.map { recipient in
            let keyState = availability(recipient)
            let decision: Decision
            if alreadyEncrypted { return RecipientDecision(recipient: recipient, decision: .unchanged) }
            let rule = options.rule(for: recipient)
            let requiresLetter = options.requireLetter || rule == .requireLetter
            let enforced = options.enforcePostcard || rule == .enforcePostcard
            switch keyState {
            case .usable(let fingerprint, let source):
                let change = changes[recipient.address.lowercased()].flatMap { $0.current == fingerprint ? $0 : nil }
                let taken = switch options.onKeyChange {
                case .defer: false
                case .acceptCertified: change?.certifiedByPrevious ?? false
                case .accept: true
                }
                // A postcard is never sent where a letter is required.
                decision = enforced ? (requiresLetter ? .refused(.enforced) : .postcard(.enforced))
                    : change != nil && !taken ? .refused(.keyChanged(change!))
                    : .letter(fingerprint: fingerprint, source: source)
            case .missing, .unusable:
                var why: PostcardReason = .noKey
                if case .unusable(let refusals) = keyState { why = .noUsableKey(refusals) }
                var holds = requiresLetter
                if !enforced, let fingerprint = remembered[recipient.address.lowercased()] {
                    let refusals: [KeyRefusal] = if case .unusable(let list) = keyState { list } else { [] }
                    if refusals.contains(where: { $0.fingerprint == fingerprint }) {
                        // Still there, but revoked, expired (or otherwise unusable): the configured rule.
                        why = .rememberedKeyUnusable(fingerprint: fingerprint, refusals)
                        holds = holds || options.onKeyLoss == .defer
                    } else {
                        // Gone: a damaged keyring or a deleted key, never a reason for a postcard.
                        why = .keyVanished(fingerprint: fingerprint)
                        holds = true
                    }
                }
                decision = holds ? .refused(why) : .postcard(why)
            }
            return RecipientDecision(recipient: recipient, decision: decision)
        }

        let secure = unique.filter { availability($0).isUsable }.count
        recipientState = unique.isEmpty ? .none
            : secure == unique.count ? .allSecure
            : secure == 0 ? .allInsecure : .mixed

        let anyPostcard = decisions.contains { if case .postcard = $0.decision { true } else { false } }
        mailState = !anyPostcard ? .letter
            : hasMarkedSpans ? .extendedPostcard(options.postcardExtension) : .postcard
        self.hasMarkedSpans = hasMarkedSpans
        self.options = options
        keyChanges = decisions.compactMap { item in
            guard let change = changes[item.recipient.address.lowercased()] else { return nil }
            switch item.decision {
            case .letter(let fingerprint, _) where fingerprint == change.current: return change
            case .refused(.keyChanged(let held)): return held
            default: return nil
            }
        }

        let isRefused = decisions.contains { if case .refused = $0.decision { true } else { false } }
        guard !isRefused else {
            copies = []
            return
        }
        if alreadyEncrypted {
            copies = unique.isEmpty ? [] : [PlannedCopy(kind: .unchanged, recipients: unique, fingerprints: [])]
            return
        }
        var copies: [PlannedCopy] = []
        var openLetter: [(Recipient, String)] = []
        var bccLetters: [PlannedCopy] = []
        var postcard: [Recipient] = []
        for item in decisions {
            switch item.decision {
            case .letter(let fingerprint, _) where item.recipient.role == .bcc:
                bccLetters.append(PlannedCopy(kind: .letter, recipients: [item.recipient], fingerprints: [fingerprint]))
            case .letter(let fingerprint, _):
                openLetter.append((item.recipient, fingerprint))
            case .postcard:
                postcard.append(item.recipient)
            case .refused, .unchanged:
                break
            }
        }
        if !openLetter.isEmpty {
            copies.append(PlannedCopy(kind: .letter, recipients: openLetter.map(\.0), fingerprints: openLetter.map(\.1)))
        }
        copies += bccLetters
        if !postcard.isEmpty {
            copies.append(PlannedCopy(kind: .postcard, recipients: postcard, fingerprints: []))
        }
        self.copies = copies
    }
}

/// An error of the policy layer. The description never quotes message content.
///
/// Match a code in a `catch` clause with `catch PolicyError.Code.unbalancedMarkers`;
/// where markers fail to pair up is on the error (``marker``).
public struct PolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong. A struct rather than an enum, so that codes can be
    /// added without breaking a caller's `switch` (after GRDB's `ResultCode`).
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The code's stable name.
        public let rawValue: String
        /// A code by its name; the named static members are the ones mailsec throws.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// `enforcePostcard` together with `requireLetter`.
        public static let conflictingOptions = Code(rawValue: "conflictingOptions")
        /// Markers do not pair up: an opening marker inside a span, a closing
        /// one outside, or a span left open (``PolicyError/marker`` says where).
        public static let unbalancedMarkers = Code(rawValue: "unbalancedMarkers")
        /// A marker is empty, both markers are the same, or one looks like an HTML tag.
        public static let invalidMarkers = Code(rawValue: "invalidMarkers")

        /// Lets `catch PolicyError.Code.unbalancedMarkers` match a thrown ``PolicyError``.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? PolicyError)?.code == code
        }
    }

    /// How markers fail to pair up.
    public enum MarkerProblem: String, Sendable, Equatable {
        /// An opening marker stands inside a marked span.
        case nested = "opening marker inside a marked span"
        /// A closing marker stands outside any marked span.
        case unopened = "closing marker without an opening one"
        /// A marked span is never closed.
        case unclosed = "marked span is never closed"
        /// A marker stands in a style sheet, whose text (CSS `content:`) a reader may show
        /// where mailsec, which writes no CSS, cannot pair it.
        case inStyleSheet = "marker in a style sheet"
        /// The pieces of a marker stand in what a reader may show out of the order mailsec reads or
        /// beyond it (text, attribute values and strings of a styled HTML part, alt text), while
        /// mailsec finds no marker there: a style sheet or alt text could join them into a span
        /// that mailsec cannot read.
        case joinable = "marker pieces a style sheet or alt text could join"
        /// A reader may show a span over other text than mailsec reads in it: the HTML parser
        /// moved text out of where it was written (out of a table), or the span's two markers
        /// stand in elements that a browser may hide or show elsewhere (table sections,
        /// `details`, a `meter`'s fallback, `dir`, styled elements).
        case otherOrder = "markers a reader may show around other text (moved or differently shown elements)"
        /// A marker stands on a line with an explicit bidirectional control (an embedding,
        /// override or isolate), which a reader may show in another order than it is written:
        /// the span it shows may cover other text than the span written.
        case bidiControls = "marker on a line with bidirectional controls"
        /// A marker typed with white space inside it (`[[ private ]]`, ``NearMarkerScan``): the
        /// sender meant a span, which mailsec would not read as one.
        case nearMarker = "invalid marker: white space inside a marker's brackets (write the marker as configured)"
        /// A marker typed with look-alikes (`【【private】】`, `⸨private⸩`, `[[privаte]]` with a Cyrillic
        /// `а`, ``NearMarkerScan``): a reader shows the marker the sender meant, which mailsec would not
        /// read as one. (Full-width and other letters whose NFKC form is the marker's fold to it: those
        /// are markers.)
        case lookAlikeMarker = "invalid marker: look-alike brackets or letters in a marker (write the marker as configured)"
        /// Markers stand in right-to-left text: in a paragraph whose first strong letter is
        /// right-to-left, or in an HTML part that sets a direction (`dir=rtl`/`auto`, `<bdi>`, CSS
        /// `direction` or `unicode-bidi`), a closing marker is followed by an opening one with
        /// right-to-left text between them; or an HTML part with a `<bdo>` shows a marker. There a
        /// reader shows runs of left-to-right text from right to left, and which text stands
        /// between two markers depends on how the line is read (``RightToLeft``).
        case rightToLeft = "marker in right-to-left text (a reader may show other text between the markers)"
        /// An HTML part with markers declares a charset in a `<meta>` element that reads its
        /// text otherwise than its MIME charset: a browser opening the part as a file reads the
        /// `<meta>`, a mail reader the MIME charset, and the two may pair other text as a span.
        case charsetsDisagree = "HTML part whose <meta> charset reads its text otherwise than its MIME charset"
    }

    /// Where markers fail to pair up (``Code/unbalancedMarkers``).
    public struct MarkerPosition: Sendable, Equatable {
        /// The part of the mail, as the caller named it (`Subject`, `part 1 (text/plain)` …).
        public let part: String
        /// The line, 1-based.
        public let line: Int
        /// The column in Unicode scalars, 1-based.
        public let column: Int
        /// What is wrong there.
        public let problem: MarkerProblem

        /// A position in `part`; `line` and `column` are 1-based.
        public init(part: String, line: Int, column: Int, problem: MarkerProblem) {
            self.part = part
            self.line = line
            self.column = column
            self.problem = problem
        }
    }

    /// What went wrong.
    public let code: Code
    /// Where markers fail to pair up, for ``Code/unbalancedMarkers``.
    public let marker: MarkerPosition?

    /// An error with `code`, and the marker position that goes with it.
    public init(_ code: Code, marker: MarkerPosition? = nil) {
        self.code = code
        self.marker = marker
    }

    /// One line naming the problem (and where), without message content.
    public var description: String {
        switch code {
        case .conflictingOptions: "enforcePostcard and requireLetter cannot both be set"
        case .unbalancedMarkers:
            if let marker { "\(marker.part), line \(marker.line), column \(marker.column): \(marker.problem.rawValue)" } else {
                "private markers do not pair up"
            }
        case .invalidMarkers: "markers must be non-empty and different, and not look like HTML tags"
        default: "policy error \(code.rawValue)"
        }
    }
}
