import Foundation
import TestSupport
import Testing

/// Every regular file in `folder` (and below it, with `deep`) whose bytes
/// hold `marker`; unreadable ones are not ours and are passed over.
private func filesHolding(_ marker: String, in folder: String, deep: Bool) -> [String] {
    let manager = FileManager.default
    let names: [String] = deep ? (manager.subpaths(atPath: folder) ?? []) : ((try? manager.contentsOfDirectory(atPath: folder)) ?? [])
    let needle = Data(marker.utf8)
    return names.map { folder + "/" + $0 }.filter { path in
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size < 1 << 24 else { return false }
        return manager.contents(atPath: path)?.range(of: needle) != nil
    }
}

@Suite("No message content in a named temporary file, however the filter ends", .serialized)
struct TemporaryFileCLITests {
    /// A sendmail stand-in that reads its copy, then takes `delay` seconds;
    /// it records its pid (the leader of its own group) in `pids`.
    func standIn(_ folder: String, delay: Double) throws -> String {
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let script = folder + "/sendmail"
        try """
            #!/bin/sh
            echo $$ >> '\(folder)/pids'
            cat > /dev/null
            sleep \(delay)
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o700)
        return script
    }

    func config(_ home: TemporaryGnuPGHome, sendmail: String, timeout: Int) throws -> String {
        let path = home.path + "/filter.toml"
        try """
            gnupg_home = "\(home.path)"
            log = "none"
            timeout = \(timeout)
            [reinject]
            sendmail = ["\(sendmail)"]
            timeout = 60
            [journal]
            directory = "\(home.path)/journal"
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("kill -9 at every step of a hand-over, and the watchdog during one: nothing of the mail in TMPDIR or /tmp")
    func nothingLeftBehind() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let temporary = home.path + "/tmp"
            mkdir(temporary, 0o700)
            var environment = home.environment
            environment["TMPDIR"] = temporary
            let mta = home.path + "/mta"
            defer {
                // The stand-ins outlive a killed filter (their own groups): end them.
                let pids = (try? String(contentsOfFile: mta + "/pids", encoding: .utf8)) ?? ""
                for pid in pids.split(separator: "\n").compactMap({ Int32($0) }) { kill(-pid, SIGKILL) }
            }
            // Kill -9 before the first copy, during the first, between copies, during the last.
            for (step, wait) in [0.05, 0.4, 0.9, 1.3, 1.8, 2.6].enumerated() {
                let marker = "secret-\(step)-\(UUID().uuidString)"
                let mail = Array("""
                    From: Alice <alice@example.org>
                    To: bob@example.org, nobody@example.org
                    Subject: s
                    Message-ID: <tmp.\(UUID())@example.org>

                    \(marker)

                    """.utf8)
                let config = try config(home, sendmail: try standIn(mta, delay: 0.8), timeout: 60)
                let process = try startMailsec(["filter", "--config", config, "-f", "alice@example.org", "--",
                                                "bob@example.org", "nobody@example.org", "carol@example.org"],
                                               environment: environment, input: mail)
                usleep(UInt32(wait * 1e6))
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                #expect(filesHolding(marker, in: temporary, deep: true).isEmpty, "step \(step)")
                #expect(filesHolding(marker, in: "/tmp", deep: false).isEmpty, "step \(step)")
            }
            // The watchdog (`timeout`) ends the run with _exit while sendmail still runs.
            let marker = "watchdog-\(UUID().uuidString)"
            let mail = Array("From: alice@example.org\nTo: nobody@example.org\nSubject: s\nMessage-ID: <w.\(UUID())@example.org>\n\n\(marker)\n".utf8)
            let config = try config(home, sendmail: try standIn(mta, delay: 30), timeout: 2)
            let result = try run(Paths.mailsecExecutable.path, ["filter", "--config", config, "-f", "alice@example.org", "--", "nobody@example.org"],
                                 input: mail, environment: environment)
            #expect(result.status == 75, "\(result.errors)")
            #expect(filesHolding(marker, in: temporary, deep: true).isEmpty)
            #expect(filesHolding(marker, in: "/tmp", deep: false).isEmpty)
        }
    }
}
