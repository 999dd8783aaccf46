import Foundation
import PartialEncryption

/// The `[reading]` table both configurations share (the filter's and the
/// user's): the reading server (`mailsec serve`) partially encrypted
/// postcards publish their spans to.
///
/// ```toml
/// [reading]
/// publish_url = "http://127.0.0.1:8080"   # or https through a TLS proxy
/// token_file = "/etc/mailsec/publish-token" # private (0600), owned by whoever reads it
/// lifetime_days = 30                        # optional: the server's default otherwise
/// notice = "letter-required"                # the default; or "plain"
/// timeout = 30                              # seconds for one exchange
/// ```
public struct ReadingSettings: Sendable {
    /// Where the spans are published.
    public var publisher: HTTPPublisher
    /// The lifetime asked for published pages, in seconds (nil: the server's default).
    public var lifetime: Int?
    /// True when the password notice may only go to the sender as a letter
    /// (`notice = "letter-required"`, the default): without a key of their
    /// own, `send` and `compose` show the password on the terminal, and
    /// whatever has none refuses the mail. False only when the configuration
    /// asks by name for the notice in clear (`notice = "plain"`, or
    /// `"letter-preferred"` as it was spelled before).
    public var noticeMustBeLetter: Bool

    /// Reads `top`'s `[reading]` table; nil when there is none. With
    /// `collect`, every problem is handed to it (and nil returned); without,
    /// the first throws. The token file must be private (0600) and the
    /// reader's own: a publishing token others can read lets them publish.
    package static func read(_ top: TOMLKeys, collect: ((ConfigError) -> Void)? = nil) throws(ConfigError) -> ReadingSettings? {
        guard let table = try top.table("reading") else { return nil }
        var ok = true
        func step<T>(_ body: () throws -> T?) throws(ConfigError) -> T? {
            do { return try body() } catch {
                let error = error as? ConfigError ?? ConfigError("\(error)")
                guard let collect else { throw error }
                ok = false
                collect(error)
                return nil
            }
        }
        _ = try step { try table.allow(["publish_url", "token_file", "lifetime_days", "notice", "timeout"]) }
        let url: String? = try step {
            guard let url = try table.string("publish_url") else {
                throw ConfigError("reading.publish_url: required (the reading server's address)", path: "reading.publish_url")
            }
            return url
        }
        let token: String? = try step { try Self.token(table) }
        let timeout: Int? = try step { try table.positiveInt("timeout", atMost: TOMLKeys.day) ?? 30 }
        let lifetime: Int? = try step { try table.positiveInt("lifetime_days", atMost: TOMLKeys.tenYears).map { $0 * 86400 } }
        let mustBeLetter: Bool? = try step {
            // The password in a plain mail goes through the provider that carries the postcard: only when named.
            switch try table.string("notice") ?? "letter-required" {
            case "plain", "letter-preferred": return false
            case "letter-required": return true
            default:  // the documented names; "letter-preferred" is plain's old spelling, still read
                throw ConfigError("reading.notice: unknown value (allowed: letter-required, plain)", path: "reading.notice")
            }
        }
        let publisher: HTTPPublisher? = try step { () throws -> HTTPPublisher? in
            guard let url, let token, let timeout else { return nil }
            do throws(PublishError) { return try HTTPPublisher(url: url, token: token, timeout: Double(timeout)) } catch {
                throw ConfigError("reading: \(error.description)", path: "reading.publish_url")
            }
        }
        guard ok, let publisher, let mustBeLetter else { return nil }
        return ReadingSettings(publisher: publisher, lifetime: lifetime, noticeMustBeLetter: mustBeLetter)
    }

    /// The token, from a regular file only its owner (the reader) can read.
    private static func token(_ table: TOMLKeys) throws(ConfigError) -> String {
        let key = "reading.token_file"
        guard let value = try table.string("token_file") else {
            throw ConfigError("\(key): required (the file with the publishing token)", path: key)
        }
        return try PrivateFile.read(value, key: key)
    }
}
