/// The status lines of one decryption that tell about integrity, and what
/// they mean. Filled by GPGME's status callback on the thread that runs the
/// operation; read after it returns.
final class DecryptionStatus: StatusLog {
    /// `DECRYPTION_INFO <mdc_method> <sym_algo> [<aead_algo>]`: the session key worked.
    private(set) var info: (mdc: Int, aead: Int)?
    private(set) var goodMDC = false
    private(set) var badMDC = false
    private(set) var okay = false

    override func record(_ keyword: String, _ arguments: String) {
        switch keyword {
        case "DECRYPTION_INFO":
            let fields = arguments.split(separator: " ").map { Int($0) ?? 0 }
            info = (fields.first ?? 0, fields.count > 2 ? fields[2] : 0)
        case "GOODMDC": goodMDC = true
        case "BADMDC": badMDC = true
        case "DECRYPTION_OKAY": okay = true
        default: break
        }
    }

    /// Why the plaintext must not be used, or nil when gpg confirmed it.
    /// `failed`: the operation itself returned an error; `packets`: what the
    /// ciphertext's own packets say protects it, when the caller read them.
    func refusal(failed: Bool, packets: EncryptedDataKind? = nil) -> IntegrityError? {
        // Before a session key is found (no secret key, say), there is nothing
        // to judge: the operation's own error says what happened.
        guard let info else { return nil }
        // gpg 2.2 decrypts GnuPG's AEAD packet (tag 20, as rnp writes it) but
        // reports `DECRYPTION_INFO 0 9 0`, as for data without MDC: the packets
        // tell the two apart. Either way only DECRYPTION_OKAY with GOODMDC and
        // no error counts: with a bad tag gpg 2.2 still sends both, and fails.
        let aead = info.aead != 0 || packets == .aead
        if info.mdc == 0 && !aead { return IntegrityError(.noProtection) }
        if badMDC || failed || !okay || !goodMDC { return IntegrityError(aead ? .aeadTagFailed : .checkFailed) }
        return nil
    }
}
