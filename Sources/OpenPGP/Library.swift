internal import CGPGME
internal import CMailsecShims
import Foundation

/// GPGME's one-time initialisation (`gpgme_check_version`), done lazily and
/// exactly once: a Swift `static let` is initialised once, thread-safely.
enum GPGMELibrary {
    static let version: String? = {
        guard let version = mailsec_gpgme_check_version(nil) else { return nil }
        if let locale = setlocale(LC_CTYPE, nil) {
            gpgme_set_locale(nil, LC_CTYPE, locale)
        }
        return String(cString: version)
    }()

    static func initialise() throws(GPGMEError) {
        guard version != nil else { throw GPGMEError(code: .invalidEngine, .initialise) }
        try check(gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP), .initialise)
    }
}
