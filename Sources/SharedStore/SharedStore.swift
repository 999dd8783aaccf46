import Filter
import Pipeline
import ReadingServer
import Settings
import Synchronization

/// The shared store a configuration's `[store]` names, one client per
/// database in a process: the resident filter's reloads and every mail use
/// the same connection and the same views (``SharedContinuity``).
package enum SharedStore {
    private static let opened = Mutex([String: SharedDatabase]())

    /// The client of `settings`' database, made on first use.
    package static func database(_ settings: StoreSettings) throws(SharedStoreFailure) -> SharedDatabase {
        let key = "\(settings.displayURL) \(settings.tls) \(settings.caFile ?? "") \(settings.timeout) \(settings.connectTimeout)"
        if let database = opened.withLock({ $0[key] }), database.settings == settings { return database }
        let database = try SharedDatabase(settings)
        return opened.withLock { opened in
            if let existing = opened[key], existing.settings == settings { return existing }
            opened[key] = database
            return database
        }
    }

    /// Lets the filter's configuration open key continuity in a shared store
    /// (``SharedContinuityHandle``); called once by the program at start.
    package static func install() {
        installKeyFeed()
        SharedContinuityHandle.open.withLock {
            $0 = { (settings: StoreSettings) throws(KeyContinuityError) -> any KeyContinuityStore in
                do { return try continuity(settings) } catch { throw KeyContinuityError(description: "key continuity: \(error)") }
            }
        }
    }

    /// Lets the resident filter follow the keys published in a shared store (``KeyFeedHandle``).
    package static func installKeyFeed() {
        KeyFeedHandle.open.withLock {
            $0 = { (settings: StoreSettings) throws(KeyFeedError) -> any KeyFeed in
                do throws(SharedStoreFailure) { return try keys(settings) } catch { throw KeyFeedError(description: error.description) }
            }
        }
    }

    /// The published keys in `settings`' database.
    package static func keys(_ settings: StoreSettings) throws(SharedStoreFailure) -> SharedKeys {
        SharedKeys(try database(settings))
    }

    /// Key continuity in `settings`' database.
    package static func continuity(_ settings: StoreSettings) throws(SharedStoreFailure) -> any KeyContinuityStore {
        let database = try database(settings)
        return continuities.withLock { continuities in
            if let existing = continuities[ObjectIdentifier(database)] { return existing }
            let continuity = SharedContinuity(database)
            continuities[ObjectIdentifier(database)] = continuity
            return continuity
        }
    }
    private static let continuities = Mutex([ObjectIdentifier: SharedContinuity]())

    /// The reading server's documents in `settings`' database.
    package static func documents(_ settings: StoreSettings) throws(SharedStoreFailure) -> any DocumentStore {
        SharedDocuments(try database(settings))
    }
}
