import Foundation
@testable import Filter
import MIME
import Pipeline
import Settings
import TestSupport
import Testing

/// A stand-in for sendmail (a program, not GnuPG or Postfix): it takes a copy
/// only when it finishes, as Postfix's sendmail does, into `outbox/`. Files in
/// its folder make it slow (`delay`, seconds) or fork a grandchild that
/// outlives it (`grandchild`, whose pid lands in `grandchild.pid`).
final class SendmailStandIn {
    let folder: String
    var script: String { folder + "/sendmail" }

    init() throws {
        folder = try makePrivateDirectory(prefix: "ms-sendmail")
        try FileManager.default.createDirectory(atPath: folder + "/outbox", withIntermediateDirectories: false)
        try """
            #!/bin/sh
            dir='\(folder)'
            tmp=$(mktemp "$dir/incoming.XXXXXX")
            cat > "$tmp"
            if [ -f "$dir/grandchild" ]; then (sleep 300; echo late >> "$dir/late") & echo $! > "$dir/grandchild.pid"; fi
            if [ -f "$dir/delay" ]; then sleep "$(cat "$dir/delay")"; fi
            printf '%s\\n' "$*" > "$tmp.args"
            mv "$tmp.args" "$dir/outbox/$(basename "$tmp").args"
            mv "$tmp" "$dir/outbox/$(basename "$tmp").eml"
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o700)
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    func set(_ name: String, _ value: String?) {
        if let value { FileManager.default.createFile(atPath: folder + "/" + name, contents: Data(value.utf8)) }
        else { unlink(folder + "/" + name) }
    }

    /// Every copy taken: its recipients (after `--`) and its bytes.
    var copies: [(recipients: [String], bytes: String)] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/outbox")) ?? []).filter { $0.hasSuffix(".args") }
        return names.map { name in
            let args = (try? String(contentsOfFile: folder + "/outbox/" + name, encoding: .utf8)) ?? ""
            let recipients = args.trimmingCharacters(in: .newlines).components(separatedBy: " -- ").last?
                .split(separator: " ").map(String.init) ?? []
            let body = (try? String(contentsOfFile: folder + "/outbox/" + name.dropLast(5) + ".eml", encoding: .utf8)) ?? ""
            return (recipients, body)
        }
    }

    /// How many copies each recipient got.
    var perRecipient: [String: Int] {
        copies.flatMap(\.recipients).reduce(into: [:]) { $0[$1, default: 0] += 1 }
    }
}

/// A small tmpfs of its own (root mounts it), to fill up on purpose.
final class SmallFileSystem {
    let path: String

    init(kibibytes: Int, inodes: Int) throws {
        path = try makePrivateDirectory(prefix: "ms-fs")
        let result = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kibibytes)k,nr_inodes=\(inodes),mode=0700", "tmpfs", path])
        guard result.status == 0 else { throw JournalError(description: "mount failed: \(result.errors)") }
    }

    deinit {
        _ = try? run("/bin/umount", [path])
        rmdir(path)
    }

    /// Fills every data block (one big file).
    func fillBlocks() {
        let fd = open(path + "/filler", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        let block = [UInt8](repeating: 0x55, count: 4096)
        // Until the disk says ENOSPC: a write cut short by a signal (other tests' children) is not "full".
        while true {
            let written = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written > 0 || (written < 0 && errno == EINTR) { continue }
            break
        }
        close(fd)
    }

    /// Uses up every inode (empty files).
    func fillInodes() {
        var number = 0
        while true {
            let fd = open(path + "/inode.\(number)", O_WRONLY | O_CREAT | O_EXCL, 0o600)
            if fd < 0 && errno == EINTR { continue }  // cut short by a signal, not full
            guard fd >= 0 else { break }
            close(fd)
            number += 1
        }
    }

    /// Frees what `fillBlocks` and `fillInodes` took.
    func free() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        where name == "filler" || name.hasPrefix("inode.") {
            unlink(path + "/" + name)
        }
    }
}

@Suite("Faults around the filter: full disks, hung and signalled children, hostile envelopes", .serialized)
struct FilterFaultTests {
    func config(_ home: TemporaryGnuPGHome, _ sendmail: SendmailStandIn, journal: String? = nil,
                _ extra: (inout FilterConfig) -> Void = { _ in }) -> FilterConfig {
        var config = FilterConfig()
        config.gnupgHome = home.path
        config.journalDirectory = journal ?? home.path + "/journal"
        config.reinjection = .sendmail([sendmail.script])
        config.reinjectionTimeout = 20
        config.log = .none
        extra(&config)
        return config
    }

    func mail(_ id: String = UUID().uuidString) -> [UInt8] {
        Array("From: Alice <alice@example.org>\nTo: bob@example.org, nobody@example.org\nCc: carol@example.org\nSubject: s\nMessage-ID: <\(id)@example.org>\n\nhello\n".utf8)
    }

    let recipients = ["bob@example.org", "nobody@example.org", "carol@example.org"]
    let keys = ["alice.sec.asc", "bob.pub.asc", "carol.pub.asc"]

    @Test("a full journal disk, or one without inodes, defers before any copy leaves; freed, the mail goes out exactly once",
          arguments: ["blocks", "inodes"])
    func fullJournalDisk(what: String) throws {
        try withGnuPGHome(importing: keys) { home throws in
            let sendmail = try SendmailStandIn()
            let disk = try SmallFileSystem(kibibytes: 64, inodes: 64)
            let journal = disk.path + "/journal"
            // The folder and the loop secret exist from an earlier mail; then the disk fills up.
            let filter = MailFilter(config: config(home, sendmail, journal: journal))
            #expect(filter.run(mail(), sender: "alice@example.org", recipients: ["nobody@example.org"]).status == 0)
            let before = sendmail.copies.count
            what == "blocks" ? disk.fillBlocks() : disk.fillInodes()
            let bytes = mail()
            for _ in 0..<2 {
                let result = filter.run(bytes, sender: "alice@example.org", recipients: recipients)
                #expect(result.status == 75, "\(result.errorLine ?? "")")
                let line = result.errorLine ?? ""
                // Usually the journal's intent cannot be written and nothing leaves. When an
                // inode comes free meanwhile, the intent is written, a letter leaves, and the
                // key continuity record after it cannot be made: deferred with what went out
                // in the journal (the end of this test checks each copy arrives exactly once).
                #expect(line.contains("journal") || line.contains("continuity"), "\(line)")
                if line.contains("journal") {
                    #expect(sendmail.copies.count == before, "nothing left before the journal held the intent")
                }
            }
            disk.free()
            let result = filter.run(bytes, sender: "alice@example.org", recipients: recipients)
            #expect(result.status == 0, "\(result.errorLine ?? "")")
            // Bob and Carol share a letter, nobody gets the postcard: one copy each, no more.
            #expect(sendmail.copies.count == before + 2)
            let earlier = ["nobody@example.org": 1]
            #expect(recipients.allSatisfy { sendmail.perRecipient[$0] == 1 + (earlier[$0] ?? 0) }, "\(sendmail.perRecipient)")
        }
    }

    @Test("once the intent is written, marking copies sent needs no new space: a disk that fills up half way loses no mark")
    func marksOnFullDisk() throws {
        let disk = try SmallFileSystem(kibibytes: 64, inodes: 64)
        let journal = try Journal(directory: disk.path + "/j", expiry: 3600)
        var generator = SystemRandomNumberGenerator()
        let people = (0..<Int.random(in: 3...40, using: &generator)).map { "r\($0)@example.org" }
        let record = try journal.begin(mail: "m", recipients: people)
        disk.fillBlocks()
        disk.fillInodes()
        for person in people.shuffled(using: &generator) { try record.markSent([person]) }
        let reread = try Journal(directory: disk.path + "/j", expiry: 3600).begin(mail: "m", recipients: people)
        #expect(people.allSatisfy { reread.wasSent($0) })
    }

    @Test("a sendmail that hangs is killed with its whole process group, grandchild included: 75, nothing taken")
    func hungSendmail() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let sendmail = try SendmailStandIn()
            sendmail.set("delay", "60")
            sendmail.set("grandchild", "")
            let filter = MailFilter(config: config(home, sendmail) { $0.reinjectionTimeout = 1 })
            let started = Date()
            let result = filter.run(mail(), sender: "alice@example.org", recipients: ["nobody@example.org"])
            #expect(result.status == 75)
            #expect(result.errorLine?.contains("did not finish within 1 s") == true, "\(result.errorLine ?? "")")
            #expect(Date().timeIntervalSince(started) < 15)
            let pidText = try String(contentsOfFile: sendmail.folder + "/grandchild.pid", encoding: .utf8)
            let pid = try #require(Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(isGone(pid), "the grandchild \(pid) outlived the filter")
            #expect(sendmail.copies.isEmpty)
        }
    }

    @Test("a stop request lets the copy under way finish (and be journalled), starts no other, and defers; the retry sends the rest once")
    func stopBetweenCopies() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let sendmail = try SendmailStandIn()
            sendmail.set("delay", "1")
            defer { Stop.reset() }
            let filter = MailFilter(config: config(home, sendmail))
            let bytes = mail()
            // The request comes while the first copy is being handed over (the stand-in has begun
            // reading it and sleeps 1 s): at most that copy goes out. A timer of 0.3 s fired only
            // after every copy had gone in a full run on a loaded machine.
            let folder = sendmail.folder
            Thread.detachNewThread {
                let deadline = Date().addingTimeInterval(60)
                while Date() < deadline {
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                    if names.contains(where: { $0.hasPrefix("incoming.") }) { break }
                    usleep(5_000)
                }
                Stop.request()
            }
            let result = filter.run(bytes, sender: "alice@example.org", recipients: recipients)
            #expect(result.status == 75, "\(result.errorLine ?? "")")
            #expect(result.errorLine?.contains("stopped by a signal") == true, "\(result.errorLine ?? "")")
            #expect(sendmail.copies.count <= 1)
            Stop.reset()
            sendmail.set("delay", nil)
            #expect(filter.run(bytes, sender: "alice@example.org", recipients: recipients).status == 0)
            #expect(recipients.allSatisfy { sendmail.perRecipient[$0] == 1 }, "\(sendmail.perRecipient)")
        }
    }

    @Test("hostile envelope addresses (CR, LF, NUL, spaces, brackets…) are bad input (65): nothing reaches sendmail's argv")
    func hostileEnvelopes() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let sendmail = try SendmailStandIn()
            let filter = MailFilter(config: config(home, sendmail))
            var generator = SystemRandomNumberGenerator()
            let poison: [String] = ["\r", "\n", "\r\n", "\0", " ", "\t", "<", ">", "\u{7F}", "\u{85}", "\u{2028}", ",", ";", "(", "\u{0}"]
            for round in 0..<40 {
                var address = Array(["bob@example.org", "nobody@example.org", "x@y"][round % 3])
                let bad = poison[Int.random(in: 0..<poison.count, using: &generator)]
                address.insert(contentsOf: bad, at: Int.random(in: 1..<address.count, using: &generator))
                let hostile = String(address) + (Bool.random(using: &generator) ? "\nRCPT TO:<eve@example.net>" : "")
                let asSender = round % 4 == 0
                let result = filter.run(mail(), sender: asSender ? hostile : "alice@example.org",
                                        recipients: asSender ? recipients : [recipients[0], hostile])
                #expect(result.status == 65, "\(hostile.debugDescription): \(result.errorLine ?? "")")
                let line = result.errorLine ?? ""
                #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("eve@"), "\(line.debugDescription)")
            }
            for bad in ["", "<>", "\"john doe\"@example.net", "bob", "@example.org", "bob@", "-oQ/tmp@example.org", "a@b@c", String(repeating: "a", count: 250) + "@x.org"] {
                #expect(filter.run(mail(), sender: "alice@example.org", recipients: [bad]).status == 65, "\(bad)")
            }
            #expect(sendmail.copies.isEmpty)
        }
    }

    @Test("<bob@example.org> is Bob: he gets his letter, and sendmail sees the plain address; <> is the null sender")
    func bracketsNormalised() throws {
        try withGnuPGHome(importing: keys) { home throws in
            let sendmail = try SendmailStandIn()
            let filter = MailFilter(config: config(home, sendmail))
            let bytes = Array("From: Alice <alice@example.org>\nTo: bob@example.org\nSubject: s\nMessage-ID: <br.\(UUID())@example.org>\n\nhello\n".utf8)
            let result = filter.run(bytes, sender: "<alice@example.org>", recipients: ["<bob@example.org>"])
            #expect(result.status == 0, "\(result.errorLine ?? "")")
            let copy = try #require(sendmail.copies.first)
            #expect(copy.recipients == ["bob@example.org"])
            #expect(copy.bytes.contains("multipart/encrypted"), "Bob's letter, not a postcard")
            #expect(!copy.bytes.contains("hello"))
            let args = try String(contentsOfFile: sendmail.folder + "/outbox/" + (try FileManager.default.contentsOfDirectory(atPath: sendmail.folder + "/outbox").first { $0.hasSuffix(".args") }!), encoding: .utf8)
            #expect(args.contains("-f alice@example.org --"))
            let null = filter.run(Array("From: a@example.org\nTo: nobody@example.org\nSubject: s\n\nx\n".utf8), sender: "<>",
                                  recipients: ["nobody@example.org"])
            #expect(null.status == 0, "\(null.errorLine ?? "")")
        }
    }
}
