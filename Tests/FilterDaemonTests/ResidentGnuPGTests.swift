import Foundation
import TestSupport
import Testing

/// What the resident filter asks of GnuPG per mail, counted by a `gpg` (and
/// `gpgconf`, `gpgsm`) first on the daemon's `PATH` that writes each call to a
/// log and runs the real one; and whether what it keeps between mails follows
/// a keyring changed with gpg behind its back.
@Suite("mailsec filter --listen and its gpg processes", .serialized)
struct ResidentGnuPGTests {
    /// A folder with the counting stand-ins, and the log they write.
    static func countingPath(in home: TemporaryGnuPGHome) throws -> (environment: [String: String], log: String) {
        let folder = home.path + "/bin", log = home.path + "/calls.log"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in ["gpg", "gpgconf", "gpgsm"] {
            guard let real = path.split(separator: ":").map({ "\($0)/\(name)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
            else { continue }
            try "#!/bin/sh\nprintf '%s\\n' \"\(name) $*\" >> '\(log)'\nexec '\(real)' \"$@\"\n"
                .write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
            chmod(folder + "/" + name, 0o700)
        }
        FileManager.default.createFile(atPath: log, contents: nil)
        return (["PATH": folder + ":" + path], log)
    }

    static func calls(_ log: String) -> [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test("from the second mail on: exactly one gpg per letter group, a sign+encrypt; no listing, export, probe or gpgconf")
    func oneProcessPerLetterGroup() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc", "dave-newer.pub.asc"]) { home throws in
            let (environment, log) = try Self.countingPath(in: home)
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port), home: home, environment: environment)
            let connection = try daemon.connect()
            defer { connection.quit() }
            let recipients = ["bob@example.org", "nobody@example.org", "carol@example.org", "dave@example.org"]
            func mail() -> [UInt8] {
                Array(("From: Alice <alice@example.org>\nTo: Bob <bob@example.org>, nobody@example.org\nCc: Carol <carol@example.org>\n"
                       + "Bcc: Dave <dave@example.org>\nSubject: s\nMessage-ID: <\(UUID().uuidString)@example.org>\n\n"
                       + "The door code is [[private]]4711[[/private]].\n").utf8)
            }
            #expect(send(connection, mail(), to: recipients).code == 250)
            #expect(Self.calls(log).contains { $0.contains("--check-sigs") || $0.contains("--list-keys") }, "the first mail lists its keys")
            let first = peer.transactions.count
            FileManager.default.createFile(atPath: log, contents: nil)
            let mails = Int.random(in: 3...5)
            for _ in 0..<mails { #expect(send(connection, mail(), to: recipients).code == 250) }
            let letters = peer.transactions.dropFirst(first).filter { $0.data.contains("multipart/encrypted") }.count
            #expect(letters == 2 * mails, "two letter groups a mail: Bob and Carol; Dave (Bcc)")
            let calls = Self.calls(log)
            #expect(calls.count == letters, "\(calls)")
            #expect(calls.allSatisfy { $0.hasPrefix("gpg ") && $0.contains("--encrypt") && $0.contains("--sign") }, "\(calls)")
        }
    }

    @Test("the pipe filter: its first mail exports the Autocrypt keys; the next takes them from the journal's folder, the same bytes, until the keyring changes")
    func pipeFilterKeepsExports() throws {
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc", "dave-newer.pub.asc"]) { home throws in
            let (environment, log) = try Self.countingPath(in: home)
            let peer = try RecordingSMTPServer()
            let config = try filterConfig(home, reinjectPort: peer.port)
            let recipients = ["bob@example.org", "nobody@example.org", "carol@example.org", "dave@example.org"]
            /// One mail through `mailsec filter`: the gpg calls it made, and the Autocrypt fields of its letters.
            func filter() throws -> (calls: [String], autocrypt: String) {
                FileManager.default.createFile(atPath: log, contents: nil)
                let before = peer.transactions.count
                let mail = "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>, nobody@example.org\nCc: Carol <carol@example.org>\n"
                    + "Bcc: Dave <dave@example.org>\nSubject: s\nMessage-ID: <\(UUID().uuidString)@example.org>\n\nhello\n"
                let result = try run(Paths.mailsecExecutable.path, ["filter", "--config", config, "-f", "alice@example.org", "--"] + recipients,
                                     input: Array(mail.utf8), environment: home.environment.merging(environment) { $1 })
                try #require(result.status == 0, "\(String(decoding: result.stderr, as: UTF8.self))")
                // The letters' Autocrypt fields (outside the ciphertext), unfolded.
                let letters = peer.transactions.dropFirst(before).filter { $0.data.contains("multipart/encrypted") }
                let fields = letters.map { letter in
                    let head = letter.data.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n\n")[0]
                    return head.replacingOccurrences(of: "\n ", with: " ").components(separatedBy: "\n").filter { $0.hasPrefix("Autocrypt:") }
                }.flatMap { $0 }.sorted()
                #expect(fields.count == 2, "one in each letter")
                return (Self.calls(log), fields.joined(separator: "\n"))
            }
            let exports = { (calls: [String]) in calls.filter { $0.contains("--export") }.count }
            let first = try filter()
            #expect(exports(first.calls) == 1, "\(first.calls)")
            let second = try filter()
            #expect(exports(second.calls) == 0, "\(second.calls)")
            #expect(second.autocrypt == first.autocrypt)
            #expect(second.calls.count == 4, "a version probe, a listing, two sign+encrypts: \(second.calls)")
            // The sender's key gains a user ID: the keyring changed, what was kept counts for nothing.
            let added = try home.gpg(["--passphrase", "", "--pinentry-mode", "loopback", "--quick-add-uid", "alice@example.org",
                                      "Alice Second <alice@example.org>"])
            try #require(added.status == 0, "\(added.errors)")
            let third = try filter()
            #expect(exports(third.calls) == 1, "\(third.calls)")
            // What the journal's folder holds, garbled, is not taken.
            let kept = home.path + "/state/journal/autocrypt-exports"
            var bytes = try #require(FileManager.default.contents(atPath: kept))
            bytes[bytes.count / 2] ^= 0x20
            try bytes.write(to: URL(fileURLWithPath: kept))
            let fourth = try filter()
            #expect(fourth.autocrypt == third.autocrypt)
            #expect(exports(fourth.calls) == 1, "\(fourth.calls)")
        }
    }

    @Test("keys imported, revoked and deleted with gpg behind the daemon's back, in random order: each change counts from the next mail")
    func keyringChangedBehindItsBack() throws {
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let peer = try RecordingSMTPServer()
            let daemon = try ResidentProcess(config: try filterConfig(home, reinjectPort: peer.port), home: home)
            let connection = try daemon.connect()
            defer { connection.quit() }
            let seed = UInt64.random(in: 0...UInt64.max)
            var random = SeededRandom(seed: seed)
            // Carol's secret key too, so that her key can be revoked.
            let files = ["bob@example.org": "bob.pub.asc", "carol@example.org": "carol.sec.asc", "dave@example.org": "dave-newer.pub.asc"]
            var present: Set<String> = [], revoked: Set<String> = [], lettered: Set<String> = []
            func fingerprint(_ address: String) throws -> String {
                try #require(home.gpg(["--with-colons", "--list-keys", address]).output.split(separator: "\n")
                    .first { $0.hasPrefix("fpr:") }?.split(separator: ":").last.map(String.init))
            }
            var done: [String] = []
            for step in 0..<8 {
                var changes: [(String, () throws -> Void)] = []
                for (address, file) in files.sorted(by: { $0.key < $1.key }) {
                    if !present.contains(address) {
                        changes.append(("import \(address)", { try home.importFixtures([file]); present.insert(address) }))
                    } else {
                        changes.append(("delete \(address)", {
                            let result = try home.gpg(["--delete-secret-and-public-key", try fingerprint(address)])
                            try #require(result.status == 0, "\(result.errors)")
                            present.remove(address); revoked.remove(address)
                        }))
                    }
                }
                if present.contains("carol@example.org") && !revoked.contains("carol@example.org") {
                    changes.append(("revoke carol@example.org", { try home.revokeKey(of: "carol@example.org"); revoked.insert("carol@example.org") }))
                }
                let (name, change) = changes.randomElement(using: &random)!
                try change()
                done.append(name)
                for address in files.keys.sorted() {
                    let before = peer.transactions.count
                    let reply = send(connection, Array("From: Alice <alice@example.org>\nTo: \(address)\nSubject: \(step)\n\nhello\n".utf8), to: [address])
                    let what = "seed \(seed), after \(done): mail to \(address)"
                    if present.contains(address) && !revoked.contains(address) {
                        #expect(reply.code == 250, "\(what): \(reply.text)")
                        #expect(peer.transactions.dropFirst(before).first?.data.contains("multipart/encrypted") == true, "\(what): a letter")
                        lettered.insert(address)
                    } else if lettered.contains(address) {
                        #expect(reply.code == 451, "\(what): held for the key lost, \(reply.text)")
                        #expect(peer.transactions.count == before)
                    } else {
                        #expect(reply.code == 250, "\(what): \(reply.text)")
                        #expect(peer.transactions.dropFirst(before).first?.data.contains("multipart/encrypted") == false, "\(what): a postcard")
                    }
                }
            }
        }
    }
}
