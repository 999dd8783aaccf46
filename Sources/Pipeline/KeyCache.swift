import Foundation
import OpenPGP
import Synchronization

/// Key look-ups kept between mails by a resident filter, and dropped the
/// moment they may be stale: when the GnuPG home's keyring, trust database
/// or `gpg.conf` changed (``KeyringState``, checked on every call), when the
/// requirements differ, and when a listed key or subkey reaches its expiry
/// date (gpg judged it at listing time) or the entries are older than
/// ``maximumAge`` (validity that changes with time alone, such as a
/// certification that expires). So a key imported or revoked takes effect on
/// the next mail, without a restart.
///
/// Safe to share between threads: the entries live under a lock, and a
/// listing runs outside it (two threads may list the same address at once;
/// both results are the same keyring's).
public final class KeyCache: Sendable {
    /// How long entries are kept at most, whatever else happens.
    public static let maximumAge: TimeInterval = 600

    private struct Entries {
        var state: KeyringState?
        var requirements: KeyRequirements?
        var book = KeyBook()
        var validUntil = Date.distantFuture
    }

    private let entries = Mutex(Entries())
    private let exports = Mutex<(state: KeyringState?, data: [String: [UInt8]])>((nil, [:]))
    private let counters = Mutex((hits: 0, listings: 0))

    /// An empty cache: the first mail lists its keys.
    public init() {}

    /// How many calls were answered from the cache, and how many listed keys
    /// (for tests and the bench).
    public var statistics: (hits: Int, listings: Int) { counters.withLock { $0 } }

    /// The keys `pipeline` needs for `wanted`: from the cache when it holds
    /// them all for the keyring as it is now, otherwise listed (one listing
    /// for what is missing) and kept when the keyring did not change while
    /// it was listed.
    public func book(for wanted: KeyBook.Wanted, pipeline: MailPipeline) throws -> KeyBook {
        let home = pipeline.gnupg.home
        let requirements = pipeline.options.requirements
        let state = KeyringState(home: home)
        let now = Date()
        let (cached, missing) = entries.withLock { entries -> (KeyBook, KeyBook.Wanted) in
            if entries.state != state || entries.requirements != requirements || now >= entries.validUntil {
                entries = Entries(state: state, requirements: requirements, book: KeyBook(),
                                  validUntil: now.addingTimeInterval(Self.maximumAge))
            }
            return (entries.book, entries.book.missing(from: wanted))
        }
        guard !missing.isEmpty else {
            counters.withLock { $0.hits += 1 }
            return cached
        }
        counters.withLock { $0.listings += 1 }
        let found = try pipeline.lookUp(missing)
        var book = cached
        book.merge(found)
        // Kept only when the listing saw the same keyring as the state it is filed under.
        if KeyringState(home: home) == state {
            let expiry = Self.earliestExpiry(found, missing, after: now)
            entries.withLock { entries in
                guard entries.state == state, entries.requirements == requirements else { return }
                entries.book.merge(found)
                if let expiry, expiry < entries.validUntil { entries.validUntil = expiry }
            }
        }
        return book
    }

    /// Forgets everything (a configuration reloaded, say).
    public func clear() {
        entries.withLock { $0 = Entries() }
        exports.withLock { $0 = (nil, [:]) }
    }

    /// ``OpenPGP/GnuPG/autocryptKeydata(_:)``, kept while the keyring is
    /// unchanged and the keys as listed choose the same user ID and subkey
    /// (``OpenPGP/GnuPG/autocryptChoice(_:address:)``): a letter carries its
    /// sender's key, the same for every mail from that sender, and exporting
    /// it costs a gpg process each time.
    public func autocryptKeydata(_ wanted: [(key: Key, address: String)], gnupg: GnuPG) throws -> [[UInt8]] {
        let state = KeyringState(home: gnupg.home)
        // Filed under what the export keeps, as the caller's listing judged
        // the key: a subkey that expired since changes the export, not the keyring.
        let names = wanted.map { key, address in
            let choice = GnuPG.autocryptChoice(key, address: address)
            return [key.fingerprint, address.lowercased(), choice.subkey ?? "-", choice.userID ?? ""].joined(separator: "\n")
        }
        let kept = exports.withLock { exports -> [[UInt8]]? in
            if exports.state != state { exports = (state, [:]) }
            let found = names.compactMap { exports.data[$0] }
            return found.count == names.count ? found : nil
        }
        if let kept { return kept }
        let made = try gnupg.autocryptKeydata(wanted)
        if made.count == names.count, KeyringState(home: gnupg.home) == state {
            exports.withLock { exports in
                guard exports.state == state else { return }
                for (name, data) in zip(names, made) { exports.data[name] = data }
            }
        }
        return made
    }

    /// The first moment after `now` at which a key or subkey in `book` expires.
    static func earliestExpiry(_ book: KeyBook, _ wanted: KeyBook.Wanted, after now: Date) -> Date? {
        let keys = wanted.addresses.flatMap { book.lookup($0)?.candidates.map(\.key) ?? [] }
            + wanted.fingerprints.flatMap { book.listed($0) }
        return keys.flatMap { key in key.subkeys.compactMap(\.expires) + [key.expires].compactMap { $0 } }
            .filter { $0 > now }.min()
    }
}
