/// The status lines of one key listing that say it did not end cleanly.
/// Filled by GPGME's status callback on the thread that runs the listing;
/// read after it ends.
///
/// A listing that ends cleanly sends `KEY_CONSIDERED` lines and, when no
/// key matched at all, `ERROR keylist.getkey 9` (no public key; 17, no
/// secret key, for a listing of secret keys). Anything
/// else of `ERROR` or `FAILURE` (`FAILURE gpg-exit …` when gpg stops on a
/// damaged trust database) means keys may be missing from the listing.
final class ListingStatus: StatusLog {
    /// The first line that tells of a failure, as `KEYWORD arguments` (no key material: codes only).
    private(set) var failure: String?

    override func record(_ keyword: String, _ arguments: String) {
        guard failure == nil, keyword == "ERROR" || keyword == "FAILURE" else { return }
        let fields = arguments.split(separator: " ")
        // GPG_ERR_NO_PUBKEY (9) or GPG_ERR_NO_SECKEY (17), whatever error source gpg put in the upper bits.
        if keyword == "ERROR", fields.first == "keylist.getkey", fields.count == 2, let code = UInt32(fields[1]),
           [9, 17].contains(code & 0xFFFF) {
            return
        }
        failure = keyword + " " + fields.prefix(2).map { String($0.prefix(40)) }.joined(separator: " ")
    }
}
