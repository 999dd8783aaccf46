import Foundation
@testable import OpenPGP
import Synchronization
import Testing

/// ``Background`` runs a step on a thread that is joined (issue 23: no
/// semaphores): `wait()` returns only once the thread has ended, and a step
/// dropped without a `wait()` is joined too, so no thread runs on behind a
/// failed caller. A thread's end is seen by its thread-specific destructor,
/// which the C library runs after the step returned and before the thread
/// is gone; the destructor here takes a while (50 ms) on purpose, so that a
/// thread merely signalling "done" before its end (the former semaphore)
/// is caught. Nothing is timed: the check is whether the destructor ran.
@Suite("A background step's thread is joined")
struct BackgroundTests {
    /// Ended once the step's thread ran its thread-specific destructors.
    final class Ends: Sendable {
        let count = Atomic(0)
    }

    /// The destructor every step's thread runs at its end, with its ``Ends`` (retained) as the value.
    static let endKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { value in
            usleep(50_000)  // a thread that is not joined is still here when its waiter looks
            Unmanaged<Ends>.fromOpaque(value!).takeRetainedValue().count.add(1, ordering: .sequentiallyConsistent)
        }
        return key
    }()

    /// A step that registers `ends`, tells its thread's id on `told`, then
    /// blocks until `gate` (a pipe's read end) sees its writer close.
    static func blockingStep(ends: Ends, told: Int32, gate: Int32) -> () throws -> Int {
        {
            pthread_setspecific(endKey, Unmanaged.passRetained(ends).toOpaque())
            let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")  // "pid/task/tid"
            var tid = Int32(me.split(separator: "/").last!)!
            _ = write(told, &tid, 4)
            var byte: UInt8 = 0
            return read(gate, &byte, 1)  // 0: the test closed the gate
        }
    }

    static func pipePair() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    static func readTid(_ fd: Int32) throws -> Int32 {
        var tid: Int32 = 0
        try #require(read(fd, &tid, 4) == 4)
        return tid
    }

    static func threadExists(_ tid: Int32) -> Bool {
        FileManager.default.fileExists(atPath: "/proc/self/task/\(tid)")
    }

    @Test("wait() returns after the step's thread has ended, and again at once")
    func waitJoins() throws {
        let gate = try Self.pipePair(), told = try Self.pipePair()
        defer { close(gate.read); close(told.read); close(told.write) }
        let ends = Ends()
        let step = try Background(Self.blockingStep(ends: ends, told: told.write, gate: gate.read))
        let tid = try Self.readTid(told.read)
        let mine = Int32(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self").split(separator: "/").last!)!
        #expect(tid != mine && Self.threadExists(tid), "the step runs on a thread of its own, blocked on the gate")
        #expect(ends.count.load(ordering: .sequentiallyConsistent) == 0)
        close(gate.write)
        #expect(try step.wait().get() == 0)
        #expect(ends.count.load(ordering: .sequentiallyConsistent) == 1, "wait() returned before the thread ended")
        #expect(try step.wait().get() == 0)
        #expect(ends.count.load(ordering: .sequentiallyConsistent) == 1)
    }

    @Test("a step dropped without wait() is joined when it goes")
    func dropJoins() throws {
        let gate = try Self.pipePair(), told = try Self.pipePair()
        defer { close(gate.read); close(told.read); close(told.write) }
        let ends = Ends()
        do {
            let step = try Background(Self.blockingStep(ends: ends, told: told.write, gate: gate.read))
            _ = try Self.readTid(told.read)
            _ = withExtendedLifetime(step) { close(gate.write) }  // then dropped, never waited for
        }
        #expect(ends.count.load(ordering: .sequentiallyConsistent) == 1, "the dropped step's thread was left running")
    }

    @Test("a step's error and result come back unchanged; no step gives nil")
    func results() throws {
        struct Failed: Error, Equatable {}
        #expect(throws: Failed()) { try Background<Int> { throw Failed() }.wait().get() }
        #expect(try Background { 7 }.wait().get() == 7)
        #expect(try Background<Int>(nil).wait().get() == nil)
    }
}
