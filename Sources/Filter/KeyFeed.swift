import Settings
import Synchronization

/// One row of the keys an administrator published in the shared store
/// (`mailsec keys publish`): a key's armored public key, or its removal.
package struct PublishedKey: Sendable, Equatable {
    /// The row's revision: every publication takes the next one.
    package let revision: Int64
    /// The key's full fingerprint, upper case.
    package let fingerprint: String
    /// The armored public key; nil: the key was removed centrally.
    package let armor: String?

    /// A row.
    package init(revision: Int64, fingerprint: String, armor: String?) {
        self.revision = revision
        self.fingerprint = fingerprint
        self.armor = armor
    }
}

/// The feed's failure in one line (never a password or key material).
package struct KeyFeedError: Error, Sendable, CustomStringConvertible {
    /// One line.
    package let description: String
    /// A failure with `description`.
    package init(description: String) { self.description = description }
}

/// The published keys as a resident filter follows them: the rows after the
/// revision it applied last, and a wake-up when a new one is published.
/// Implemented on PostgreSQL in the target SharedStore (which only the
/// program links), handed in through ``KeyFeedHandle``.
package protocol KeyFeed: Sendable {
    /// The rows after `revision`, oldest first, at most `limit` of them.
    func changes(after revision: Int64, limit: Int) throws(KeyFeedError) -> [PublishedKey]
    /// Calls `notified` whenever a publication is announced (PostgreSQL's
    /// NOTIFY), and once whenever the listening connection is made (again):
    /// anything announced while it was down is looked for then. Listens
    /// until `stop` is called on what it returns.
    func follow(_ notified: @escaping @Sendable () -> Void) -> KeyFeedListening
}

/// A ``KeyFeed/follow(_:)`` in progress.
package struct KeyFeedListening: Sendable {
    /// Ends the listening.
    package let stop: @Sendable () -> Void
    /// A listening that `stop` ends.
    package init(stop: @escaping @Sendable () -> Void) { self.stop = stop }
}

/// How the resident filter opens the feed of a `[store]`: set once by the
/// program at start (``SharedContinuityHandle`` does the same for key continuity).
package enum KeyFeedHandle {
    /// What opens the feed of a shared store; nil: this program cannot.
    package static let open = Mutex<(@Sendable (StoreSettings) throws(KeyFeedError) -> any KeyFeed)?>(nil)
}
