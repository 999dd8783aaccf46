import Pipeline
import Settings
import Synchronization

/// Key continuity in the shared store `[store]` names, as the filter sees
/// it: the store itself lives in the target SharedStore, which only the
/// program links (postgres-nio with it); it hands its opener to
/// ``open`` at start. Every call goes to the store the opener returns (one
/// per database in a process); a store that cannot be opened, or no
/// opener, fails the call with a ``KeyContinuityError``: the mail waits (75),
/// never goes without its record, and never falls back to the folder.
package struct SharedContinuityHandle: KeyContinuityStore {
    /// The database.
    package let settings: StoreSettings

    /// What opens key continuity in a shared store; set once by the program.
    package static let open = Mutex<(@Sendable (StoreSettings) throws(KeyContinuityError) -> any KeyContinuityStore)?>(nil)

    private func store() throws(KeyContinuityError) -> any KeyContinuityStore {
        guard let open = Self.open.withLock({ $0 }) else {
            throw KeyContinuityError(description: "key continuity: [store] is set, but this program cannot open a shared store")
        }
        return try open(settings)
    }

    /// The remembered fingerprints of `addresses`.
    package func remembered(_ addresses: [String]) throws(KeyContinuityError) -> [String: String] {
        try store().remembered(addresses)
    }

    /// Remembers that `address` got a letter to `fingerprint`.
    package func record(_ address: String, fingerprint: String) throws(KeyContinuityError) {
        try store().record(address, fingerprint: fingerprint)
    }

    /// Forgets `address` on purpose.
    package func forget(_ address: String) throws(KeyContinuityError) -> Bool {
        try store().forget(address)
    }
}
