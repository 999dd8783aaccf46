import Foundation
import Pipeline
import Platform
import ReadingServer
import Settings
import Testing
import TestSupport
@testable import SharedStore

/// `text` as a configuration's top table.
func top(_ text: String) throws -> TOMLKeys { TOMLKeys(try TOMLKeys.document(text), "") }

@Suite(.serialized) struct SharedStoreFaultTests {
    /// PostgreSQL stopped mid-use: every call fails at once with one line
    /// and status 75 (nothing is written or guessed); started again, the same
    /// client works again by itself, with a new connection, and nothing
    /// recorded before is lost.
    @Test func serverStoppedMidUseFailsClosedThenRecovers() throws {
        let server = try PostgresServer()
        let folder = try makePrivateDirectory(prefix: "ms-store")
        let store = try settings(server, try server.makeDatabase(), folder: folder)
        let database = try SharedDatabase(store)
        let continuity = SharedContinuity(database)
        _ = try continuity.remembered(["bob@example.org"])
        try continuity.record("bob@example.org", fingerprint: fingerprints[0])
        #expect(database.connectionsMade == 1)
        server.stop()
        for attempt in 0..<3 {
            #expect(throws: KeyContinuityError.self, "attempt \(attempt)") { _ = try continuity.remembered(["bob@example.org"]) }
            do { _ = try continuity.remembered(["bob@example.org"]) } catch {
                #expect(error.exitStatus == .temporary)
                #expect(!error.description.contains("\n"))
                #expect(!error.description.contains(server.password))
                #expect(error.description.contains("postgres://mailsec@127.0.0.1:\(server.port)/"))
            }
            #expect(throws: KeyContinuityError.self) { try continuity.record("carol@example.org", fingerprint: fingerprints[1]) }
        }
        try server.start()
        #expect(try continuity.remembered(["bob@example.org", "carol@example.org"]) == ["bob@example.org": fingerprints[0]])
        #expect(database.connectionsMade > 1)
    }

    /// A wrong password: one line saying so, without the password; likewise
    /// for a server nobody listens on.
    @Test func wrongPasswordAndUnreachableServer() throws {
        let server = PostgresServer.shared
        let folder = try makePrivateDirectory(prefix: "ms-store")
        var store = try settings(server, try server.makeDatabase(), folder: folder)
        store.password = .text("not-the-password-\(server.password)")
        let wrong = SharedContinuity(try SharedDatabase(store))
        do { _ = try wrong.remembered(["bob@example.org"]); Issue.record("a wrong password was taken") } catch {
            #expect(error.description.contains("password authentication failed"))
            #expect(!error.description.contains(server.password))
            #expect(!error.description.contains("\n"))
            #expect(error.exitStatus == .temporary)
        }
        store.password = .text(server.password)
        store.port = try freePort()
        let nobody = SharedContinuity(try SharedDatabase(store))
        do { _ = try nobody.remembered(["bob@example.org"]); Issue.record("nobody answered, yet it worked") } catch {
            #expect(error.description.contains("cannot reach it"))
            #expect(!error.description.contains("\n"))
            #expect(error.exitStatus == .temporary)
        }
    }

    /// `password_command` is run (the house's child process code) and its password used; a failing one is one line.
    @Test func passwordCommand() throws {
        let server = PostgresServer.shared
        let folder = try makePrivateDirectory(prefix: "ms-store")
        var store = try settings(server, try server.makeDatabase(), folder: folder)
        let file = folder + "/secret"
        FileManager.default.createFile(atPath: file, contents: Data(server.password.utf8), attributes: [.posixPermissions: 0o600])
        store.password = .command("cat \(file)")
        let continuity = SharedContinuity(try SharedDatabase(store))
        #expect(try continuity.remembered(["bob@example.org"]).isEmpty)
        store.password = .command("exit 3")
        #expect { _ = try SharedDatabase(store) } throws: { error in
            "\(error)".contains("password_command: failed with status 3")
        }
    }

    /// The configuration: a password file others can read is refused, as is
    /// a password in the URL, TLS turned off for a remote server, a number
    /// out of range; a remote server gets TLS without asking.
    @Test func configurationRefusals() throws {
        let folder = try makePrivateDirectory(prefix: "ms-store")
        let file = folder + "/password"
        FileManager.default.createFile(atPath: file, contents: Data("secret-password\n".utf8), attributes: [.posixPermissions: 0o644])
        let url = "url = \"postgres://mailsec@127.0.0.1:5432/mailsec\""
        func refusal(_ text: String) -> String? {
            do { _ = try StoreSettings.read(try top(text)); return nil } catch { return "\(error)" }
        }
        let open = try #require(refusal("[store]\n\(url)\npassword_file = \"\(file)\"\n"))
        #expect(open.contains("store.password_file: refused"))
        #expect(!open.contains("secret-password"))
        chmod(file, 0o600)
        let good = try #require(try StoreSettings.read(try top("[store]\n\(url)\npassword_file = \"\(file)\"\n")))
        #expect(good.password == .text("secret-password") && !good.tls && good.port == 5432)
        #expect(refusal("[store]\nurl = \"postgres://mailsec:pw@127.0.0.1/mailsec\"\n")?.contains("no password in the URL") == true)
        #expect(refusal("[store]\nurl = \"postgres://db.example.org/mailsec\"\n")?.contains("the user is missing") == true)
        #expect(refusal("[store]\nurl = \"postgres://m@db.example.org:5432/\"\n")?.contains("the database is missing") == true)
        #expect(refusal("[store]\nurl = \"postgres://m@db.example.org:0/x\"\n") != nil)
        #expect(refusal("[store]\nurl = \"postgres://m@db.example.org:70000/x\"\n") != nil)
        #expect(refusal("[store]\nurl = \"mysql://m@db.example.org/x\"\n")?.contains("not a postgres:// URL") == true)
        #expect(refusal("[store]\nurl = \"postgres://m@db.example.org/x\"\ntls = false\n")?.contains("cannot be turned off") == true)
        #expect(refusal("[store]\n\(url)\ntimeout = 0\n")?.contains("store.timeout") == true)
        #expect(refusal("[store]\n\(url)\nconnect_timeout = 301\n")?.contains("store.connect_timeout") == true)
        #expect(refusal("[store]\n\(url)\npassword_timeout = 99999\n")?.contains("store.password_timeout") == true)
        #expect(refusal("[store]\n\(url)\npassword_file = \"\(file)\"\npassword_command = \"true\"\n")?.contains("not both") == true)
        #expect(refusal("[store]\n\(url)\nport = 5\n")?.contains("unknown key") == true)
        let remote = try #require(try StoreSettings.read(try top("[store]\nurl = \"postgresql://m@db.example.org/x\"\n")))
        #expect(remote.tls && remote.host == "db.example.org")
        let v6 = try #require(try StoreSettings.read(try top("[store]\nurl = \"postgres://m@[::1]:6543/x\"\n")))
        #expect(!v6.tls && v6.host == "::1" && v6.port == 6543)
    }

    /// TLS to a server that offers none is a failure, never a plain connection.
    @Test func tlsIsNeverDowngraded() throws {
        let server = PostgresServer.shared
        let folder = try makePrivateDirectory(prefix: "ms-store")
        var store = try settings(server, try server.makeDatabase(), folder: folder)
        store.tls = true
        let continuity = SharedContinuity(try SharedDatabase(store))
        #expect(throws: KeyContinuityError.self) { _ = try continuity.remembered(["bob@example.org"]) }
    }
}

@Suite(.serialized) struct SharedDocumentsTests {
    /// Published through one client, opened through another (two reading
    /// servers on one database); expiry hides and purges; deletion is for everyone.
    @Test func twoClientsShareDocuments() async throws {
        let (databases, _, _) = try clients(2)
        let one = SharedDocuments(databases[0]), other = SharedDocuments(databases[1])
        let document = Array("{\"v\":1}".utf8), digest = Digest.sha256(Array("delete-token".utf8))
        try await one.insert(id: "aaaa", document: document, deleteTokenDigest: digest, created: 1000, expires: 2000)
        try await one.insert(id: "bbbb", document: document + [0, 255], deleteTokenDigest: digest, created: 1000, expires: 5000)
        let found = try #require(try await other.find(id: "aaaa", now: 1500))
        #expect(found.document == document && found.created == 1000 && found.expires == 2000)
        #expect(try await other.find(id: "bbbb", now: 1500)?.document == document + [0, 255])
        #expect(try await other.deleteTokenDigest(id: "aaaa") == digest)
        #expect(try await other.find(id: "aaaa", now: 2000) == nil, "an expired entry was served")
        #expect(try await other.count() == 2)
        #expect(try await other.purge(now: 2000) == 1)
        #expect(try await one.find(id: "aaaa", now: 1500) == nil)
        #expect(try await one.deleteTokenDigest(id: "aaaa") == nil)
        #expect(try await other.delete(id: "bbbb"))
        #expect(try await one.find(id: "bbbb", now: 1500) == nil)
        #expect(try await !one.delete(id: "bbbb"))
        #expect(try await one.count() == 0)
        // An identifier taken is refused, not overwritten.
        try await one.insert(id: "cccc", document: document, deleteTokenDigest: digest, created: 1, expires: 9)
        await #expect(throws: StoreError.self) {
            try await other.insert(id: "cccc", document: [1], deleteTokenDigest: digest, created: 1, expires: 9)
        }
        #expect(try await one.find(id: "cccc", now: 2)?.document == document)
    }

    /// A store that cannot be reached: a ``StoreError`` with status 75, one line.
    @Test func unreachableIsTemporary() async throws {
        let folder = try makePrivateDirectory(prefix: "ms-store")
        var store = try settings(PostgresServer.shared, try PostgresServer.shared.makeDatabase(), folder: folder)
        store.port = try freePort()
        let documents = SharedDocuments(try SharedDatabase(store))
        do { _ = try await documents.find(id: "aaaa", now: 1); Issue.record("nobody answered, yet it worked") } catch {
            #expect(error.exitStatus == .temporary)
            #expect(!error.description.contains("\n"))
        }
    }
}
