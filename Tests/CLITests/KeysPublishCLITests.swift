import Foundation
import TestSupport
import Testing

/// `mailsec keys publish` against a real PostgreSQL: what it writes, and
/// every way it refuses (nothing written then).
@Suite("mailsec keys publish", .serialized)
struct KeysPublishCLITests {
    let server = PostgresServer.shared
    let database: String
    let folder: String
    let config: String

    init() throws {
        database = try server.makeDatabase()
        folder = try makePrivateDirectory(prefix: "ms-pub")
        config = folder + "/filter.toml"
        try server.storeTable(database: database, passwordFile: folder + "/password")
            .write(toFile: config, atomically: true, encoding: .utf8)
    }

    /// The table as `revision fingerprint armor-or-REMOVED` lines.
    func table() throws -> [String] {
        let rows = try server.superuser("COPY (SELECT revision, fingerprint, coalesce(left(armor, 36), 'REMOVED') FROM published_keys "
                                        + "ORDER BY revision) TO STDOUT;", database: database)
        return rows.output.split(separator: "\n").map(String.init)
    }

    @Test("every public key of the files, one row each, then a removal; the revision printed")
    func publishAndRemove() throws {
        let both = folder + "/both.asc"
        let bob = try Data(contentsOf: Paths.key("bob.pub.asc")), carol = try Data(contentsOf: Paths.key("carol.pub.asc"))
        try (bob + carol).write(to: URL(fileURLWithPath: both))
        let published = try mailsec(["keys", "publish", "--store-config", config, both])
        #expect(published.status == 0, "\(published.errors)")
        let lines = published.output.split(separator: "\n")
        #expect(lines.count == 3 && lines[0].hasSuffix(" published") && lines[1].hasSuffix(" published") && lines[2] == "revision 2")
        let rows = try table()
        #expect(rows.count == 2 && rows.allSatisfy { $0.contains("-----BEGIN PGP PUBLIC KEY BLOCK-----") })
        let fingerprint = String(lines[0].split(separator: " ")[0])
        let removed = try mailsec(["keys", "publish", "--store-config", config, "--remove", fingerprint.lowercased()])
        #expect(removed.status == 0 && removed.output == "\(fingerprint) removed\nrevision 3\n", "\(removed.errors)")
        #expect(try table().last == "3\t\(fingerprint)\tREMOVED")
    }

    @Test("refusals: a secret key, a file without a key, garbage, a bad fingerprint, no [store], a store not reachable: one line, nothing written")
    func refusals() throws {
        let empty = folder + "/empty", garbage = folder + "/garbage.asc", noStore = folder + "/nostore.toml"
        FileManager.default.createFile(atPath: empty, contents: Data())
        FileManager.default.createFile(atPath: garbage, contents: Data("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n".utf8))
        FileManager.default.createFile(atPath: noStore, contents: Data("gnupg_home = \"/nowhere\"\n".utf8))
        let unreachable = folder + "/unreachable.toml"
        let text = try String(contentsOfFile: config, encoding: .utf8).replacingOccurrences(of: ":\(server.port)/", with: ":\(try freePort())/")
        try text.write(toFile: unreachable, atomically: true, encoding: .utf8)
        let bob = Paths.key("bob.pub.asc").path
        let cases: [([String], Int32, String)] = [
            ([config, bob, Paths.key("alice.sec.asc").path], 65, "holds a secret key"),
            ([config, bob, empty], 65, "holds no key"),
            ([config, garbage], 65, "holds no OpenPGP keys"),
            // A user ID without its self-signature: gpg refuses the key, so no node would ever take it.
            ([config, bob, Paths.key("invalid.pub.gpg").path], 65, "gpg refuses the key"),
            ([config, folder + "/missing.asc"], 66, "cannot read"),
            ([config, "--remove", "ABCD"], 64, "not a full fingerprint"),
            ([config], 64, "Give key files"),
            ([config, "--remove", String(repeating: "A", count: 40), bob], 64, "not both"),
            ([noStore, bob], 78, "no [store] table"),
            ([unreachable, bob], 75, "cannot reach it"),
        ]
        for (arguments, status, words) in cases {
            let result = try mailsec(["keys", "publish", "--store-config"] + arguments)
            #expect(result.status == status, "\(arguments): \(result.errors)")
            #expect(result.errors.contains(words), "\(arguments): \(result.errors)")
            #expect(!result.errors.contains(server.password))
            if status != 64 { #expect(result.errors.split(separator: "\n").count == 1, "\(result.errors)") }
        }
        #expect(try table().isEmpty, "a refused publication wrote something")
    }
}
