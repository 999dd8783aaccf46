// SecretBytes lives in Platform (with every other secret-holding buffer); a
// library user of SMTP names it through this module, as before the move.
@_exported import class Platform.SecretBytes
import Platform

/// Who we are to the server (RFC 4954 AUTH).
public struct SMTPCredentials: Sendable {
    /// A SASL mechanism, in the order of preference a caller gives.
    public enum Mechanism: String, Sendable, Equatable, CaseIterable {
        /// RFC 4616: the name and password in one base64 line.
        case plain = "PLAIN"
        /// The older two-step form some servers still want.
        case login = "LOGIN"
        /// An OAuth 2.0 bearer token in place of the password (Google, Microsoft).
        case xoauth2 = "XOAUTH2"
    }

    /// The SASL authentication identity.
    public var username: String
    /// The password, or for XOAUTH2 the access token.
    public var secret: SecretBytes
    /// The mechanisms we may use, most wanted first; the first the server
    /// offers is used. None offered: AUTH fails (authentication failed).
    public var mechanisms: [Mechanism]

    /// Credentials for `username`, trying `mechanisms` in order among those the server offers.
    public init(username: String, secret: SecretBytes, mechanisms: [Mechanism] = [.plain, .login]) {
        self.username = username
        self.secret = secret
        self.mechanisms = mechanisms
    }
}
