import Testing

/// Runs a test (or every test of a suite) in a task of high priority.
///
/// On Linux the cooperative pool keeps a set of threads for each priority.
/// Tests run at medium priority, and many of them block their thread for
/// seconds (a child process, a callgrind run); queued behind those, a test
/// whose client and server talk in real time waited minutes between two reads
/// and met the server's time-out (ListenerBasicsTests in CI). A high-priority
/// task is served by threads the blocking tests do not hold. The task is not
/// detached, so the test's task-local values (where issues are recorded) go
/// with it.
public struct Promptly: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        try await withoutActuallyEscaping(function) { function in
            let box = UncheckedBox(function)
            try await Task(priority: .high) { try await box.value() }.value
        }
    }
}

/// `function` outlives no call: the task is awaited before the scope returns.
private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

extension Trait where Self == Promptly {
    /// Runs the test in a task of high priority, so that tests blocking their
    /// threads do not starve it (see ``Promptly``).
    public static var promptly: Promptly { Promptly() }
}
