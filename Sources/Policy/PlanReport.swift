/// The plan as JSON: the contract `mailsec plan --json` prints (docs/json.md,
/// "The plan as JSON"). Fields are only ever added, never renamed.
public struct PlanReport: Codable, Sendable, Hashable {
    /// One recipient's decision.
    public struct RecipientReport: Codable, Sendable, Hashable {
        /// The recipient's address.
        public let address: String
        /// `to`, `cc` or `bcc`.
        public let role: String
        /// `letter`, `postcard`, `refused` or `unchanged`.
        public let decision: String
        /// `key` for letters; `enforced`, `no-key` or `no-usable-key` otherwise,
        /// and for key continuity `key-vanished` or `remembered-key-unusable`;
        /// `already-encrypted` for unchanged mail.
        public let reason: String
        /// The reason in words.
        public let detail: String
        /// The key a letter is encrypted to; null otherwise.
        public let fingerprint: String?
        /// Where that key came from (`keyring`); null otherwise.
        public let keySource: String?
        /// Keys found but not usable, each with its reason.
        public let refusedKeys: [KeyRefusal]
        /// The key differs from the one the recipient last got a letter with
        /// (held, reason `key-changed`, or taken by the filter's rule); null otherwise.
        public var keyChange: KeyChange? = nil
    }

    /// One copy that would be written.
    public struct CopyReport: Codable, Sendable, Hashable {
        /// `letter`, `postcard` or `unchanged`.
        public let kind: String
        /// Its envelope recipients.
        public let recipients: [String]
        /// The recipients' keys of a letter; empty otherwise.
        public let fingerprints: [String]
    }

    /// `none`, `allSecure`, `allInsecure` or `mixed`.
    public let recipientState: String
    /// `letter`, `postcard` or `extendedPostcard`.
    public let mailState: String
    /// `censored` or `partially-encrypted` when mailState is `extendedPostcard`; null otherwise.
    public let postcardExtension: String?
    /// True when the mail holds marked spans.
    public let hasMarkedSpans: Bool
    /// True when a letter was required and cannot be made: nothing is written.
    public let refused: Bool
    /// Every recipient's decision, in the mail's order.
    public let recipients: [RecipientReport]
    /// Empty when refused.
    public let copies: [CopyReport]
    /// Parts the rebuilt postcard replaces by a note (`opaque_parts = "withhold"`), each
    /// named by its place and censored file name; empty for mail without marked spans.
    public let withheldParts: [String]
    /// Parts the rebuilt postcard passes unread (`opaque_parts = "pass"`).
    public let passedParts: [String]
    /// Parts that refuse the mail (`opaque_parts = "refuse"`).
    public let refusedParts: [String]
    /// What the HTML allow-list dropped from the postcard, each with its part.
    public let droppedByAllowList: [String]

    /// The report of `plan`.
    public init(_ plan: Plan) {
        recipientState = plan.recipientState.rawValue
        switch plan.mailState {
        case .letter: mailState = "letter"; postcardExtension = nil
        case .postcard: mailState = "postcard"; postcardExtension = nil
        case .extendedPostcard(let ext): mailState = "extendedPostcard"; postcardExtension = ext.rawValue
        }
        hasMarkedSpans = plan.hasMarkedSpans
        refused = plan.isRefused
        let reports = plan.decisions.map { item in
            let role = item.recipient.role.rawValue
            switch item.decision {
            case .letter(let fingerprint, let source):
                return RecipientReport(address: item.recipient.address, role: role, decision: "letter", reason: "key",
                                       detail: "key \(fingerprint) from \(source)", fingerprint: fingerprint,
                                       keySource: source, refusedKeys: [])
            case .postcard(let why), .refused(let why):
                var refusedKeys: [KeyRefusal] = []
                if case .noUsableKey(let keys) = why { refusedKeys = keys }
                if case .rememberedKeyUnusable(_, let keys) = why { refusedKeys = keys }
                let decision = if case .refused = item.decision { "refused" } else { "postcard" }
                return RecipientReport(address: item.recipient.address, role: role, decision: decision, reason: why.code,
                                       detail: why.description, fingerprint: nil, keySource: nil, refusedKeys: refusedKeys)
            case .unchanged:
                return RecipientReport(address: item.recipient.address, role: role, decision: "unchanged",
                                       reason: "already-encrypted", detail: "the mail is encrypted already",
                                       fingerprint: nil, keySource: nil, refusedKeys: [])
            }
        }
        let changes = Dictionary(plan.keyChanges.map { ($0.address, $0) }, uniquingKeysWith: { first, _ in first })
        recipients = reports.map { report in
            var report = report
            report.keyChange = changes[report.address.lowercased()]
            return report
        }
        copies = plan.copies.map {
            CopyReport(kind: $0.kind.rawValue, recipients: $0.recipients.map(\.address), fingerprints: $0.fingerprints)
        }
        withheldParts = plan.postcardParts.withheld
        passedParts = plan.postcardParts.passed
        refusedParts = plan.postcardParts.refused
        droppedByAllowList = plan.postcardParts.dropped
    }

    enum CodingKeys: String, CodingKey {
        case recipientState, mailState, postcardExtension, hasMarkedSpans, refused, recipients, copies
        case withheldParts, passedParts, refusedParts, droppedByAllowList
    }

    /// Written by hand so that absent values are an explicit `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(recipientState, forKey: .recipientState)
        try container.encode(mailState, forKey: .mailState)
        try container.encode(postcardExtension, forKey: .postcardExtension)
        try container.encode(hasMarkedSpans, forKey: .hasMarkedSpans)
        try container.encode(refused, forKey: .refused)
        try container.encode(recipients, forKey: .recipients)
        try container.encode(copies, forKey: .copies)
        try container.encode(withheldParts, forKey: .withheldParts)
        try container.encode(passedParts, forKey: .passedParts)
        try container.encode(refusedParts, forKey: .refusedParts)
        try container.encode(droppedByAllowList, forKey: .droppedByAllowList)
    }
}

extension PlanReport.RecipientReport {
    enum CodingKeys: String, CodingKey {
        case address, role, decision, reason, detail, fingerprint, keySource, refusedKeys, keyChange
    }

    /// Writes null for absent values, as the contract says.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(address, forKey: .address)
        try container.encode(role, forKey: .role)
        try container.encode(decision, forKey: .decision)
        try container.encode(reason, forKey: .reason)
        try container.encode(detail, forKey: .detail)
        try container.encode(fingerprint, forKey: .fingerprint)
        try container.encode(keySource, forKey: .keySource)
        try container.encode(refusedKeys, forKey: .refusedKeys)
        try container.encode(keyChange, forKey: .keyChange)
    }
}
