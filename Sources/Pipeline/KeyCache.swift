import Foundation
import MIME
import Platform
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
package final class KeyCache: Sendable {
    /// How long entries are kept at most, whatever else happens.
    package static let maximumAge: TimeInterval = 600

    private struct Entries {
        var state: KeyringState?
        var requirements: KeyRequirements?
        var book = KeyBook()
        var validUntil = Date.distantFuture
    }

    private let entries = Mutex(Entries())
    private let exports = Mutex<(state: KeyringState?, data: [String: [UInt8]])>((nil, [:]))
    private let counters = Mutex((hits: 0, listings: 0))
    private let kept: KeptExports?
    private let keptRead = Mutex(false)

    /// An empty cache: the first mail lists its keys. With `kept`, the
    /// Autocrypt exports are also kept outside the process, for the next one.
    package init(keeping kept: KeptExports? = nil) {
        self.kept = kept
    }

    /// How many calls were answered from the cache, and how many listed keys
    /// (for tests and the bench).
    package var statistics: (hits: Int, listings: Int) { counters.withLock { $0 } }

    /// The keys `pipeline` needs for `wanted`: from the cache when it holds
    /// them all for the keyring as it is now, otherwise listed (one listing
    /// for what is missing) and kept when the keyring did not change while
    /// it was listed.
    package func book(for wanted: KeyBook.Wanted, pipeline: MailPipeline) throws -> KeyBook {
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
    package func clear() {
        entries.withLock { $0 = Entries() }
        exports.withLock { $0 = (nil, [:]) }
    }

    /// ``OpenPGP/GnuPG/autocryptKeydata(_:)``, kept while the keyring is
    /// unchanged and the keys as listed choose the same user ID and subkey
    /// (``OpenPGP/GnuPG/autocryptChoice(_:address:)``): a letter carries its
    /// sender's key, the same for every mail from that sender, and exporting
    /// it costs a gpg process each time.
    package func autocryptKeydata(_ wanted: [(key: Key, address: String)], gnupg: GnuPG) throws -> [[UInt8]] {
        let state = KeyringState(home: gnupg.home)
        // Filed under what the export keeps, as the caller's listing judged
        // the key: a subkey that expired since changes the export, not the keyring.
        let names = wanted.map { key, address in
            let choice = GnuPG.autocryptChoice(key, address: address)
            return [key.fingerprint, address.lowercased(), choice.subkey ?? "-", choice.userID ?? ""].joined(separator: "\n")
        }
        readKept(state)
        let found = exports.withLock { exports -> [[UInt8]]? in
            if exports.state != state { exports = (state, [:]) }
            let found = names.compactMap { exports.data[$0] }
            return found.count == names.count ? found : nil
        }
        if let found { return found }
        let made = try gnupg.autocryptKeydata(wanted)
        if made.count == names.count, KeyringState(home: gnupg.home) == state {
            let all = exports.withLock { exports -> [String: [UInt8]]? in
                guard exports.state == state else { return nil }
                for (name, data) in zip(names, made) { exports.data[name] = data }
                return exports.data
            }
            if let kept, let all { kept.write(KeptExports.encode(all, state: state)) }
        }
        return made
    }

    /// Takes the exports kept outside the process, once, when they were made
    /// for the keyring as it is now (`state`); anything else in their place
    /// (another state, a file cut short or garbled) is ignored.
    private func readKept(_ state: KeyringState) {
        guard let kept, keptRead.withLock({ read in defer { read = true }; return !read }),
              let bytes = kept.read(), let data = KeptExports.decode(bytes, state: state) else { return }
        exports.withLock { exports in
            if exports.state == nil || exports.state == state { exports = (state, data.merging(exports.data) { $1 }) }
        }
    }

    /// The first moment after `now` at which a key or subkey in `book` expires.
    static func earliestExpiry(_ book: KeyBook, _ wanted: KeyBook.Wanted, after now: Date) -> Date? {
        let keys = wanted.addresses.flatMap { book.lookup($0)?.candidates.map(\.key) ?? [] }
            + wanted.fingerprints.flatMap { book.listed($0) }
        return keys.flatMap { key in key.subkeys.compactMap(\.expires) + [key.expires].compactMap { $0 } }
            .filter { $0 > now }.min()
    }
}

/// Where a program that handles one mail per process (the pipe filter)
/// keeps the Autocrypt exports of a ``KeyCache`` for the next process: a
/// letter carries its sender's key, the same in every mail, and exporting it
/// costs a gpg process each time. Only public key data is kept, filed under
/// the keyring's state (``OpenPGP/KeyringState``): a keyring changed in any
/// way makes what was kept count for nothing.
package struct KeptExports: Sendable {
    /// The kept bytes, or nil when there are none.
    package let read: @Sendable () -> [UInt8]?
    /// Replaces the kept bytes whole (a failure only loses the saving).
    package let write: @Sendable ([UInt8]) -> Void

    /// Exports kept by `read` and `write`.
    package init(read: @escaping @Sendable () -> [UInt8]?, write: @escaping @Sendable ([UInt8]) -> Void) {
        self.read = read
        self.write = write
    }

    static let header = "mailsec-exports 1"

    /// The header line, the state's line, one line per export (its name and
    /// its bytes, each in base64), then the SHA-256 of all that.
    static func encode(_ data: [String: [UInt8]], state: KeyringState) -> [UInt8] {
        var text = header + "\n" + state.summary + "\n"
        for (name, bytes) in data.sorted(by: { $0.key < $1.key }) {
            text += Data(name.utf8).base64EncodedString() + " " + Data(bytes).base64EncodedString() + "\n"
        }
        // A checksum last: a line garbled into other valid base64 must not pass for a key.
        return Array(text.utf8) + Array((Digest.sha256Hex(Array(text.utf8)) + "\n").utf8)
    }

    /// The exports in `bytes` when they were kept for `state`; nil otherwise, or when any line does not read.
    static func decode(_ bytes: [UInt8], state: KeyringState) -> [String: [UInt8]]? {
        guard bytes.count > 65, bytes.last == 10,
              Digest.sha256Hex(Array(bytes[..<(bytes.count - 65)])) == String(decoding: bytes[(bytes.count - 65)..<(bytes.count - 1)], as: UTF8.self)
        else { return nil }
        let lines = bytes[..<(bytes.count - 65)].split(separator: 10, omittingEmptySubsequences: false)
        guard lines.count >= 3, lines.last?.isEmpty == true, String(decoding: lines[0], as: UTF8.self) == header,
              String(decoding: lines[1], as: UTF8.self) == state.summary else { return nil }
        var data: [String: [UInt8]] = [:]
        for line in lines[2..<(lines.count - 1)] {
            let parts = line.split(separator: 32, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = Data(base64Encoded: Data(parts[0])), let bytes = Data(base64Encoded: Data(parts[1])),
                  !bytes.isEmpty else { return nil }
            data[String(decoding: name, as: UTF8.self)] = Array(bytes)
        }
        return data
    }
}
