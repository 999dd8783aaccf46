internal import CGPGME
internal import CMailsecShims
import Foundation
import Synchronization

/// GPGME's one-time initialisation (`gpgme_check_version`), done lazily and
/// exactly once: a Swift `static let` is initialised once, thread-safely.
///
/// GPGME's first context normally probes five helper programs (`gpgconf
/// --list-dirs`, `--list-components` and `--version`, `gpg --version`,
/// `gpgsm --version`; engine.c, dirinfo.c). Only OpenPGP is used here, so
/// gpgconf is switched off (`disable-gpgconf`, before any other GPGME call):
/// GPGME then finds `gpg` on `PATH` (else in /bin and /usr/bin) and probes
/// only `gpg --version`, which it needs for its feature checks. That is four
/// processes fewer for every process that uses GnuPG, which matters in a
/// per-mail filter.
enum GPGMELibrary {
    static let version: String? = {
        _ = gpgme_set_global_flag("disable-gpgconf", "1")
        guard let version = mailsec_gpgme_check_version(nil) else { return nil }
        if let locale = setlocale(LC_CTYPE, nil) {
            gpgme_set_locale(nil, LC_CTYPE, locale)
        }
        return String(cString: version)
    }()

    /// GPGME probes `gpg --version` at its first engine check only (it keeps the answer).
    private static let probed = Atomic<Bool>(false)

    static func initialise() throws(GPGMEError) {
        guard version != nil else { throw GPGMEError(code: .invalidEngine, .initialise) }
        if !probed.exchange(true, ordering: .relaxed) { ProcessCount.add() }
        try check(gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP), .initialise)
    }
}
