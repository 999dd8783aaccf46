internal import CGPGME

/// Owns one `gpgme_ctx_t`, released in `deinit`.
///
/// A context is used for exactly one operation and never shared between
/// threads, so it is deliberately not `Sendable`.
final class Context {
    let raw: gpgme_ctx_t

    /// Creates an OpenPGP context for the GnuPG home `home` (nil: GnuPG's default)
    /// and the gpg at `executable` (nil: the one GPGME knows).
    /// Pinentry is in loopback mode and the context is offline, so an operation
    /// never waits for a dialog or reaches for the network.
    init(home: String?, executable: String? = nil, armor: Bool = false) throws(GPGMEError) {
        try GPGMELibrary.initialise()
        var ctx: gpgme_ctx_t?
        try check(gpgme_new(&ctx), .context)
        guard let ctx else { throw GPGMEError(code: .general, .context) }
        raw = ctx
        // From here on deinit runs if a step below throws, so the context is released.
        try check(gpgme_set_protocol(raw, GPGME_PROTOCOL_OpenPGP), .context)
        if home != nil || executable != nil {
            try check(gpgme_ctx_set_engine_info(raw, GPGME_PROTOCOL_OpenPGP, executable, home), .context)
        }
        gpgme_set_armor(raw, armor ? 1 : 0)
        gpgme_set_offline(raw, 1)
        try check(gpgme_set_pinentry_mode(raw, GPGME_PINENTRY_MODE_LOOPBACK), .context)
    }

    deinit { gpgme_release(raw) }

    /// Adds `keys` as signers (`gpgme_signers_add`).
    func setSigners(_ keys: [Key]) throws(GPGMEError) {
        gpgme_signers_clear(raw)
        for key in keys {
            try check(gpgme_signers_add(raw, key.handle.raw), .sign)
        }
    }
}
