import Foundation
import TestSupport
import Testing

@Suite("mailsec filter on the command line", .serialized)
struct FilterCLITests {
    let message = Array("From: alice@example.org\nTo: nobody@example.org\nSubject: s\n\nhello\n".utf8)

    @Test("an unreadable or mis-edited configuration, or wrong arguments, defer (75) with one line")
    func deferNeverBounce() throws {
        try withGnuPGHome { home throws in
            let broken = home.path + "/broken.toml"
            try "mode = \"strikt\"\n".write(toFile: broken, atomically: true, encoding: .utf8)
            for arguments in [["filter", "--config", "/nonexistent/filter.toml", "-f", "a@example.org", "--", "b@example.org"],
                              ["filter", "--config", broken, "-f", "a@example.org", "--", "b@example.org"],
                              ["filter", "--config", broken, "--", "b@example.org"],
                              ["filter", "--bogus"],
                              ["filter", "-f", "a@example.org", "--", "b@example.org"]] {  // no /etc/mailsec/filter.toml here
                let result = try mailsec(arguments, input: message, home: home)
                #expect(result.status == 75, "\(arguments): \(result.errors)")
                expectOneLine(result)
                #expect(result.errors.contains("deferred"))
            }
        }
    }

    @Test("the whole run has a time limit: past it, 75")
    func watchdog() throws {
        let silent = try SilentServer()
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let config = home.path + "/filter.toml"
            try """
                gnupg_home = "\(home.path)"
                timeout = 2
                log = "none"
                [reinject]
                method = "smtp"
                port = \(silent.port)
                timeout = 60
                [journal]
                directory = "\(home.path)/journal"
                """.write(toFile: config, atomically: true, encoding: .utf8)
            let started = Date()
            let result = try mailsec(["filter", "--config", config, "-f", "alice@example.org", "--", "nobody@example.org"],
                                     input: message, home: home)
            #expect(result.status == 75)
            expectOneLine(result)
            #expect(result.errors.contains("no result within 2 s"))
            #expect(Date().timeIntervalSince(started) < 20)
        }
    }
}
