import OpenPGP
import Policy

/// The policy defaults both configurations share (the filter's and the
/// user's): `sign_as`, `mode`, `invite`, `extension`, `opaque_parts`, `min_validity`, the
/// `[markers]` table and `[[rules]]`.
///
/// ```toml
/// sign_as = "from"             # the From address's key, or an address or fingerprint
/// mode = "standard"            # standard | enforce-postcard | require-letter
/// invite = false
/// extension = "censored"       # or partially-encrypted
/// opaque_parts = "withhold"    # or pass | refuse: parts mailsec does not read, in postcards of mail with marked spans
/// min_validity = "marginal"    # optional: marginal | full | ultimate
///
/// [markers]
/// open = "[[private]]"
/// close = "[[/private]]"
/// placeholder = "█████"
///
/// [[rules]]
/// domains = ["*.example.gov"]
/// mode = "require-letter"      # or enforce-postcard
/// ```
public struct PolicySettings: Sendable {
    /// The top-level keys read here.
    package static let keys: Set<String> = ["sign_as", "mode", "invite", "extension", "opaque_parts", "min_validity", "markers",
                                            "rules"]

    /// Mode, invite, extension, domain rules and key-loss rule.
    public var mail = MailOptions()
    /// The markers and placeholder (`[markers]`).
    public var redactor = Redactor.standard
    /// nil: sign with the From address's key.
    public var signAs: String?
    /// The least user-ID validity a key needs; nil: any.
    public var minimumValidity: Validity?

    /// The defaults: standard policy and markers.
    public init() {}

    /// Reads the policy keys of `top`. With `collect`, every problem is handed
    /// to it and reading goes on (for `config check`); without, the first throws.
    package static func read(_ top: TOMLKeys, collect: ((ConfigError) -> Void)? = nil) throws(ConfigError) -> PolicySettings {
        var settings = PolicySettings()
        let problems = ProblemCollector(collect)
        func step(_ body: () throws -> Void) throws(ConfigError) { try problems.step(body) }
        try step {
            if let signAs = try top.string("sign_as"), signAs != "from" { settings.signAs = signAs }
        }
        try step {
            switch try top.string("mode") ?? "standard" {
            case "standard": break
            case "enforce-postcard": settings.mail.enforcePostcard = true
            case "require-letter": settings.mail.requireLetter = true
            default: throw ConfigError("mode: unknown value (allowed: standard, enforce-postcard, require-letter)", path: "mode")
            }
        }
        try step { settings.mail.invite = try top.bool("invite") ?? false }
        try step {
            if let value = try top.string("extension") {
                guard let ext = PostcardExtension(rawValue: value) else {
                    throw ConfigError("extension: unknown value (allowed: censored, partially-encrypted)", path: "extension")
                }
                settings.mail.postcardExtension = ext
            }
        }
        try step {
            if let value = try top.string("opaque_parts") {
                guard let setting = OpaqueParts(rawValue: value) else {
                    throw ConfigError("opaque_parts: unknown value \"\(value)\" (withhold, pass or refuse)", path: "opaque_parts")
                }
                settings.mail.opaqueParts = setting
            }
        }
        try step {
            if let value = try top.string("min_validity") {
                guard let validity = Validity.allCases.first(where: { $0.description == value }) else {
                    throw ConfigError("min_validity: unknown value (allowed: \(Validity.allCases.map(\.description).joined(separator: ", ")))", path: "min_validity")
                }
                settings.minimumValidity = validity
            }
        }
        try step {
            if let markers = try top.table("markers") {
                try markers.allow(["open", "close", "placeholder"])
                let open = try markers.string("open") ?? Redactor.standard.open
                let close = try markers.string("close") ?? Redactor.standard.close
                let placeholder = try markers.string("placeholder") ?? Redactor.standard.placeholder
                do { settings.redactor = try Redactor(open: open, close: close, placeholder: placeholder) } catch {
                    throw ConfigError("markers: \((error as? PolicyError)?.description ?? "invalid")", path: "markers")
                }
            }
        }
        try step {
            for rule in try top.tables("rules") {
                try rule.allow(["domains", "mode"])
                guard let modeName = try rule.string("mode"), let mode = DomainRule.Mode(rawValue: modeName) else {
                    throw ConfigError("\(rule.path).mode: must be require-letter or enforce-postcard", path: rule.name("mode"))
                }
                let domains = try rule.strings("domains")
                if domains.isEmpty {
                    throw ConfigError("\(rule.path).domains: give at least one domain", path: rule.name("domains"))
                }
                settings.mail.domainRules += domains.map { DomainRule($0, mode) }
            }
        }
        try step {
            if settings.mail.enforcePostcard && settings.mail.requireLetter {
                throw ConfigError("mode: cannot both enforce postcards and require letters", path: "mode")
            }
        }
        return settings
    }
}
