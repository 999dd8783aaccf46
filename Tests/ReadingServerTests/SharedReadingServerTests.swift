import Foundation
import HTTPRequests
import PartialEncryption
import TestSupport
import Testing

@Suite("Reading servers sharing one PostgreSQL database", .serialized, .promptly)
struct SharedReadingServerTests {
    /// Two `mailsec serve` processes on one database: a page published
    /// through one opens on the other, and a deletion through the other
    /// holds for both; neither wrote its SQLite file.
    @Test func publishedOnOneOpensOnTheOther() throws {
        let postgres = PostgresServer.shared
        let folder = try makePrivateDirectory(prefix: "ms-shared-serve")
        let config = folder + "/store.toml"
        let table = try postgres.storeTable(database: try postgres.makeDatabase(), passwordFile: folder + "/password")
        FileManager.default.createFile(atPath: config, contents: Data(table.utf8), attributes: [.posixPermissions: 0o600])
        let one = try ReadingServerProcess(extraArguments: ["--store-config", config])
        defer { one.remove() }
        let other = try ReadingServerProcess(extraArguments: ["--store-config", config])
        defer { other.remove() }
        let (document, password) = try sampleDocument()
        let publication = try HTTPPublisher(url: one.url, token: one.token).publish(document)
        let read = try get(other, "/api/postcards/" + publication.id)
        #expect(read.status == 200)
        #expect(try SpanBlob(base64URL: try ReadingDocument.decode(read.body).blob).open(password: password) == ["the secret venue"])
        #expect(try get(other, "/r/" + publication.id).status == 200)
        // Withdrawn through the other server (its own publish token does not matter: the deletion token does).
        let moved = Publication(id: publication.id, url: other.url + "/r/" + publication.id, deleteToken: publication.deleteToken,
                                expires: publication.expires)
        try HTTPPublisher(url: other.url, token: other.token).withdraw(moved)
        #expect(try get(one, "/api/postcards/" + publication.id).status == 404)
        #expect(try get(other, "/api/postcards/" + publication.id).status == 404)
        #expect(!FileManager.default.fileExists(atPath: one.storePath) && !FileManager.default.fileExists(atPath: other.storePath))
    }
}
