import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline
import Synchronization
import TestSupport
import Testing

let alice = MailAddress(name: "Alice", address: "alice@example.org")
/// The sender's home: her secret key, public keys of Bob and Carol, and two
/// keys that cannot be used (expired, revoked).
let senderFixtures = ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc", "expired.pub.asc", "revoked.pub.asc"]

/// A GnuPG home whose gpg runs through a wrapper that logs every call, so a
/// test can count the key listings a session ran.
struct CountedGnuPG {
    let home: TemporaryGnuPGHome
    let gnupg: GnuPG
    let log: String

    init(_ home: TemporaryGnuPGHome) throws {
        self.home = home
        log = home.path + "/calls.log"
        let wrapper = home.path + "/gpg-wrapper"
        let gpgPath = try run("sh", ["-c", "command -v gpg"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        try "#!/bin/sh\necho \"$*\" >> '\(log)'\nexec '\(gpgPath)' \"$@\"\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
        chmod(wrapper, 0o700)
        gnupg = GnuPG(home: home.path, executable: wrapper)
    }

    /// The argument lists of every gpg process so far.
    var calls: [Substring] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n") }

    /// gpg processes that listed keys so far.
    var listings: Int { calls.filter { $0.contains("--list-keys") || $0.contains("--check-sigs") || $0.contains("--list-secret-keys") }.count }

    /// `gpg --version` runs (GPGME asks the engine's version once).
    var versionProbes: Int { calls.filter { $0.contains("--version") }.count }

    /// Every gpg process so far.
    var processes: Int { calls.count }
}

/// Runs `body` with a fresh home holding `fixtures`; the agent is stopped afterwards.
func withHome<R>(_ fixtures: [String] = senderFixtures, _ body: (TemporaryGnuPGHome) async throws -> R) async throws -> R {
    let home = try TemporaryGnuPGHome()
    defer { home.close() }
    try home.importFixtures(fixtures)
    return try await body(home)
}

/// The outbox of these tests: it keeps what it was given. It may hold each
/// queue call until `release()` (to catch a session while it sends), or fail.
final class HeldOutbox: ComposeOutbox, @unchecked Sendable {
    // @unchecked: all state is behind the Mutex; the semaphores are thread-safe.
    private let state = Mutex<(queued: [OutgoingMail], failures: Int)>(([], 0))
    private let hold: Bool
    private let entered = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)

    init(hold: Bool = false, failures: Int = 0) {
        self.hold = hold
        state.withLock { $0.failures = failures }
    }

    func queue(_ mail: OutgoingMail, draft: ComposeDraft) throws -> [String] {
        if hold {
            entered.signal()
            gate.wait()
        }
        return try state.withLock { state in
            if state.failures > 0 {
                state.failures -= 1
                throw OutboxDown()
            }
            state.queued.append(mail)
            return mail.copies.indices.map { "q\(state.queued.count)-\($0)" }
        }
    }

    var queued: [OutgoingMail] { state.withLock { $0.queued } }

    /// Waits (off the caller's thread) until a queue call is held.
    func waitUntilHeld() async { await withCheckedContinuation { c in DispatchQueue.global().async { self.entered.wait(); c.resume() } } }

    func release() { gate.signal() }
}

struct OutboxDown: Error {}

/// Drafts kept in memory (the encrypted store is tested where it lives).
final class MemoryDrafts: DraftStore, @unchecked Sendable {
    // @unchecked: all state is behind the Mutex.
    private let state = Mutex<(drafts: [String: ComposeDraft], next: Int)>(([:], 1))

    func save(_ draft: ComposeDraft, replacing id: String?) throws -> String {
        state.withLock { state in
            let key = id ?? { defer { state.next += 1 }; return "d\(state.next)" }()
            state.drafts[key] = draft
            return key
        }
    }

    func delete(_ id: String) throws { _ = state.withLock { $0.drafts.removeValue(forKey: id) } }

    var all: [String: ComposeDraft] { state.withLock { $0.drafts } }
}

/// gpg decrypts `letter` in a home holding `secret` (and Alice's public key) and prints the plaintext.
func gpgOpen(_ letter: [UInt8], as secret: String) throws -> String {
    let message = try MIMEMessage.parse(letter)
    let ciphertext = try #require(message.body.flatMap { PGPMIME.ciphertext(of: $0) })
    return try withGnuPGHome(importing: [secret, "alice.pub.asc"]) { home throws in
        let result = try home.gpg(["--decrypt"], input: ciphertext)
        #expect(result.status == 0, "\(result.errors)")
        return result.output
    }
}

/// Every text a reader of `bytes` could see, decoded (headers, parts, names, embedded mail).
func visibleText(_ bytes: [UInt8]) throws -> String {
    var seen = [String(decoding: bytes, as: UTF8.self)]
    let message = try MIMEMessage.parse(bytes)
    seen += message.headers.flatMap { [$0.value, $0.rawValue] }
    for (_, part) in message.body?.walk() ?? [] {
        seen += part.headers.flatMap { [$0.value, $0.rawValue] }
        if let text = part.text { seen.append(text) }
        if let content = part.content { seen.append(String(decoding: content, as: UTF8.self)) }
        if let embedded = part.embeddedMessage { seen += embedded.headers.map(\.value) }
    }
    return seen.joined(separator: "\n")
}

func person(_ address: String) -> MailAddress { MailAddress(address: address) }
