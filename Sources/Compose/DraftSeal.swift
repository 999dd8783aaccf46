import Foundation
import OpenPGP
import Platform

/// A draft as it rests in a store: the whole ``ComposeDraft`` (subject,
/// recipients, text, attachments and their names, the protected original)
/// encrypted to the sender's own key and signed by it. Nothing of it is
/// readable without the secret key, and a draft put there by anyone else
/// (encrypting to a public key needs no secret) is refused when opened.
public enum DraftSeal {
    /// Why a draft cannot be sealed or opened. Never carries draft content.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// One line; never draft content.
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The sender's own key: usable for encryption and signing, with the secret part held.
    public static func ownKey(_ address: String, gnupg: GnuPG) throws -> Key {
        let secret = try gnupg.signingKeys(for: address)
        guard let key = secret.first(where: { key in
            key.subkeys.contains(where: \.isUsableForEncryption) && key.subkeys.contains(where: \.isUsableForSigning)
        }) else {
            throw Failure("drafts are kept encrypted to the sender's own key, and there is no usable key for \(address)")
        }
        return key
    }

    /// `draft` encrypted to and signed by `key` (armored).
    public static func seal(_ draft: ComposeDraft, key: Key, gnupg: GnuPG) throws -> [UInt8] {
        var encoded = try JSONEncoder().encode(draft)
        defer { encoded.withUnsafeMutableBytes { zeroize($0) } }
        var plaintext = Array(encoded)
        defer { zeroize(&plaintext) }
        return try gnupg.encrypt(plaintext, to: [key], signer: key)
    }

    /// The draft in `sealed`, which must carry a good signature by `key`.
    public static func open(_ sealed: [UInt8], key: Key, gnupg: GnuPG) throws -> ComposeDraft {
        let decrypted = try gnupg.decrypt(sealed)
        var plaintext = decrypted.plaintext
        defer { zeroize(&plaintext) }
        let wanted = Set([key.fingerprint] + key.subkeys.map(\.fingerprint))
        guard decrypted.info.signatures.contains(where: { $0.isGood && wanted.contains($0.fingerprint) }) else {
            throw Failure("the draft is not signed by the sender's own key, so it is not opened")
        }
        do {
            // Read in place: no second copy of the clear text to wipe.
            return try plaintext.withUnsafeMutableBytes { buffer in
                guard let base = buffer.baseAddress, buffer.count > 0 else { throw Failure("the draft is empty") }
                return try JSONDecoder().decode(ComposeDraft.self, from: Data(bytesNoCopy: base, count: buffer.count, deallocator: .none))
            }
        } catch {
            throw Failure("the draft cannot be read (it was written by another version, or is damaged)")
        }
    }
}
