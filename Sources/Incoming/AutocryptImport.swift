import Foundation
import MIME
import OpenPGP

/// What became of one Autocrypt or Autocrypt-Gossip header.
public struct AutocryptImportResult: Sendable, Equatable, Codable {
    /// `Autocrypt` or `Autocrypt-Gossip`.
    public let header: String
    /// The header's `addr`, when it has one.
    public let addr: String?
    /// The fingerprint imported; nil when nothing was.
    public let imported: String?
    /// Why nothing was imported; nil when the key was.
    public let reason: String?
    /// The import taught the keyring something: the key was new, or gained
    /// the user ID for `addr`. Such a key is learned from mail, and is kept
    /// apart from the person's own (the store's `learnedKey`).
    public var newToKeyring: Bool = false
}

/// Imports keys from the Autocrypt headers of a mail (Autocrypt Level 1),
/// strictly: the sender's `Autocrypt` header only when its `addr` is the
/// mail's one From address, `Autocrypt-Gossip` headers only from inside the
/// encryption and only for a recipient of that mail; the key must parse and
/// carry a user ID with that address, and only such user IDs are imported.
public struct AutocryptImporter: Sendable {
    /// The GnuPG home keys are imported into.
    public let gnupg: GnuPG

    /// An importer into `gnupg`'s keyring.
    public init(gnupg: GnuPG) { self.gnupg = gnupg }

    /// The attributes of an Autocrypt header value, or why it is not one.
    static func attributes(_ value: String) -> Result<(addr: String, keydata: [UInt8]), AutocryptProblem> {
        var fields: [String: String] = [:]
        for piece in value.split(separator: ";") {
            let trimmed = piece.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let equals = trimmed.firstIndex(of: "=") else { return .failure(.init("an attribute without a value")) }
            let name = trimmed[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let content = String(trimmed[trimmed.index(after: equals)...])
            guard fields[name] == nil else { return .failure(.init("the attribute \(name) appears twice")) }
            fields[name] = content
        }
        for name in fields.keys where !["addr", "prefer-encrypt", "keydata"].contains(name) && !name.hasPrefix("_") {
            return .failure(.init("an unknown critical attribute (\(name))"))
        }
        guard let addr = fields["addr"]?.trimmingCharacters(in: .whitespaces), !addr.isEmpty else {
            return .failure(.init("no addr attribute"))
        }
        let base64 = (fields["keydata"] ?? "").filter { !$0.isWhitespace }
        guard !base64.isEmpty, let keydata = Data(base64Encoded: base64), !keydata.isEmpty else {
            return .failure(.init("keydata is missing or not base64"))
        }
        return .success((addr, Array(keydata)))
    }

    /// Imports what `raw` offers. `decrypting` lets an encrypted mail be
    /// opened (with the keyring's secret keys) for its gossip headers.
    public func importKeys(from raw: [UInt8], decrypting: Bool = true) throws -> [AutocryptImportResult] {
        let message = try MIMEMessage.parse(raw)
        var results: [AutocryptImportResult] = []
        let from = message.addresses(.from)
        let headers = message.headers.filter { $0.name.lowercased() == "autocrypt" }
        if headers.count > 1 {
            results += headers.map { _ in AutocryptImportResult(header: "Autocrypt", addr: nil, imported: nil,
                                                                reason: "the mail has several Autocrypt headers: all are ignored") }
        } else if let header = headers.first {
            let sender = from.count == 1 ? from[0].address.lowercased() : nil
            results.append(take(header.value, kind: "Autocrypt") { addr in
                guard let sender else { return "the mail has no single From address" }
                return addr.lowercased() == sender ? nil : "addr \(addr) is not the From address \(sender)"
            })
        }

        guard decrypting, MailStructure(message).encrypted.contains(where: { $0.place == .whole }) else { return results }
        let opened: MIMEMessage
        do { opened = try MailDecryptor(gnupg: gnupg).decrypt(raw).message } catch {
            results.append(AutocryptImportResult(header: "Autocrypt-Gossip", addr: nil, imported: nil,
                                                 reason: "the mail cannot be decrypted, so its gossip is not read (\(Self.describe(error)))"))
            return results
        }
        // Gossip stands in the header section of the decrypted part; the
        // recipients are those of the mail as decrypted (protected To/Cc).
        let recipients = Set((opened.addresses(.to) + opened.addresses(.cc)).map { $0.address.lowercased() })
        let gossip = (opened.body?.headers ?? []).filter { $0.name.lowercased() == "autocrypt-gossip" }
            + opened.headers.filter { $0.name.lowercased() == "autocrypt-gossip" }
        for header in gossip {
            results.append(take(header.value, kind: "Autocrypt-Gossip") { addr in
                recipients.contains(addr.lowercased()) ? nil : "addr \(addr) is not a recipient of the mail"
            })
        }
        return results
    }

    /// Parses one header, applies `check` to its addr, imports its key.
    func take(_ value: String, kind: String, check: (String) -> String?) -> AutocryptImportResult {
        switch Self.attributes(value) {
        case .failure(let problem):
            return AutocryptImportResult(header: kind, addr: nil, imported: nil, reason: "not a usable header: \(problem.description)")
        case .success(let (addr, keydata)):
            if let refusal = check(addr) { return AutocryptImportResult(header: kind, addr: addr, imported: nil, reason: refusal) }
            do {
                let summary = try gnupg.importKeys(keydata, onlyUserIDsFor: addr)
                let fingerprint = summary.fingerprints.first
                // Imported (or already there) only if the keyring now has a user ID with that address.
                let listed = try gnupg.lookup([addr]).first?.candidates.map(\.key.fingerprint) ?? []
                guard let fingerprint, listed.contains(fingerprint) else {
                    return AutocryptImportResult(header: kind, addr: addr, imported: nil,
                                                 reason: "the key has no user ID with the address \(addr)")
                }
                return AutocryptImportResult(header: kind, addr: addr, imported: fingerprint, reason: nil,
                                             newToKeyring: summary.gainedUserIDs.contains(fingerprint.uppercased()))
            } catch {
                return AutocryptImportResult(header: kind, addr: addr, imported: nil,
                                             reason: "the key data does not import with a user ID for \(addr) (\(Self.describe(error)))")
            }
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as GPGMEError: error.description
        case let error as IntegrityError: error.description
        case let error as DecryptionRefusal: error.description
        case let error as MIMEError: error.description
        case let error as InvalidAddressError: error.description
        default: "\(type(of: error))"
        }
    }
}

/// Why an Autocrypt header is not usable.
struct AutocryptProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
