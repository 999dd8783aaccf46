internal import CGPGME
internal import CMailsecShims
import Foundation
import Platform

/// OpenPGP through GnuPG, for one GnuPG home.
///
/// Each method creates its own GPGME context, runs one operation and releases
/// it, so a `GnuPG` value can be shared between threads freely.
public struct GnuPG: Sendable {
    /// The GnuPG home directory; nil means GnuPG's own default
    /// (`$GNUPGHOME`, then `~/.gnupg`).
    public let home: String?
    /// The gpg executable; nil means the one GPGME found at build time.
    public let executable: String?

    /// GnuPG with the home `home` and the gpg `executable` (nil: the defaults).
    /// Contexts get them from GPGME's process-wide engine info, switched
    /// under a lock only when another home is wanted (``EngineSelection``),
    /// not per context: GPGME runs `gpg --version` whenever engine info is
    /// set, so `gpgme_ctx_set_engine_info` would cost one process more per
    /// operation (counted by EngineSelectionTests).
    public init(home: String? = nil, executable: String? = nil) {
        self.home = home
        self.executable = executable
    }

    /// For a program that uses one GnuPG home all its life, such as a per-mail
    /// filter: makes `home` the process's `$GNUPGHOME`, so GPGME is never
    /// re-configured for it, which spares one `gpg --version` per process.
    /// Call it first thing, before other threads run (`setenv` is not
    /// thread-safe). Every child process inherits the variable.
    package static func makeHomeTheDefault(_ home: String?) {
        if let home, !EngineSelection.perContext { setenv("GNUPGHOME", home, 1) }
    }

    /// For a program that is about to use GnuPG once, such as a per-mail
    /// filter: starts GPGME's one-time set-up, whose `gpg --version` probe is
    /// a process of its own, on a thread of its own, so that it runs beside
    /// the caller's next steps (reading and parsing the mail) instead of
    /// ahead of the first key look-up, which waits for it if need be. Call
    /// it after ``makeHomeTheDefault(_:)``: `setenv` must not race a thread
    /// that starts a process.
    package static func startLibrarySetUp() {
        librarySetUp.enter()
        Thread.detachNewThread {
            // The version check alone starts no process: the probe is the
            // engine check (`gpgme_get_engine_info`, under GPGME's own lock, so
            // a first context made meanwhile waits for it). An error here is
            // met again, and reported, by the first real use.
            try? GPGMELibrary.initialise()
            librarySetUp.leave()
        }
    }

    /// Waits until a set-up begun with ``startLibrarySetUp()`` is done (at
    /// once when none was begun), for at most `limit` seconds; true when it is
    /// done. Call it before `exit` on a path that may not have used GnuPG (a
    /// mail rejected early): `exit` must not tear the libraries down under the
    /// thread still probing. When it returns false (the probe's gpg hangs),
    /// leave with `_exit`, which runs no exit handlers or destructors.
    package static func awaitLibrarySetUp(within limit: TimeInterval) -> Bool {
        librarySetUp.wait(timeout: .now() + limit) == .success
    }

    private static let librarySetUp = DispatchGroup()

    /// The GPGME library version in use (`gpgme_check_version`).
    public static var libraryVersion: String? { GPGMELibrary.version }

    // MARK: Keys

    /// Lists the keys for every address in `addresses` with **one** key-listing
    /// operation (`gpgme_op_keylist_ext_start`, one pattern `<address>` each) and
    /// judges each candidate against `requirements`.
    ///
    /// Matching is exact and case-insensitive on the user ID's mail address.
    /// The result has one entry per distinct address, in the order given.
    /// A damaged public keyring throws ``KeyringError`` rather than report
    /// keys it may hide as missing.
    public func lookup(_ addresses: [String], requirements: KeyRequirements = .anyValidity) throws -> [KeyLookup] {
        try lookup(addresses, requirements: requirements, fingerprints: []).lookups
    }

    /// Like ``lookup(_:requirements:)``, and in the same listing operation also
    /// lists the keys with the given fingerprints (for example a signing key
    /// named by fingerprint).
    public func lookup(_ addresses: [String], requirements: KeyRequirements = .anyValidity,
                       fingerprints: [String]) throws -> (lookups: [KeyLookup], keys: [Key]) {
        var seen = Set<String>()
        let unique = addresses.filter { seen.insert($0.lowercased()).inserted }
        for address in unique { try KeyLookup.validate(address) }
        for fingerprint in fingerprints where !Self.isFingerprint(fingerprint) {
            throw InvalidAddressError(address: fingerprint)
        }
        let patterns = unique.map { "<\($0)>" } + fingerprints
        guard !patterns.isEmpty else { return ([], []) }
        // GPGME does not say when gpg could read only part of the keyring (see
        // KeyringCheck): the file is checked while gpg lists, and the listing
        // counts only when the check passed.
        // With the signatures, checked (`--check-sigs`): a changed key is
        // judged by whether the old one certified it, in this same listing.
        let keys = try KeyringCheck.checking(home: home) { try listKeys(patterns: patterns, secretOnly: false, signatures: true) }
        let wanted = Set(fingerprints.map { $0.uppercased() })
        return (unique.map { KeyLookup(address: $0, keys: keys, requirements: requirements) },
                keys.filter { key in
                    wanted.contains(key.fingerprint) || key.subkeys.contains { wanted.contains($0.fingerprint) }
                })
    }

    /// True when `address` can be looked up: a plain `local@domain` address.
    public static func isLookupAddress(_ address: String) -> Bool {
        (try? KeyLookup.validate(address)) != nil
    }

    /// True for a full hexadecimal fingerprint (40 or 64 digits).
    public static func isFingerprint(_ text: String) -> Bool {
        (text.count == 40 || text.count == 64) && text.allSatisfy(\.isHexDigit)
    }

    /// The keys whose secret part GnuPG holds and that have a user ID for
    /// exactly `address` and can sign now; newest first.
    public func signingKeys(for address: String) throws -> [Key] {
        try KeyLookup.validate(address)
        return try listKeys(patterns: ["<\(address)>"], secretOnly: true)
            .filter { key in
                !key.userIDs(matching: address).isEmpty && !key.isRevoked && !key.isExpired
                    && !key.isDisabled && !key.isInvalid && key.subkeys.contains(where: \.isUsableForSigning)
            }
            .sorted { ($0.created ?? .distantPast) > ($1.created ?? .distantPast) }
    }

    /// Every public key of the keyring, in one key-listing operation
    /// (`gpgme_op_keylist_ext_start` without patterns). For a view of the
    /// whole keyring (the contacts); a mail's keys are looked up with
    /// ``lookup(_:requirements:)``, never by listing everything.
    public func allKeys() throws -> [Key] {
        try KeyringCheck.checking(home: home) { try listKeys(patterns: [], secretOnly: false) }
    }

    func listKeys(patterns: [String], secretOnly: Bool, signatures: Bool = false) throws -> [Key] {
        let context = try Context(home: home, executable: executable)
        let mode = GPGME_KEYLIST_MODE_LOCAL | (signatures ? GPGME_KEYLIST_MODE_SIGS : 0)
        try check(gpgme_set_keylist_mode(context.raw, gpgme_keylist_mode_t(mode)), .keyListing)
        // gpg that meets a damaged trust database half way says so in a status
        // line (`FAILURE gpg-exit`) and stops listing; GPGME ends the listing in
        // a plain EOF all the same. Every status line is watched: see ``ListingStatus``.
        let status = ListingStatus()
        try context.watchStatus(status, .keyListing)
        let keys = try withExtendedLifetime(status) { try listKeys(context, patterns: patterns, secretOnly: secretOnly) }
        if let failure = status.failure {
            throw KeyringError(path: KeyringCheck.resolvedHome(home), problem: "gpg's key listing did not end cleanly: \(failure)")
        }
        return keys
    }

    private func listKeys(_ context: Context, patterns: [String], secretOnly: Bool) throws -> [Key] {
        var cPatterns: [UnsafeMutablePointer<CChar>?] = patterns.map { strdup($0) }
        defer { cPatterns.forEach { free($0) } }
        cPatterns.append(nil)
        let started = cPatterns.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                gpgme_op_keylist_ext_start(context.raw, $0, secretOnly ? 1 : 0, 0)
            }
        }
        try check(started, .keyListing)
        var keys: [Key] = []
        while true {
            var raw: gpgme_key_t?
            let err = gpgme_op_keylist_next(context.raw, &raw)
            if GPGMEError.Code(rawValue: mailsec_gpgme_err_code(err)) == .endOfFile { break }
            try check(err, .keyListing)
            if let raw { keys.append(Key(taking: raw)) }
        }
        // A truncated listing must not pass for a complete one.
        if let result = gpgme_op_keylist_result(context.raw), result.pointee.truncated != 0 {
            throw GPGMEError(code: .general, .keyListing)
        }
        return keys
    }

    /// Imports keys from `data`, armored or binary (`gpgme_op_import`).
    /// With `onlyUserIDsFor`, only user IDs with exactly that address are
    /// kept (gpg's import filter `keep-uid=mbox = ADDRESS`): a key offered for
    /// one address (Autocrypt) must not bring names for others. A key with no
    /// such user ID is not imported at all.
    public func importKeys(_ data: [UInt8], onlyUserIDsFor address: String? = nil) throws -> ImportSummary {
        let context = try Context(home: home, executable: executable)
        if let address {
            try KeyLookup.validate(address)
            try check(gpgme_set_ctx_flag(context.raw, "import-filter", "keep-uid=mbox = \(address.lowercased())"), .keyImport)
        }
        try DataBuffer.borrowing(data) { input in
            try check(gpgme_op_import(context.raw, input.raw), .keyImport)
        }
        guard let result = gpgme_op_import_result(context.raw)?.pointee else {
            throw GPGMEError(code: .general, .keyImport)
        }
        var fingerprints: [String] = [], gained = Set<String>()
        var pointer = result.imports
        while let status = pointer {
            if let fpr = status.pointee.fpr {
                fingerprints.append(String(cString: fpr))
                if status.pointee.status & UInt32(GPGME_IMPORT_NEW | GPGME_IMPORT_UID) != 0 { gained.insert(String(cString: fpr).uppercased()) }
            }
            pointer = status.pointee.next
        }
        // A key already there that gained something (a revocation, a signature, a user ID, a subkey) is neither
        // "imported" nor "unchanged" in gpg's counts, yet it was taken.
        let grown = result.new_user_ids + result.new_sub_keys + result.new_signatures + result.new_revocations
        if result.considered > 0 && result.imported + result.unchanged + result.secret_read + grown == 0 {
            throw GPGMEError(code: .invalidValue, .keyImport)
        }
        if result.considered == 0 {
            throw GPGMEError(code: .noData, .keyImport)
        }
        return ImportSummary(
            considered: Int(result.considered), imported: Int(result.imported),
            unchanged: Int(result.unchanged), secretRead: Int(result.secret_read),
            fingerprints: fingerprints, gainedUserIDs: gained)
    }

    /// Deletes the public key `fingerprint` from the keyring
    /// (`gpgme_get_key`, then `gpgme_op_delete_ext` with `GPGME_DELETE_FORCE`);
    /// false when the keyring has no such key. A key whose secret part the
    /// home holds is not deleted (GPGME refuses it without
    /// `GPGME_DELETE_ALLOW_SECRET`, which is never given): that throws.
    public func deleteKey(_ fingerprint: String) throws -> Bool {
        guard Self.isFingerprint(fingerprint) else { throw InvalidAddressError(address: fingerprint) }
        let context = try Context(home: home, executable: executable)
        var raw: gpgme_key_t?
        let found = gpgme_get_key(context.raw, fingerprint, &raw, 0)
        if GPGMEError.Code(rawValue: mailsec_gpgme_err_code(found)) == .endOfFile { return false }
        try check(found, .keyDeletion)
        guard let raw else { return false }
        let key = Key(taking: raw)
        try withExtendedLifetime(key) {
            try check(gpgme_op_delete_ext(context.raw, key.handle.raw, UInt32(GPGME_DELETE_FORCE)), .keyDeletion)
        }
        return true
    }

    /// Exports the public part of `keys` (`gpgme_op_export_keys`). `minimal`
    /// strips all but the latest self-signatures, as Autocrypt asks.
    public func exportKeys(_ keys: [Key], armored: Bool = true, minimal: Bool = false) throws -> [UInt8] {
        let context = try Context(home: home, executable: executable, armor: armored)
        let output = try DataBuffer.memory()
        var handles: [gpgme_key_t?] = keys.map { $0.handle.raw }
        handles.append(nil)
        let mode: gpgme_export_mode_t = minimal ? UInt32(GPGME_EXPORT_MODE_MINIMAL) : 0
        try withExtendedLifetime(keys) {
            try check(gpgme_op_export_keys(context.raw, &handles, mode, output.raw), .keyExport)
        }
        let bytes = output.takeBytes()
        if bytes.isEmpty { throw GPGMEError(code: .noData, .keyExport) }
        return bytes
    }

    // MARK: Sign, encrypt, decrypt, verify

    /// Makes an armored detached signature over `data` with `signer`
    /// (`gpgme_op_sign`, `GPGME_SIG_MODE_DETACH`), e.g. for `multipart/signed`.
    public func signDetached(_ data: [UInt8], signer: Key) throws -> DetachedSignature {
        let context = try Context(home: home, executable: executable, armor: true)
        try context.setSigners([signer])
        let output = try DataBuffer.memory()
        try DataBuffer.borrowing(data) { input in
            try check(gpgme_op_sign(context.raw, input.raw, output.raw, GPGME_SIG_MODE_DETACH), .sign)
        }
        let result = gpgme_op_sign_result(context.raw)?.pointee
        if result?.invalid_signers != nil { throw GPGMEError(code: .unusableSecretKey, .sign) }
        guard let made = result?.signatures?.pointee,
              let name = gpgme_hash_algo_name(made.hash_algo)
        else { throw GPGMEError(code: .general, .sign) }
        return DetachedSignature(armored: output.takeBytes(), hashAlgorithm: String(cString: name))
    }

    /// Encrypts `plaintext` to `recipients`, ASCII-armored; signs it in the same
    /// operation when `signer` is given (`gpgme_op_encrypt_sign`).
    ///
    /// The caller has judged the keys already (``lookup(_:requirements:)``),
    /// so GnuPG's own trust check is off (`GPGME_ENCRYPT_ALWAYS_TRUST`).
    /// `hideRecipients` leaves the key ids out of the message
    /// (`GPGME_ENCRYPT_THROW_KEYIDS`).
    public func encrypt(_ plaintext: [UInt8], to recipients: [Key], signer: Key? = nil, hideRecipients: Bool = false) throws -> [UInt8] {
        let output = try DataBuffer.memory()
        try DataBuffer.borrowing(plaintext) { input in
            try encrypt(input, output, recipients: recipients, signer: signer, hideRecipients: hideRecipients)
        }
        return output.takeBytes()
    }

    /// Like ``encrypt(_:to:signer:hideRecipients:)``, streaming from the open
    /// file descriptor `input` to `output`, so large data never sits in memory.
    public func encrypt(from input: Int32, to output: Int32, recipients: [Key], signer: Key? = nil, hideRecipients: Bool = false) throws {
        try encrypt(DataBuffer.fileDescriptor(input), DataBuffer.fileDescriptor(output),
                    recipients: recipients, signer: signer, hideRecipients: hideRecipients)
    }

    private func encrypt(_ input: DataBuffer, _ output: DataBuffer, recipients: [Key], signer: Key?, hideRecipients: Bool) throws {
        guard !recipients.isEmpty else { throw GPGMEError(code: .noPublicKey, .encrypt) }
        let context = try Context(home: home, executable: executable, armor: true)
        var flags = GPGME_ENCRYPT_ALWAYS_TRUST.rawValue
        if hideRecipients { flags |= GPGME_ENCRYPT_THROW_KEYIDS.rawValue }
        var handles: [gpgme_key_t?] = recipients.map { $0.handle.raw }
        handles.append(nil)
        try withExtendedLifetime(recipients) {
            if let signer {
                try context.setSigners([signer])
                try check(gpgme_op_encrypt_sign(context.raw, &handles, gpgme_encrypt_flags_t(flags), input.raw, output.raw), .encrypt)
                if gpgme_op_sign_result(context.raw)?.pointee.invalid_signers != nil {
                    throw GPGMEError(code: .unusableSecretKey, .sign)
                }
            } else {
                try check(gpgme_op_encrypt(context.raw, &handles, gpgme_encrypt_flags_t(flags), input.raw, output.raw), .encrypt)
            }
        }
        if gpgme_op_encrypt_result(context.raw)?.pointee.invalid_recipients != nil {
            throw GPGMEError(code: .unusablePublicKey, .encrypt)
        }
    }

    /// Decrypts `ciphertext` and verifies any signature inside it in the same
    /// pass (`gpgme_op_decrypt_verify`), into memory: the plaintext is
    /// returned only once gpg has confirmed its integrity (see ``IntegrityError``).
    /// Ciphertext without integrity protection is refused before it is decrypted.
    public func decrypt(_ ciphertext: [UInt8]) throws -> Decrypted {
        let packets = Packets.encryptedDataKind(ciphertext)
        if packets == .unprotected { throw IntegrityError(.noProtection) }
        let output = try DataBuffer.memory()
        let info = try DataBuffer.borrowing(ciphertext) { input in
            try decrypt(input, output, packets: packets)
        }
        return Decrypted(plaintext: output.takeBytes(), info: info)
    }

    /// Like ``decrypt(_:)``, between open file descriptors. The plaintext is
    /// decrypted into an unlinked private file first and copied to `output`
    /// only when its integrity is confirmed, so `output` never receives
    /// plaintext of refused ciphertext.
    public func decrypt(from input: Int32, to output: Int32) throws -> DecryptionInfo {
        guard case .success(let held) = UnnamedFile.make() else { throw GPGMEError(code: .general, .decrypt) }
        defer { close(held) }
        let info = try decrypt(DataBuffer.fileDescriptor(input), DataBuffer.fileDescriptor(held))
        guard lseek(held, 0, SEEK_SET) == 0 else { throw GPGMEError(code: .general, .decrypt) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        defer { zeroize(&buffer) }
        while true {
            let count = read(held, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw GPGMEError(code: .general, .decrypt) }
            if count == 0 { return info }
            var offset = 0
            while offset < count {
                let written = buffer[offset..<count].withUnsafeBytes { write(output, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { throw GPGMEError(code: .general, .decrypt) }
                offset += written
            }
        }
    }

    /// Decrypts and verifies in one operation, watching gpg's status lines
    /// (`gpgme_set_status_cb` with the context flag `full-status`): the
    /// plaintext counts only when gpg reported `DECRYPTION_OKAY` and `GOODMDC`
    /// (gpg sends `GOODMDC` for AEAD too), and never when the data had no
    /// MDC or the MDC or AEAD tag failed. So an `ignore-mdc-error` in the
    /// home's gpg.conf, which makes gpg succeed on such data, changes nothing.
    private func decrypt(_ input: DataBuffer, _ output: DataBuffer, packets: EncryptedDataKind? = nil) throws -> DecryptionInfo {
        let context = try Context(home: home, executable: executable)
        let log = DecryptionStatus()
        try context.watchStatus(log, .decrypt)
        let status = withExtendedLifetime(log) { gpgme_op_decrypt_verify(context.raw, input.raw, output.raw) }
        if gpgme_op_decrypt_result(context.raw)?.pointee.legacy_cipher_nomdc == 1 { throw IntegrityError(.noProtection) }
        if let refusal = log.refusal(failed: mailsec_gpgme_err_code(status) != GPG_ERR_NO_ERROR.rawValue, packets: packets) {
            throw refusal
        }
        try check(status, .decrypt)
        return DecryptionInfo(context)
    }

    /// Verifies an inline (cleartext) signed text, `-----BEGIN PGP SIGNED
    /// MESSAGE-----` (`gpgme_op_verify` with a plaintext output). Returns the
    /// signatures and the text the signature covers, dash-escaping undone.
    public func verifyCleartext(_ signed: [UInt8]) throws -> (signatures: [Signature], text: [UInt8]) {
        let context = try Context(home: home, executable: executable)
        let output = try DataBuffer.memory()
        try DataBuffer.borrowing(signed) { input in
            try check(gpgme_op_verify(context.raw, input.raw, nil, output.raw), .verify)
        }
        let signatures = Signature.list(context)
        if signatures.isEmpty { throw GPGMEError(code: .noData, .verify) }
        return (signatures, output.takeBytes())
    }

    /// Verifies the detached `signature` over `signedData` (`gpgme_op_verify`).
    /// A bad signature is a result (status `.bad`), not an error; an input that
    /// holds no signature throws.
    public func verifyDetached(signature: [UInt8], signedData: [UInt8]) throws -> [Signature] {
        let context = try Context(home: home, executable: executable)
        try DataBuffer.borrowing(signature) { sig in
            try DataBuffer.borrowing(signedData) { text in
                try check(gpgme_op_verify(context.raw, sig.raw, text.raw, nil), .verify)
            }
        }
        let signatures = Signature.list(context)
        if signatures.isEmpty { throw GPGMEError(code: .noData, .verify) }
        return signatures
    }
}
