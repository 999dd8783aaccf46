import Foundation
@testable import Filter
@testable import FilterDaemon
import OpenPGP
import Pipeline
import Settings
@testable import SharedStore
import Synchronization
import TestSupport
import Testing

/// Issue 25 item 2: keys published in the shared store (real PostgreSQL)
/// followed by a node's keyring (real gpg, a temporary home that becomes
/// the link to its generations).
@Suite("Key sync: published keys in every node's keyring", .serialized)
struct KeySyncTests {
    /// A node: its home (made a link to generations), the store, the feed.
    final class Node: @unchecked Sendable {
        let home: TemporaryGnuPGHome
        let keyring: NodeKeyring
        let database: SharedDatabase
        let keys: SharedKeys
        let settings: StoreSettings
        let metrics = FilterMetrics()
        let cache = KeyCache()
        let lines = Mutex([String]())

        /// `place`, when given, gets the home's path (its agent stopped) and
        /// returns the folder the node's keyring is to be made from: a copy on
        /// a file system of the test's choosing.
        init(server: PostgresServer = .shared, fixtures: [String] = ["alice.sec.asc"], database name: String? = nil,
             place: ((String) throws -> String)? = nil) throws {
            home = try TemporaryGnuPGHome()
            try home.importFixtures(fixtures)
            let folder = try makePrivateDirectory(prefix: "ms-ks")
            let table = try server.storeTable(database: try name ?? server.makeDatabase(), passwordFile: folder + "/password")
            settings = try #require(try StoreSettings.read(TOMLKeys(try TOMLKeys.document(table), "")))
            database = try SharedDatabase(settings)
            keys = SharedKeys(database)
            if let place {
                _ = try run("gpgconf", ["--homedir", home.path, "--kill", "all"])
                keyring = try NodeKeyring(home: try place(home.path))
            } else {
                keyring = try NodeKeyring(home: home.path)
            }
        }

        func sync(interval: TimeInterval = 3600, feed: (any KeyFeed)? = nil) -> KeySync {
            KeySync(feed: feed ?? keys, keyring: keyring, keys: cache, metrics: metrics, interval: interval,
                    log: { line in self.lines.withLock { $0.append(line) } })
        }

        /// The addresses of `wanted` that have a usable key in the generation a mail would take now.
        func usable(_ wanted: [String]) throws -> Set<String> {
            let path = keyring.enter()
            defer { keyring.leave(path) }
            return Set(try GnuPG(home: path).lookup(wanted).filter { $0.chosen != nil }.map(\.address))
        }

        var scrape: [String: Double] { (try? parseExposition(String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self))) ?? [:] }

        deinit {
            // Every generation's agent, then the link's folder.
            for name in (try? FileManager.default.contentsOfDirectory(atPath: keyring.generations)) ?? [] {
                _ = try? run("gpgconf", ["--homedir", keyring.generations + "/" + name, "--kill", "all"])
            }
            try? FileManager.default.removeItem(atPath: keyring.generations)
            unlink(keyring.link)
            database.close()
        }
    }

    /// The rows of the public keys in the fixture `name`.
    static func rows(_ name: String) throws -> [(fingerprint: String, armor: String?)] {
        let keys = try #require(Packets.keys(in: Array(try Data(contentsOf: Paths.key(name)))))
        return try keys.map { (try #require($0.fingerprint), Armor.armor($0.bytes)) }
    }

    /// Waits (bounded, not timed) until `condition` holds.
    static func eventually(_ seconds: Double = 60, _ condition: () throws -> Bool) rethrows -> Bool {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    @Test("publish, then the node (woken by NOTIFY) applies the key; the look-up cache is dropped; the revision is kept in the home")
    func publishThenSyncApplies() throws {
        let node = try Node()
        #expect(try node.usable(["bob@example.org"]).isEmpty)
        let sync = node.sync()
        sync.start()
        defer { sync.stop() }
        // The first check (on LISTEN) finds nothing: the keyring stays where it is.
        #expect(Self.eventually { sync.statistics.checks >= 1 })
        let generation = node.keyring.current
        let published = ContinuousClock.now
        let revision = try node.keys.publish(try Self.rows("bob.pub.asc"))
        #expect(Self.eventually { node.keyring.revision == revision })
        let lag = ContinuousClock.now - published
        print("key sync lag (publish returned -> keyring in use): \(lag)")
        #expect(try node.usable(["bob@example.org"]) == ["bob@example.org"])
        #expect(node.keyring.current != generation)
        #expect(NodeKeyring.revision(in: node.keyring.current) == revision)
        #expect(NodeKeyring.target(of: node.home.path) == node.keyring.current)
        #expect(Self.eventually { node.scrape["mailsec_key_sync_revision"] == Double(revision) })
        #expect((node.scrape["mailsec_key_sync_last_success_timestamp_seconds"] ?? 0) > Date().timeIntervalSince1970 - 600)
        // The replaced generation is gone (no mail held it).
        #expect(!FileManager.default.fileExists(atPath: generation))
        // A node started again goes on from the revision its home holds.
        let again = try NodeKeyring(home: node.home.path)
        #expect(again.revision == revision && again.current == node.keyring.current)
        #expect(Self.eventually { node.lines.withLock { $0 }.contains { $0.contains("keyring at revision \(revision)") } })
    }

    @Test("removed centrally: the key is never used again, and key continuity defers its recipient (not a postcard); published again, a letter")
    func removeThenContinuityDefers() throws {
        SharedStore.install()
        let node = try Node()
        let sync = node.sync()
        let bob = try Self.rows("bob.pub.asc")
        _ = try node.keys.publish(bob)
        #expect(sync.check())
        let outbox = try makePrivateDirectory(prefix: "ms-ks-out")
        let sendmail = outbox + "/sendmail"
        try "#!/bin/sh\ncat > \"\(outbox)/$(date +%s%N).eml\"\n".write(toFile: sendmail, atomically: true, encoding: .utf8)
        chmod(sendmail, 0o700)
        var config = FilterConfig()
        config.gnupgHome = node.home.path
        config.journalDirectory = outbox + "/journal"
        config.reinjection = .sendmail([sendmail])
        config.log = .none
        config.store = node.settings
        let filter = MailFilter(config: config, resources: FilterResources(keys: node.cache, reinjection: nil, keyring: node.keyring))
        func mail() -> [UInt8] {
            Array("From: alice@example.org\nTo: bob@example.org\nSubject: s\nMessage-ID: <\(UUID())@example.org>\n\nhello\n".utf8)
        }
        func copies() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: outbox)) ?? []).filter { $0.hasSuffix(".eml") }
                .map { (try? String(contentsOfFile: outbox + "/" + $0, encoding: .utf8)) ?? "" }
        }
        #expect(filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"]).status == 0)
        #expect(copies().count == 1 && copies().allSatisfy { $0.contains("multipart/encrypted") })
        // The look-up is cached now; the removal must not be hidden by it.
        _ = try node.keys.publish([(bob[0].fingerprint, nil)])
        #expect(sync.check())
        #expect(try node.usable(["bob@example.org"]).isEmpty)
        let held = filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"])
        #expect(held.status == 75, "a recipient whose remembered key vanished was not deferred: \(held.errorLine ?? "")")
        #expect(copies().count == 1, "something was sent to a recipient whose key was removed")
        // Published again: a letter again.
        _ = try node.keys.publish(bob)
        #expect(sync.check())
        #expect(filter.run(mail(), sender: "alice@example.org", recipients: ["bob@example.org"]).status == 0)
        #expect(copies().count == 2 && copies().allSatisfy { $0.contains("multipart/encrypted") })
    }

    @Test("revocation: the revoked key published again makes it unusable on the node")
    func revocation() throws {
        let node = try Node()
        let maker = try TemporaryGnuPGHome()
        defer { maker.close() }
        let fingerprint = try maker.makeKey("Rob <rob@example.org>")
        func row() throws -> (fingerprint: String, armor: String?) {
            let key = try #require(Packets.keys(in: try maker.export([fingerprint]))?.first)
            return (fingerprint, Armor.armor(key.bytes))
        }
        _ = try node.keys.publish([try row()])
        let sync = node.sync()
        #expect(sync.check())
        #expect(try node.usable(["rob@example.org"]) == ["rob@example.org"])
        try maker.revokeKey(of: "rob@example.org")
        _ = try node.keys.publish([try row()])
        #expect(sync.check())
        let path = node.keyring.enter()
        defer { node.keyring.leave(path) }
        let lookup = try #require(try GnuPG(home: path).lookup(["rob@example.org"]).first)
        #expect(lookup.chosen == nil)
        #expect(lookup.candidates.contains { $0.key.fingerprint == fingerprint && $0.key.isRevoked })
    }

    @Test("many syncs while threads look up keys: each look-up sees all three keys or none, never a part")
    func noHalfKeyring() async throws {
        let node = try Node()
        let maker = try TemporaryGnuPGHome()
        defer { maker.close() }
        let addresses = ["k1@example.org", "k2@example.org", "k3@example.org"]
        var rows: [(fingerprint: String, armor: String?)] = []
        for address in addresses {
            let fingerprint = try maker.makeKey(address)
            let key = try #require(Packets.keys(in: try maker.export([fingerprint]))?.first)
            rows.append((fingerprint, Armor.armor(key.bytes)))
        }
        let sync = node.sync()
        let rounds = 10
        final class Shared: Sendable {
            let stop = Atomic(false)
            let seen = Mutex((all: 0, none: 0, part: 0, failed: 0))
            let running = Atomic(0)
            var total: Int { seen.withLock { $0.all + $0.none + $0.part } }
        }
        let shared = Shared()
        // Threads of their own, as the filter's workers: the cooperative pool may be busy with other tests.
        for _ in 0..<3 {
            Thread { [node] in
                while !shared.stop.load(ordering: .relaxed) {
                    do {
                        let found = try node.usable(addresses)
                        shared.seen.withLock { seen in
                            if found.count == 3 { seen.all += 1 } else if found.isEmpty { seen.none += 1 } else { seen.part += 1 }
                        }
                    } catch {
                        shared.seen.withLock { $0.failed += 1 }
                    }
                }
                shared.running.add(-1, ordering: .relaxed)
            }.start()
            shared.running.add(1, ordering: .relaxed)
        }
        for round in 0..<rounds {
            // All three in one publication, then all three removed in one; between syncs, look-ups (counted, not timed).
            let before = shared.total
            _ = try node.keys.publish(round % 2 == 0 ? rows : rows.map { ($0.fingerprint, nil) })
            #expect(sync.check())
            #expect(Self.eventually(120) { shared.total >= before + 3 })
        }
        shared.stop.store(true, ordering: .relaxed)
        #expect(Self.eventually(120) { shared.running.load(ordering: .relaxed) == 0 })
        let counts = shared.seen.withLock { $0 }
        #expect(counts.failed == 0, "a look-up failed (a generation removed under it?)")
        print("look-ups during \(rounds) syncs: \(counts)")
        #expect(counts.part == 0, "a look-up saw part of a publication")
        #expect(counts.all + counts.none > rounds, "too few look-ups to mean anything")
        #expect(sync.statistics.applied == rounds)
        node.keyring.sweep()
        #expect(try FileManager.default.contentsOfDirectory(atPath: node.keyring.generations) == [(node.keyring.current as NSString).lastPathComponent])
    }

    @Test("database down: the node keeps its keyring (mail still uses it), the metrics say so; back up, it catches up by itself")
    func databaseDownThenBack() throws {
        let server = try PostgresServer()
        let node = try Node(server: server)
        let sync = node.sync(interval: 1)
        _ = try node.keys.publish(try Self.rows("bob.pub.asc"))
        #expect(sync.check())
        let revision = node.keyring.revision
        // The loop (LISTEN and a check a second) runs through the outage and the restart.
        sync.start()
        defer { sync.stop() }
        server.stop()
        #expect(!sync.check())
        #expect(!sync.check())
        #expect(node.keyring.revision == revision)
        #expect(try node.usable(["bob@example.org"]) == ["bob@example.org"], "the keyring was lost with the database")
        let down = node.scrape
        #expect(down.value("mailsec_key_sync_failures_total{reason=\"unreachable\"}") >= 2)
        #expect(down["mailsec_key_sync_revision"] == Double(revision))
        let lines = node.lines.withLock { $0 }
        #expect(lines.filter { $0.contains("filtering goes on with the keyring") }.count == 1, "one line per outage, not per check")
        #expect(!lines.joined().contains(server.password))
        try server.start()
        let carol = try Self.rows("carol.pub.asc")
        let next = try node.keys.publish(carol)
        #expect(Self.eventually { node.keyring.revision == next })
        #expect(try node.usable(["bob@example.org", "carol@example.org"]) == ["bob@example.org", "carol@example.org"])
        #expect(Self.eventually { node.scrape["mailsec_key_sync_revision"] == Double(next) })
        #expect(Self.eventually { node.lines.withLock { $0 }.contains { $0.contains("reached again") } })
    }

    @Test("a home that is not there, or a link to nothing, is refused with one line")
    func homeRefused() throws {
        let folder = try makePrivateDirectory(prefix: "ms-ksh")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect { _ = try NodeKeyring(home: folder + "/missing") } throws: { "\($0)".contains("gnupg_home \(folder)/missing") }
        symlink(folder + "/nothing", folder + "/dangling")
        #expect { _ = try NodeKeyring(home: folder + "/dangling") } throws: { "\($0)".contains("neither a folder nor a link to one") }
        FileManager.default.createFile(atPath: folder + "/file.keys", contents: Data())
        mkdir(folder + "/file", 0o700)
        #expect { _ = try NodeKeyring(home: folder + "/file") } throws: { "\($0)".contains("cannot move") || "\($0)".contains("cannot make") }
        var info = stat()
        #expect(lstat(folder + "/file", &info) == 0 && info.st_mode & S_IFMT == S_IFDIR, "the home was moved away and not put back")
        // Rows at or before the revision the keyring holds are never applied (a feed gone backwards, say).
        mkdir(folder + "/home", 0o700)
        let keyring = try NodeKeyring(home: folder + "/home")
        let before = keyring.current
        #expect { try keyring.apply([PublishedKey(revision: 0, fingerprint: String(repeating: "A", count: 40), armor: nil)]) }
            throws: { "\($0)".contains("out of order") }
        #expect(keyring.current == before && keyring.revision == 0)
        #expect(try keyring.apply([]) == 0, "nothing to apply is no change")
        #expect(keyring.current == before)
    }

    /// A feed that never hears an announcement: the periodic check alone.
    struct Deaf: KeyFeed {
        let feed: SharedKeys
        func changes(after revision: Int64, limit: Int) throws(KeyFeedError) -> [PublishedKey] {
            try feed.changes(after: revision, limit: limit)
        }
        func follow(_ notified: @escaping @Sendable () -> Void) -> KeyFeedListening { KeyFeedListening {} }
    }

    @Test("NOTIFY missed: the periodic check (key_sync_interval) catches up")
    func periodicCheckCatchesUp() throws {
        let node = try Node()
        let sync = node.sync(interval: 1, feed: Deaf(feed: node.keys))
        sync.start()
        defer { sync.stop() }
        let revision = try node.keys.publish(try Self.rows("bob.pub.asc"))
        #expect(Self.eventually { node.keyring.revision == revision })
        #expect(try node.usable(["bob@example.org"]) == ["bob@example.org"])
        #expect(Self.eventually { node.lines.withLock { $0 }.contains { $0.contains("after the check began") } })
    }

    @Test("a bad row (corrupt armor, another key's data, a secret key, a removal of a key the node signs with) is refused whole: the node stays on its last good revision, and says so")
    func badRowRefused() throws {
        let node = try Node()
        let sync = node.sync()
        let bob = try Self.rows("bob.pub.asc"), carol = try Self.rows("carol.pub.asc")
        let good = try node.keys.publish(bob)
        #expect(sync.check())
        let generation = node.keyring.current
        let secret = String(decoding: try Data(contentsOf: Paths.key("carol.sec.asc")), as: UTF8.self)
        let alice = try #require(try Self.rows("alice.pub.asc").first)
        let bad: [String] = [
            "INSERT INTO published_keys (fingerprint, armor) VALUES ('\(carol[0].fingerprint)', '-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n=AAAA\n-----END PGP PUBLIC KEY BLOCK-----\n');",
            "INSERT INTO published_keys (fingerprint, armor) VALUES ('\(carol[0].fingerprint)', '\(bob[0].armor!)');",
            "INSERT INTO published_keys (fingerprint, armor) VALUES ('\(carol[0].fingerprint)', '\(secret)');",
            "INSERT INTO published_keys (fingerprint, armor) VALUES ('\(alice.fingerprint)', NULL);",
        ]
        for (index, statement) in bad.enumerated() {
            // A good row first: it must not be applied without the bad one after it.
            _ = try node.keys.publish(carol)
            try node.superuserInsert(statement)
            #expect(!sync.check(), "bad row \(index) was taken")
            #expect(node.keyring.revision == good && node.keyring.current == generation)
            #expect(try node.usable(["bob@example.org", "carol@example.org"]) == ["bob@example.org"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: node.keyring.generations).count == 1, "a half-made generation was left")
            let scrape = node.scrape
            #expect(scrape.value("mailsec_key_sync_failures_total{reason=\"refused\"}") == Double(index + 1))
            #expect(scrape["mailsec_key_sync_pending_revisions"] == 2)
            #expect(scrape["mailsec_key_sync_revision"] == Double(good))
            // The administrator takes the bad row out: the node goes on.
            try node.superuserInsert("DELETE FROM published_keys WHERE revision > \(good);")
        }
        #expect(node.lines.withLock { $0 }.allSatisfy { !$0.contains("PRIVATE KEY") && !$0.contains("\n") })
        _ = try node.keys.publish(carol)
        #expect(sync.check())
        #expect(try node.usable(["bob@example.org", "carol@example.org"]) == ["bob@example.org", "carol@example.org"])
    }

    /// A node whose `gnupg_home` is `FOLDER/gnupg` on a tmpfs of its own
    /// (FOLDER, 4 MiB), and FOLDER: for faults of the node's own disk.
    static func nodeOnItsOwnDisk() throws -> (Node, String) {
        let folder = try makePrivateDirectory(prefix: "ms-ks-disk")
        let mounted = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m,mode=700", "tmpfs", folder])
        guard mounted.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["mount": mounted.errors]) }
        let node = try Node(place: { home in
            let copied = try run("/bin/cp", ["-a", home, folder + "/gnupg"])
            guard copied.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["cp": copied.errors]) }
            return folder + "/gnupg"
        })
        return (node, folder)
    }

    /// Stops the agents of `node`'s generations, then unmounts `mounts` (last first).
    static func takeDown(_ node: Node, _ mounts: [String]) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: node.keyring.generations)) ?? [] {
            _ = try? run("gpgconf", ["--homedir", node.keyring.generations + "/" + name, "--kill", "all"])
        }
        for mount in mounts.reversed() { _ = try? run("/bin/umount", ["-l", mount]) }
    }

    /// Checks that the failed sync left the node as it was (`generation` in
    /// use at `revision`, nothing else in the generations, Bob unknown) and
    /// counted it as the keyring's own failure, in one line without key material.
    static func expectUntouched(_ node: Node, _ sync: KeySync, generation: String, revision: Int64, failures: Double) throws {
        #expect(!sync.check())
        #expect(node.keyring.revision == revision && node.keyring.current == generation)
        #expect(NodeKeyring.target(of: node.keyring.link) == generation)
        #expect(try FileManager.default.contentsOfDirectory(atPath: node.keyring.generations) == [(generation as NSString).lastPathComponent],
                "a half-made generation was left")
        #expect(try node.usable(["alice@example.org", "bob@example.org"]) == ["alice@example.org"])
        let scrape = node.scrape
        #expect(scrape.value("mailsec_key_sync_failures_total{reason=\"keyring\"}") == failures)
        #expect(scrape.value("mailsec_key_sync_failures_total{reason=\"refused\"}") == 0)
        #expect(scrape["mailsec_key_sync_pending_revisions"] == 1)
        let lines = node.lines.withLock { $0 }
        #expect(lines.count == 1 && lines.allSatisfy { !$0.contains("\n") && !$0.contains("BEGIN PGP") })
    }

    @Test("the node's disk full during a sync: the new generation is removed, the keyring in use stays whole (reason=\"keyring\"); space freed, the same row applies")
    func diskFullDuringSync() throws {
        let (node, folder) = try Self.nodeOnItsOwnDisk()
        defer { Self.takeDown(node, [folder]) }
        let sync = node.sync()
        #expect(sync.check())
        let generation = node.keyring.current, revision = node.keyring.revision
        // Every block taken: dd stops at ENOSPC.
        let filler = folder + "/filler"
        _ = try run("/bin/dd", ["if=/dev/zero", "of=" + filler, "bs=4096"])
        _ = try node.keys.publish(try Self.rows("bob.pub.asc"))
        try Self.expectUntouched(node, sync, generation: generation, revision: revision, failures: 1)
        #expect(node.lines.withLock { $0 }.first?.contains("No space left on device") == true)
        unlink(filler)
        #expect(sync.check())
        #expect(node.keyring.revision > revision && node.keyring.current != generation)
        #expect(try node.usable(["alice@example.org", "bob@example.org"]) == ["alice@example.org", "bob@example.org"])
    }

    @Test("the folder of gnupg_home read-only (the generations writable): the swap fails, the new generation is removed, the keyring in use stays; writable again, the same row applies")
    func readOnlyBesideTheLink() throws {
        let (node, folder) = try Self.nodeOnItsOwnDisk()
        let generations = node.keyring.generations
        defer { Self.takeDown(node, [folder, generations]) }
        let sync = node.sync()
        #expect(sync.check())
        let generation = node.keyring.current, revision = node.keyring.revision
        // A mount of its own for the generations, then the folder of the link read-only
        // (per mount: the generations stay writable, so the copy and the imports succeed).
        #expect(try run("/bin/mount", ["--bind", generations, generations]).status == 0)
        #expect(try run("/bin/mount", ["-o", "remount,bind,ro", folder]).status == 0)
        _ = try node.keys.publish(try Self.rows("bob.pub.asc"))
        try Self.expectUntouched(node, sync, generation: generation, revision: revision, failures: 1)
        #expect(node.lines.withLock { $0 }.first?.contains("Read-only file system") == true)
        #expect(try run("/bin/mount", ["-o", "remount,bind,rw", folder]).status == 0)
        #expect(sync.check())
        #expect(try node.usable(["alice@example.org", "bob@example.org"]) == ["alice@example.org", "bob@example.org"])
    }

    @Test("key_sync_interval: read, default 30, range-checked")
    func interval() throws {
        let url = "[store]\nurl = \"postgres://m@127.0.0.1/x\"\n"
        #expect(try StoreSettings.read(TOMLKeys(try TOMLKeys.document(url), ""))?.keySyncInterval == 30)
        #expect(try StoreSettings.read(TOMLKeys(try TOMLKeys.document(url + "key_sync_interval = 5\n"), ""))?.keySyncInterval == 5)
        for bad in ["0", "-1", "86401", "\"30\""] {
            #expect(throws: ConfigError.self) { try StoreSettings.read(TOMLKeys(try TOMLKeys.document(url + "key_sync_interval = \(bad)\n"), "")) }
        }
    }
}

extension KeySyncTests.Node {
    /// `statement` run by the superuser in this node's database.
    func superuserInsert(_ statement: String) throws {
        let result = try PostgresServer.shared.superuser(statement, database: settings.database)
        guard result.status == 0 else { throw DaemonError(description: "psql: \(result.errors)") }
    }
}

/// The real `mailsec filter --listen` with `[store]`, and `mailsec keys publish`
/// as an administrator runs it: the interface scripts/cluster-e2e uses.
@Suite("mailsec filter --listen follows mailsec keys publish", .serialized)
struct ResidentKeySyncTests {
    @Test("published through the CLI, the daemon applies it (metric mailsec_key_sync_revision), and the next mail to that key is a letter; removed, deferred")
    func daemonFollowsPublications() throws {
        let server = PostgresServer.shared
        let home = try TemporaryGnuPGHome()
        try home.importFixtures(["alice.sec.asc"])
        let folder = try makePrivateDirectory(prefix: "ms-ksd")
        let peer = try RecordingSMTPServer()
        let store = try server.storeTable(database: try server.makeDatabase(), passwordFile: folder + "/password")
        let config = folder + "/filter.toml"
        try """
            gnupg_home = "\(home.path)"
            log = "stderr"
            timeout = 60
            [reinject]
            method = "smtp"
            port = \(peer.port)
            [journal]
            directory = "\(folder)/journal"
            [listen]
            parallel = 2
            metrics_address = "127.0.0.1:0"
            \(store)key_sync_interval = 2
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try ResidentProcess(config: config, home: home)
        defer {
            daemon.signal(SIGTERM)
            _ = daemon.exitStatus(within: 30)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: home.path + ".keys")) ?? [] {
                _ = try? run("gpgconf", ["--homedir", home.path + ".keys/" + name, "--kill", "all"])
            }
            try? FileManager.default.removeItem(atPath: home.path + ".keys")
            unlink(home.path)
        }
        let port = try ResidentMetricsTests.metricsPort(daemon)
        #expect(try ResidentMetricsTests.scrape(port)["mailsec_key_sync_revision"] == 0)
        let connection = try daemon.connect()
        defer { connection.quit() }
        func mail() -> [UInt8] {
            Array("From: alice@example.org\nTo: bob@example.org\nSubject: s\nMessage-ID: <\(UUID())@example.org>\n\nhello\n".utf8)
        }
        #expect(send(connection, mail(), to: ["bob@example.org"]).code == 250)
        #expect(peer.transactions.last.map { !$0.data.contains("multipart/encrypted") } == true, "no key yet: a postcard")

        let published = try mailsec(["keys", "publish", "--store-config", config, Paths.key("bob.pub.asc").path], home: home)
        #expect(published.status == 0, "\(published.errors)")
        try daemon.waitFor("keyring at revision 1", seconds: 60)
        #expect(try ResidentMetricsTests.scrape(port)["mailsec_key_sync_revision"] == 1)
        #expect(send(connection, mail(), to: ["bob@example.org"]).code == 250)
        #expect(peer.transactions.last?.data.contains("multipart/encrypted") == true, "the published key was not used")

        let fingerprint = try #require(published.output.split(separator: " ").first.map(String.init))
        #expect(try mailsec(["keys", "publish", "--store-config", config, "--remove", fingerprint], home: home).status == 0)
        try daemon.waitFor("keyring at revision 2", seconds: 60)
        let count = peer.transactions.count
        #expect(send(connection, mail(), to: ["bob@example.org"]).code == 451, "key continuity did not hold the mail")
        #expect(peer.transactions.count == count)
        let scrape = try ResidentMetricsTests.scrape(port)
        #expect(scrape["mailsec_key_sync_revision"] == 2)
        #expect(scrape["mailsec_key_sync_failures_total{reason=\"unreachable\"}"] == 0)
        print(daemon.lines.filter { $0.contains("key sync") }.joined(separator: "\n"))
    }
}

extension ResidentKeySyncTests {
    @Test("a [store] whose password_command fails: the daemon does not start (75), one line, nothing of the command's")
    func storeNotOpened() throws {
        let home = try TemporaryGnuPGHome()
        defer { home.close() }
        try home.importFixtures(["alice.sec.asc"])
        let config = home.path + "/filter.toml"
        try """
            gnupg_home = "\(home.path)"
            [journal]
            directory = "\(home.path)/journal"
            [store]
            url = "postgres://mailsec@127.0.0.1:\(try freePort())/mailsec"
            password_command = "echo zqsecretword >&2; exit 3"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let result = try mailsec(["filter", "--listen", "127.0.0.1:0", "--config", config], home: home)
        #expect(result.status == 75, "\(result.errors)")
        #expect(result.errors.contains("key sync") && result.errors.contains("password_command"))
        #expect(!result.errors.contains("zqsecretword"))
        var info = stat()
        #expect(lstat(home.path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR, "the home was taken over by a daemon that did not start")
    }
}

/// `mailsec ARGUMENTS` with `home`'s environment.
func mailsec(_ arguments: [String], home: TemporaryGnuPGHome) throws -> ProcessResult {
    try run(Paths.mailsecExecutable.path, arguments, environment: home.environment)
}
