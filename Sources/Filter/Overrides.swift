import Foundation
import MIME
import Policy

/// A per-mail header the filter cannot accept. The mail is bad input (65).
package struct OverrideError: Error, Sendable, CustomStringConvertible {
    /// One line naming the header and the problem.
    package let description: String
}

/// Per-mail overrides through header fields, removed from every copy:
/// `X-Mailsec-Mode: enforce-postcard | require-letter`, `X-Mailsec-Invite: yes | no`,
/// `X-Mailsec-Extension: censored | partially-encrypted`.
enum Overrides {
    static let names = ["X-Mailsec-Mode", "X-Mailsec-Invite", "X-Mailsec-Extension"]

    /// Applies the override headers of `message` to `options` and removes them.
    /// An override never relaxes a configured `require-letter` mode: the
    /// combination with `enforce-postcard` is left for the policy to refuse.
    static func apply(_ message: MIMEMessage, to options: inout MailOptions) throws(OverrideError) {
        for name in names {
            let values = message.headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }
                .map { $0.value.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let value = values.first else { continue }
            guard values.count == 1 else { throw OverrideError(description: "\(name) appears more than once") }
            switch (name, value) {
            case ("X-Mailsec-Mode", "enforce-postcard"): options.enforcePostcard = true
            case ("X-Mailsec-Mode", "require-letter"): options.requireLetter = true
            case ("X-Mailsec-Invite", "yes"): options.invite = true
            case ("X-Mailsec-Invite", "no"): options.invite = false
            case ("X-Mailsec-Extension", "censored"): options.postcardExtension = .censored
            case ("X-Mailsec-Extension", "partially-encrypted"): options.postcardExtension = .partiallyEncrypted
            default:
                throw OverrideError(description: "\(name) has an unknown value (allowed: \(allowed(name)))")
            }
        }
        for name in names { message.removeHeader(name) }
    }

    static func allowed(_ name: String) -> String {
        switch name {
        case "X-Mailsec-Mode": "enforce-postcard, require-letter"
        case "X-Mailsec-Invite": "yes, no"
        default: "censored, partially-encrypted"
        }
    }
}
