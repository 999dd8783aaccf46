import Foundation
import Pipeline
import Settings

extension FilterConfig {
    /// Key continuity's folder: the configured one, or beside the journal
    /// (used when there is no `[store]`).
    package var continuity: KeyContinuity {
        KeyContinuity(directory: continuityDirectory
                      ?? (journalDirectory as NSString).deletingLastPathComponent + "/continuity")
    }

    /// Where key continuity is kept: the shared store when `[store]` names
    /// one, else the folder (``continuity``).
    package var continuityStore: any KeyContinuityStore {
        if let store { return SharedContinuityHandle(settings: store) }
        return continuity
    }
}
