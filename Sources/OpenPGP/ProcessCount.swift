import Synchronization

/// The gpg processes GPGME started in this process, counted where they are
/// started: one per operation (a ``Context`` is used for exactly one, which
/// runs one `gpg`), one `gpg --version` for GPGME's first engine check and one
/// for each change of engine info (``EngineSelection``). The tests count the
/// same processes with a `gpg` on `PATH` that logs each call
/// (ResidentGnuPGTests, EngineSelectionTests); the resident filter's metrics
/// show this count.
enum ProcessCount {
    static let started = Atomic<Int>(0)

    static func add(_ count: Int = 1) { started.add(count, ordering: .relaxed) }
}

extension GnuPG {
    /// The gpg processes this process has started so far (operations and
    /// version probes); for metrics.
    package static var processesStarted: Int { ProcessCount.started.load(ordering: .relaxed) }
}
