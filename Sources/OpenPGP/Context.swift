internal import CGPGME
import Foundation
import Synchronization

/// Which gpg and GnuPG home new contexts get.
///
/// GPGME runs `gpg --version` each time engine info is set, so setting it per
/// context (`gpgme_ctx_set_engine_info`) doubles the gpg processes of every
/// operation. Instead the process-wide default (`gpgme_set_engine_info`) is
/// changed only when a different home is wanted, and `gpgme_new`, which copies
/// that default into the context, runs under the same lock: contexts for
/// different homes never mix, and a program with one home pays once.
enum EngineSelection {
    struct Choice: Hashable {
        let executable: String?
        let home: String?
    }

    /// GPGME's own default until engine info is first set: the gpg it
    /// found, with no home given, so gpg takes `$GNUPGHOME` (or ~/.gnupg).
    private static let current = Mutex<Choice>(Choice(executable: nil, home: nil))
    /// How often each choice was made the process-wide one: each time costs
    /// GPGME's `gpg --version` (counted by the tests, which share one process
    /// with others that choose other homes).
    static let selections = Mutex<[Choice: Int]>([:])

    /// Engine info set on each context (`gpgme_ctx_set_engine_info`), as the
    /// house rule has it, instead of the process-wide switch: off, and kept
    /// only so that scripts/bench can measure what it costs beside the switch
    /// (`MAILSEC_GPGME_ENGINE_PER_CONTEXT=1`, read once; see docs/design.md).
    /// With it, no `$GNUPGHOME` is set either (``GnuPG/makeHomeTheDefault(_:)``).
    static let perContext = getenv("MAILSEC_GPGME_ENGINE_PER_CONTEXT").map { String(cString: $0) == "1" } ?? false

    static func newContext(home: String?, executable: String?) throws(GPGMEError) -> gpgme_ctx_t {
        if perContext { return try newContextWithItsOwnEngine(home: home, executable: executable) }
        // A home that is `$GNUPGHOME` already needs no engine info, which spares
        // a `gpg --version` probe: what a per-mail process gains by exporting
        // its home (see `GnuPG.makeHomeTheDefault`).
        let environmentHome = getenv("GNUPGHOME").map { String(cString: $0) }
        let wanted = Choice(executable: executable, home: home == environmentHome ? nil : home)
        let (err, made): (gpgme_error_t, UInt) = current.withLock { choice in
            if choice != wanted {
                // What is recorded is what GPGME gets: nil means $GNUPGHOME as gpg finds it then.
                let err = gpgme_set_engine_info(GPGME_PROTOCOL_OpenPGP, wanted.executable, wanted.home)
                if err != 0 { return (err, 0) }
                ProcessCount.add()  // GPGME's `gpg --version` for the new engine info
                selections.withLock { $0[wanted, default: 0] += 1 }
                choice = wanted
            }
            var ctx: gpgme_ctx_t?
            let err = gpgme_new(&ctx)
            // The new context leaves the lock as an integer: Mutex wants a Sendable result.
            return (err, UInt(bitPattern: ctx))
        }
        try check(err, .context)
        guard let ctx = gpgme_ctx_t(bitPattern: made) else { throw GPGMEError(code: .general, .context) }
        return ctx
    }

    /// A context from GPGME's default with `home` and `executable` set on it
    /// alone: one `gpg --version` each time.
    static func newContextWithItsOwnEngine(home: String?, executable: String?) throws(GPGMEError) -> gpgme_ctx_t {
        var made: gpgme_ctx_t?
        try check(gpgme_new(&made), .context)
        guard let ctx = made else { throw GPGMEError(code: .general, .context) }
        let err = gpgme_ctx_set_engine_info(ctx, GPGME_PROTOCOL_OpenPGP, executable, home)
        guard err == 0 else {
            gpgme_release(ctx)
            try check(err, .context)
            throw GPGMEError(code: .general, .context)
        }
        ProcessCount.add()  // GPGME's `gpg --version` for this context's engine info
        return ctx
    }
}

/// What one operation's status lines told, as a subclass reads them
/// (``Context/watchStatus(_:_:)``). Filled on the thread that runs the
/// operation; read after it returns.
class StatusLog {
    func record(_ keyword: String, _ arguments: String) {}
}

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
        raw = try EngineSelection.newContext(home: home, executable: executable)
        ProcessCount.add()  // the operation's one gpg
        // From here on deinit runs if a step below throws, so the context is released.
        try check(gpgme_set_protocol(raw, GPGME_PROTOCOL_OpenPGP), .context)
        gpgme_set_armor(raw, armor ? 1 : 0)
        gpgme_set_offline(raw, 1)
        try check(gpgme_set_pinentry_mode(raw, GPGME_PINENTRY_MODE_LOOPBACK), .context)
    }

    deinit { gpgme_release(raw) }

    /// Hands every status line gpg writes during this context's operation to
    /// `log` (`gpgme_set_status_cb` with the context flag `full-status`).
    /// The caller keeps `log` alive until the operation is over.
    func watchStatus(_ log: StatusLog, _ operation: GPGMEError.Operation) throws(GPGMEError) {
        try check(gpgme_set_ctx_flag(raw, "full-status", "1"), operation)
        gpgme_set_status_cb(raw, { opaque, keyword, arguments in
            guard let opaque, let keyword else { return 0 }
            Unmanaged<StatusLog>.fromOpaque(opaque).takeUnretainedValue()
                .record(String(cString: keyword), arguments.map { String(cString: $0) } ?? "")
            return 0
        }, Unmanaged.passUnretained(log).toOpaque())
    }

    /// Adds `keys` as signers (`gpgme_signers_add`).
    func setSigners(_ keys: [Key]) throws(GPGMEError) {
        gpgme_signers_clear(raw)
        for key in keys {
            try check(gpgme_signers_add(raw, key.handle.raw), .sign)
        }
    }
}
