internal import CGPGME
internal import CMailsecShims

/// An error reported by GPGME, built from its error code.
///
/// The description names the operation and GPGME's text for the code
/// (`gpgme_strerror_r`); it never contains message content, passphrases or key
/// material. Match a code in a `catch` clause with `catch GPGMEError.Code.noSecretKey`.
public struct GPGMEError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A GPGME (libgpg-error) error code, as the `gpg_err_code_t` value.
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The `gpg_err_code_t` value.
        public let rawValue: UInt32
        /// A code from its `gpg_err_code_t` value.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// `GPG_ERR_GENERAL`
        public static let general = Code(rawValue: GPG_ERR_GENERAL.rawValue)
        /// `GPG_ERR_NO_PUBKEY`
        public static let noPublicKey = Code(rawValue: GPG_ERR_NO_PUBKEY.rawValue)
        /// `GPG_ERR_NO_SECKEY`
        public static let noSecretKey = Code(rawValue: GPG_ERR_NO_SECKEY.rawValue)
        /// `GPG_ERR_NO_DATA`: the input holds no OpenPGP data of the expected kind.
        public static let noData = Code(rawValue: GPG_ERR_NO_DATA.rawValue)
        /// `GPG_ERR_DECRYPT_FAILED`
        public static let decryptFailed = Code(rawValue: GPG_ERR_DECRYPT_FAILED.rawValue)
        /// `GPG_ERR_BAD_SIGNATURE`
        public static let badSignature = Code(rawValue: GPG_ERR_BAD_SIGNATURE.rawValue)
        /// `GPG_ERR_UNUSABLE_PUBKEY`: an encryption key was refused by the engine.
        public static let unusablePublicKey = Code(rawValue: GPG_ERR_UNUSABLE_PUBKEY.rawValue)
        /// `GPG_ERR_UNUSABLE_SECKEY`: a signing key was refused by the engine.
        public static let unusableSecretKey = Code(rawValue: GPG_ERR_UNUSABLE_SECKEY.rawValue)
        /// `GPG_ERR_INV_VALUE`
        public static let invalidValue = Code(rawValue: GPG_ERR_INV_VALUE.rawValue)
        /// `GPG_ERR_INV_ENGINE`: gpg is missing or too old.
        public static let invalidEngine = Code(rawValue: GPG_ERR_INV_ENGINE.rawValue)
        /// `GPG_ERR_NO_PASSPHRASE`
        public static let noPassphrase = Code(rawValue: GPG_ERR_NO_PASSPHRASE.rawValue)
        /// `GPG_ERR_BAD_PASSPHRASE`
        public static let badPassphrase = Code(rawValue: GPG_ERR_BAD_PASSPHRASE.rawValue)
        /// `GPG_ERR_CANCELED`
        public static let canceled = Code(rawValue: GPG_ERR_CANCELED.rawValue)
        /// `GPG_ERR_EOF`
        public static let endOfFile = Code(rawValue: GPG_ERR_EOF.rawValue)

        /// Lets `catch GPGMEError.Code.noData` match a thrown ``GPGMEError``.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? GPGMEError)?.code == code
        }
    }

    /// What the library was doing when GPGME reported the error.
    public enum Operation: String, Sendable {
        case initialise = "initialising GPGME"
        case context = "creating a GPGME context"
        case data = "preparing GPGME data"
        case keyListing = "key listing"
        case keyImport = "key import"
        case keyExport = "key export"
        case keyDeletion = "key deletion"
        case sign = "signing"
        case encrypt = "encryption"
        case decrypt = "decryption"
        case verify = "signature verification"
    }

    /// The error code.
    public let code: Code
    /// The operation that failed.
    public let operation: Operation
    /// GPGME's description of the code (`gpgme_strerror_r`).
    public let reason: String

    init(_ err: gpgme_error_t, _ operation: Operation) {
        self.code = Code(rawValue: mailsec_gpgme_err_code(err))
        self.operation = operation
        var buffer = [CChar](repeating: 0, count: 256)
        if gpgme_strerror_r(err, &buffer, buffer.count) == 0 {
            self.reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } else {
            self.reason = "error code \(code.rawValue)"
        }
    }

    init(code: Code, _ operation: Operation) {
        self.init(mailsec_gpgme_error(code.rawValue), operation)
    }

    /// The operation and GPGME's text, e.g. `decryption failed: No secret key`.
    public var description: String { "\(operation.rawValue) failed: \(reason)" }

    /// True for failures that may go away by themselves: the agent or gpg not
    /// reachable, a time-out, resources short, gpg gone in the middle (killed or
    /// crashed: GPGME says only "General error"). A caller should retry later
    /// (a mail filter exits 75), not give up on the mail.
    public var isTemporary: Bool {
        let temporary: [gpg_err_code_t] = [GPG_ERR_GENERAL, GPG_ERR_NO_AGENT, GPG_ERR_AGENT, GPG_ERR_ASS_CONNECT_FAILED,
                                           GPG_ERR_ASS_GENERAL, GPG_ERR_TIMEOUT, GPG_ERR_INV_ENGINE,
                                           GPG_ERR_NOT_OPERATIONAL, GPG_ERR_EAGAIN, GPG_ERR_ENOMEM,
                                           GPG_ERR_EPIPE, GPG_ERR_EIO, GPG_ERR_ENOSPC, GPG_ERR_EMFILE]
        return temporary.contains { $0.rawValue == code.rawValue }
    }
}

/// Throws a ``GPGMEError`` unless `err` is success.
@inline(__always)
func check(_ err: gpgme_error_t, _ operation: GPGMEError.Operation) throws(GPGMEError) {
    if mailsec_gpgme_err_code(err) != GPG_ERR_NO_ERROR.rawValue {
        throw GPGMEError(err, operation)
    }
}

/// Ciphertext whose integrity mailsec could not confirm: refused, whatever
/// the GnuPG home's configuration (`ignore-mdc-error`) lets gpg do, because
/// its plaintext may have been altered on the way (EFAIL's CFB gadgets).
public struct IntegrityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the integrity is not confirmed. A struct, so that reasons can be added.
    public struct Reason: RawRepresentable, Sendable, Hashable {
        /// The reason in words, as the error line shows it.
        public let rawValue: String
        /// A reason from its words.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No MDC and no AEAD: symmetrically encrypted data (tag 9), or CFB without MDC.
        public static let noProtection = Reason(rawValue: "no integrity protection")
        /// The MDC did not match, or was never confirmed by gpg (`GOODMDC` missing).
        public static let checkFailed = Reason(rawValue: "integrity check failed")
        /// An AEAD authentication tag did not match.
        public static let aeadTagFailed = Reason(rawValue: "AEAD tag failed")
    }

    /// Why the integrity is not confirmed.
    public let reason: Reason

    /// A refusal for `reason`.
    public init(_ reason: Reason = .noProtection) { self.reason = reason }

    /// One line naming the reason and that nothing of the plaintext is shown.
    public var description: String {
        switch reason {
        case .noProtection:
            "no integrity protection: the ciphertext has no MDC, so its content may have been altered; refused"
        case .aeadTagFailed:
            "AEAD tag failed: the ciphertext was altered or damaged; refused, nothing of it is shown"
        case .checkFailed:
            "integrity check failed: the ciphertext's MDC does not verify, so it was altered or damaged; refused, nothing of it is shown"
        default: "\(reason.rawValue): refused"
        }
    }
}
