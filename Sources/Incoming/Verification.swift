import Foundation
import MIME
import OpenPGP

/// What a signature says about a mail, and whether that is enough to call
/// the mail signed by its sender. Only a good signature that covers the
/// whole message and whose key carries the From address is `verified`.
public struct VerificationReport: Sendable, Equatable, Codable {
    /// The signer, from the keyring.
    public struct Signer: Sendable, Equatable, Codable {
        /// The signing key's fingerprint, upper-case hex.
        public let fingerprint: String
        /// The user ID that matches From, else the first one; nil when the key is not known.
        public let userID: String?
    }

    /// `pgp-mime` or `inline`; nil when the mail has no signature.
    public let kind: Protection.Kind?
    /// `whole`, `partial` or `attached`; `none` without a signature.
    public let coverage: String
    /// The signed part (`1`, `1.2` …).
    public let signedPart: String?
    /// `good`, `bad`, `no public key`, `key expired`, `key revoked`, `signature expired`, or an error.
    public let status: String?
    /// The signer as the keyring knows them; nil when the key is not there.
    public let signer: Signer?
    /// The From address checked: the signed (protected) one when the signed part carries a From.
    public let from: String?
    /// True when a user ID of the signer's key has exactly the From address.
    public let fromMatches: Bool
    /// True only for a good signature, over the whole message, by the From address.
    public let verified: Bool
    /// Why it is not verified (nil when it is); never message content.
    public let reason: String?
    /// The From display name as a reader shows it; nil when there is none.
    public let displayName: String?
    /// True when the From display name is a name on the signer's key (or there
    /// is no display name); false when it is not, or shows an address; nil
    /// when the signer's key is not known.
    public let displayNameMatches: Bool?
    /// The Sender address, when the mail has a Sender field (the signed one when the signed part has one).
    public let sender: String?
    /// What a careful reader should know even of a verified mail (a display
    /// name that is not the signer's, a Sender beside the From); empty when nothing.
    public let warnings: [String]
}

/// Checks the From header of a mail against a signer's user IDs.
struct FromCheck {
    let address: String?
    let problem: String?

    /// The one From address to hold a signer to, or the problem that makes any match meaningless.
    init(from: [MailAddress]) {
        guard !from.isEmpty else {
            address = nil
            problem = "the mail has no From address"
            return
        }
        guard from.count == 1 else {
            // RFC 5322 allows several authors; a signature by one of them does not speak for the others.
            address = nil
            problem = "the mail has several From addresses"
            return
        }
        let author = from[0]
        address = author.address.lowercased()
        // A display name that holds an address shows the reader an address that is not the sender's.
        // Only the address itself, written plainly, may stand in the name.
        if let (shown, plain) = Self.addressInName(author.name), !(plain && shown == author.address.lowercased()) {
            problem = "the From display name shows the address \(DisplayName.printable(shown)), which is not the sender's address"
                + (plain ? "" : " (written with look-alike characters)")
            return
        }
        problem = nil
    }

    /// An address written in a display name (`"bob@example.org" <eve@evil>`),
    /// as the reader sees it: look-alikes of `@` and `.` (full-width, small,
    /// ideographic …) count as those, invisible characters are skipped, and
    /// no top-level domain is needed (`manager@bigcorporation`). Returns the
    /// address read (folded) and whether it was written in plain ASCII.
    static func addressInName(_ name: String) -> (shown: String, plain: Bool)? {
        let folded = DisplayName.folded(name)
        for word in folded.split(whereSeparator: { DisplayName.separators.contains($0) }) where word.contains("@") {
            let parts = word.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count >= 2, !parts[0].isEmpty, !parts[parts.count - 1].isEmpty else { continue }
            let shown = word.lowercased()
            let plain = name.lowercased().split(whereSeparator: { DisplayName.separators.contains($0) }).contains { $0 == shown }
            return (shown, plain)
        }
        return nil
    }
}

/// Reads signatures of mail: PGP/MIME `multipart/signed` and inline
/// cleartext signatures, with coverage and the From check.
public struct MailVerifier: Sendable {
    /// The GnuPG home whose public keys verify.
    public let gnupg: GnuPG

    /// A verifier with `gnupg`'s public keys.
    public init(gnupg: GnuPG) { self.gnupg = gnupg }

    /// Verifies `raw`, the message as received (the signed part's bytes are
    /// taken from it, not from a re-serialisation).
    public func verify(_ raw: [UInt8], options: ParseOptions = .standard) throws -> VerificationReport {
        let message = try MIMEMessage.parse(raw, options: options)
        let structure = MailStructure(message)
        // The signature a reader would take as the mail's: the whole one, else the first.
        guard let protection = structure.signed.first(where: { $0.place == .whole }) ?? structure.signed.first else {
            let reason = structure.smime ? "S/MIME is not supported"
                : !structure.encrypted.isEmpty ? "the mail is encrypted: decrypt it to verify the signature inside"
                : "the mail is not signed"
            return VerificationReport(kind: nil, coverage: "none", signedPart: nil, status: structure.smime ? "unsupported" : nil,
                                      signer: nil, from: nil, fromMatches: false, verified: false, reason: reason,
                                      displayName: nil, displayNameMatches: nil, sender: nil, warnings: [])
        }
        let signatures: [Signature]
        var signedHeaders: MIMEEntity?
        switch protection.kind {
        case .pgpMIME:
            let children = protection.entity.children
            guard children.count == 2, let boundary = protection.entity.contentType.parameters["boundary"],
                  let signedBytes = RawParts.firstPart(in: raw, boundary: boundary),
                  let signature = children[1].content else {
                return report(protection, status: "malformed", signer: nil, from: nil, matches: false,
                              reason: "the multipart/signed part is malformed")
            }
            signatures = try gnupg.verifyDetached(signature: signature, signedData: signedBytes)
            signedHeaders = children[0]
        case .inline:
            guard let text = protection.entity.text else {
                return report(protection, status: "malformed", signer: nil, from: nil, matches: false, reason: "no text")
            }
            signatures = try gnupg.verifyCleartext(Array(text.utf8)).signatures
        }
        return try judge(signatures, protection: protection, message: message, signedHeaders: signedHeaders)
    }

    /// What the From's display name and a Sender field tell a reader.
    struct Names {
        var displayName: String?
        var displayNameMatches: Bool?
        var sender: String?
        var warnings: [String] = []
    }

    /// The report for `signatures` over `protection` in `message`.
    func judge(_ signatures: [Signature], protection: Protection, message: MIMEMessage,
               signedHeaders: MIMEEntity?) throws -> VerificationReport {
        // Protected headers (RFC 9788, or the older protected-headers="v1"):
        // a From inside the signed part is the authenticated one; so is a Sender.
        let outerFrom = message.addresses(.from)
        let innerFrom = signedHeaders.flatMap { $0.header("From") }.map(MailAddress.parseList)
        let from = innerFrom ?? outerFrom
        let fromCheck = FromCheck(from: from)
        let sender = (signedHeaders.flatMap { $0.header("Sender") }.map(MailAddress.parseList) ?? message.addresses(.sender))
            .first?.address.lowercased()
        var problems: [String] = []
        if let innerFrom, innerFrom.map({ $0.address.lowercased() }) != outerFrom.map({ $0.address.lowercased() }) {
            problems.append("the From outside differs from the signed From")
        }
        guard let signature = signatures.first else {
            return report(protection, status: "none", signer: nil, from: fromCheck.address, matches: false,
                          reason: "no signature found", names: Names(sender: sender))
        }
        if signatures.count > 1 { problems.append("the part has \(signatures.count) signatures; only the first is judged") }
        // A bad signature may name only a key ID: then there is no key to show.
        let key = GnuPG.isFingerprint(signature.fingerprint)
            ? try gnupg.lookup([], fingerprints: [signature.fingerprint]).keys.first : nil
        let validIDs = key?.userIDs.filter { !$0.isRevoked && !$0.isInvalid } ?? []
        let addresses = validIDs.map { $0.address.lowercased() }
        let matches = fromCheck.problem == nil && fromCheck.address.map(addresses.contains) == true
        let userID = key?.userIDs.first { $0.address.lowercased() == fromCheck.address }?.uid ?? key?.userIDs.first?.uid
        let signer = VerificationReport.Signer(fingerprint: key?.fingerprint ?? signature.fingerprint, userID: userID)
        let status = Self.statusName(signature.status)
        if signature.status != .good { problems.insert("the signature is not good (\(status))", at: 0) }
        switch protection.place {
        case .whole: break
        case .partial: problems.append("the signature covers only part \(protection.partName), not the whole message")
        case .attached: problems.append("the signature is inside an attached message (part \(protection.partName))")
        }
        if let problem = fromCheck.problem { problems.append(problem) }
        else if !matches {
            // Sender names who sent the mail for the author; a signature by the Sender does not speak for the From.
            if let sender, addresses.contains(sender) {
                problems.append("the signer is the Sender \(sender), not the From address \(fromCheck.address ?? "")")
            } else {
                problems.append("the signer's key has no user ID with the From address \(fromCheck.address ?? "")")
            }
        }
        var names = Names(sender: sender)
        if from.count == 1 {
            let shown = from[0].name.trimmingCharacters(in: .whitespaces)
            names.displayName = shown.isEmpty ? nil : shown
            if let key {
                let keyNames = Set(validIDs.map { DisplayName.comparable($0.name) }.filter { !$0.isEmpty })
                let nameMatches = shown.isEmpty
                    || (FromCheck.addressInName(shown) == nil && keyNames.contains(DisplayName.comparable(shown)))
                names.displayNameMatches = nameMatches
                if !nameMatches {
                    let onKey = validIDs.first { $0.address.lowercased() == fromCheck.address }?.uid ?? key.userIDs.first?.uid ?? key.fingerprint
                    names.warnings.append("the From display name \"\(DisplayName.printable(shown))\" is not a name on the signer's key "
                                          + "(\(DisplayName.printable(onKey)))")
                }
            }
        }
        if let sender, sender != fromCheck.address {
            names.warnings.append("the mail has a Sender \(DisplayName.printable(sender)) beside the From address \(fromCheck.address ?? "-")")
        }
        return report(protection, status: status, signer: signer, from: fromCheck.address, matches: matches,
                      reason: problems.isEmpty ? nil : problems.joined(separator: "; "), names: names)
    }

    func report(_ protection: Protection, status: String, signer: VerificationReport.Signer?, from: String?,
                matches: Bool, reason: String?, names: Names = Names()) -> VerificationReport {
        VerificationReport(kind: protection.kind, coverage: protection.place.rawValue, signedPart: protection.partName,
                           status: status, signer: signer, from: from, fromMatches: matches,
                           verified: reason == nil && status == "good" && protection.place == .whole && matches,
                           reason: reason, displayName: names.displayName, displayNameMatches: names.displayNameMatches,
                           sender: names.sender, warnings: names.warnings)
    }

    static func statusName(_ status: SignatureStatus) -> String {
        switch status {
        case .good: "good"
        case .bad: "bad"
        case .noPublicKey: "unknown key"
        case .expiredKey: "key expired"
        case .revokedKey: "key revoked"
        case .expiredSignature: "signature expired"
        case .error(let code): "error \(code.rawValue)"
        }
    }
}
