internal import CGPGME
import Foundation
@testable import OpenPGP
import TestSupport
import Testing

/// Issue 23, item 6 asks for the GnuPG home per context
/// (`gpgme_ctx_set_engine_info`) unless a measurement shows the process-wide
/// switch is needed. Counted here, with a `gpg` that logs each call and runs
/// the real one: GPGME runs `gpg --version` every time engine info is set, so
/// engine info per context costs one process more per operation, while the
/// process-wide selection (``EngineSelection``) pays once per change of home.
/// The house keeps the process-wide switch, under its lock, for that reason.
@Suite("GnuPG's home: one gpg --version per change, not per context", .serialized)
struct EngineSelectionTests {
    @Test("n look-ups through GnuPG cost one version probe; n contexts with engine info of their own cost n")
    func probesCounted() throws {
        try withGnuPGHome(importing: ["bob.pub.asc"]) { home throws in
            let log = home.path + "/calls.log", wrapper = home.path + "/gpg-counting"
            let real = try #require(["/usr/bin/gpg", "/bin/gpg"].first { FileManager.default.isExecutableFile(atPath: $0) })
            try "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '\(log)'\nexec '\(real)' \"$@\"\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
            chmod(wrapper, 0o700)
            func probes() -> Int {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("--version") }.count
            }
            let operations = Int.random(in: 3...6)
            // The house: contexts from the process-wide selection. Other tests in this process select
            // their own homes meanwhile, each change back to this one costing a probe: the probes must be
            // exactly the changes to this home, not one per operation.
            let gnupg = GnuPG(home: home.path, executable: wrapper)
            let choice = EngineSelection.Choice(executable: wrapper, home: home.path)
            for _ in 0..<operations {
                let found = try gnupg.lookup(["bob@example.org"])
                #expect(found.first?.candidates.isEmpty == false)
            }
            let house = probes(), selected = EngineSelection.selections.withLock { $0[choice, default: 0] }
            #expect(house == selected && selected >= 1,
                    "the process-wide selection probes once per change of home, not per operation: \(house) probes, \(selected) changes")
            // The alternative, as scripts/bench runs it (MAILSEC_GPGME_ENGINE_PER_CONTEXT=1): engine
            // info set on each context, which must then list this home's keys.
            let before = probes()
            for _ in 0..<operations {
                let ctx = try EngineSelection.newContextWithItsOwnEngine(home: home.path, executable: wrapper)
                defer { gpgme_release(ctx) }
                // A listing on this context (gpgme_get_key would make a context of its own, with a probe more).
                #expect(gpgme_op_keylist_start(ctx, "<bob@example.org>", 0) == 0)
                var key: gpgme_key_t?
                #expect(gpgme_op_keylist_next(ctx, &key) == 0 && key != nil, "the context's own home is the one listed")
                gpgme_key_unref(key)
                _ = gpgme_op_keylist_end(ctx)
            }
            let perContext = probes() - before
            #expect(perContext == operations, "engine info per context: one gpg --version each (\(perContext) for \(operations))")
            print("gpg --version probes: process-wide selection \(house) for \(operations) look-ups; per context \(perContext)")
        }
    }
}
