import Foundation
import HTTPRequests
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Policy
import Redaction
import TestSupport
import Testing

/// The reading document behind `url`, opened with `password`.
func readSpans(_ server: ReadingServerProcess, _ publication: Publication, _ password: SpanPassword) throws
    -> (ReadingDocument, [String]) {
    let response = try HTTPExchange.send(host: "127.0.0.1", port: server.port, timeout: 10, method: "GET",
                                         path: "/api/postcards/" + publication.id, bearer: nil, contentType: nil, body: [])
    try #require(response.status == 200)
    let document = try ReadingDocument.decode(response.body)
    return (document, try SpanBlob(base64URL: document.blob).open(password: password))
}

func partiallyEncrypted(_ home: TemporaryGnuPGHome, _ publisher: (any SpanPublisher)?) -> MailPipeline {
    MailPipeline(gnupg: GnuPG(home: home.path), options: PipelineOptions(
        mail: MailOptions(postcardExtension: .partiallyEncrypted), publisher: publisher))
}

@Suite("Partially encrypted postcards", .serialized)
struct PartiallyEncryptedTests {
    @Test("spans are numbered in the postcard, published encrypted, and read back with the password; letters are whole")
    func mixedMail() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let pipeline = partiallyEncrypted(home, try HTTPPublisher(url: server.url, token: server.token))
            let (plan, copies, publication, password) = try pipeline.process(try parse(mixedMailText))
            #expect(plan.mailState == .extendedPostcard(.partiallyEncrypted))
            let page = try #require(publication)
            let key = try #require(password)
            let postcard = try #require(copies.first { $0.kind == .postcard })
            let message = try MIMEMessage.parse(postcard.bytes)
            #expect(message.subject == "Plan [#1] review")
            let texts = message.body?.walk().compactMap(\.entity.text) ?? []
            #expect(texts.contains { $0.contains("Monday.\n[#2]\nBye.") }, "the plain text")
            #expect(texts.contains { $0.contains("<p>[#2]<b></b></p>") }, "the HTML: the same span, the same number")
            #expect(!texts.contains { $0.contains("[#3]") })
            #expect(texts.contains { $0.contains(page.url) && $0.contains("will give it to you another way") })
            // Without the page's address, which the postcard must carry: its port is
            // random, and one in about two thousand (34711, 47110 …) holds "4711"
            // (a full CI run failed so).
            let visible = try everythingVisible(postcard.bytes).map { $0.replacingOccurrences(of: page.url, with: "<page>") }
            for secret in ["Falcon", "4711", key.grouped, page.deleteToken] {
                #expect(!visible.contains { $0.contains(secret) }, "\(secret)")
            }
            let (document, spans) = try readSpans(server, page, key)
            #expect(spans == ["Falcon", "The launch code is 4711."])
            #expect(ReadingDocument.fill(document.subject, spans) == "Plan Falcon review")
            #expect(ReadingDocument.fill(document.body, spans).contains("Monday.\nThe launch code is 4711.\nBye."))
            // Letters carry the whole mail as always.
            let letter = try #require(copies.first { $0.kind == .letter && $0.recipients == ["bob@example.org"] })
            #expect(try gpgOpen(letter.bytes, as: "bob.sec.asc").output.contains("The launch code is 4711."))
            for copy in copies { #expect(!String(decoding: (try copy.bytes), as: UTF8.self).contains(key.grouped)) }
        }
    }

    @Test("when publishing fails nothing is written; without a reading server it is a clear error")
    func publishingFails() throws {
        try withGnuPGHome(importing: senderFixtures) { home throws in
            let dead = partiallyEncrypted(home, try HTTPPublisher(url: "http://127.0.0.1:9", token: "t", timeout: 2))
            #expect {
                try dead.write(try dead.prepare(try parse(mixedMailText)))
            } throws: { error in
                guard let error = error as? PipelineError, error.code == .publishFailed else { return false }
                return error.detail?.contains("cannot connect") == true
            }
            let none = partiallyEncrypted(home, nil)
            #expect(throws: PipelineError(.noPublisher)) { try none.write(try none.prepare(try parse(mixedMailText))) }
            // No postcard, or no span: nothing to publish, so no reading server is needed.
            let lettersOnly = mixedMailText.replacingOccurrences(of: "Cc: nobody@example.org\n", with: "")
            #expect(try none.process(try parse(lettersOnly)).publication == nil)
            let plain = mixedMailText.replacingOccurrences(of: "[[private]]", with: "").replacingOccurrences(of: "[[/private]]", with: "")
            #expect(try none.process(try parse(plain)).password == nil)
        }
    }

    @Test("HTML-only mails: the page's text is cut at exactly the spans the postcard hides")
    func htmlOnly() throws {
        let server = try ReadingServerProcess(extraArguments: ["--max-size", "4000"])
        defer { server.remove() }
        func html(_ body: String) -> String {
            "From: Alice <alice@example.org>\nTo: nobody@example.org\nSubject: s\nMIME-Version: 1.0\n"
                + "Content-Type: text/html; charset=utf-8\n\n<html><body>\(body)</body></html>\n"
        }
        try withGnuPGHome(importing: ["alice.sec.asc"]) { home throws in
            let pipeline = partiallyEncrypted(home, try HTTPPublisher(url: server.url, token: server.token))
            for body in ["<p>[[priv<br>ate]]TOPSECRET[[/priv<br>ate]] after</p>",
                         "<p>[[private]]TOP<br>SECRET[[/private]]</p><div>after</div>"] {
                let (_, copies, publication, password) = try pipeline.process(try parse(html(body)))
                let postcard = try #require(copies.first)
                #expect(!String(decoding: (try postcard.bytes), as: UTF8.self).contains("SECRET"), "\(body)")
                let (document, spans) = try readSpans(server, try #require(publication), try #require(password))
                #expect(!String(decoding: document.json(), as: UTF8.self).contains("SECRET"), "\(body)")
                #expect(spans.count == 1 && spans[0].contains("TOP") && spans[0].contains("SECRET"), "\(body): \(spans)")
                #expect(ReadingDocument.fill(document.body, spans).contains("after"))
            }
            // A marker in a style sheet: the rebuild drops style sheets, so the markers there
            // would pair otherwise for a reader than for mailsec; the mail is refused and
            // nothing is published (before the rebuild, the text between was published).
            let styled = html("<style>[[private]]</style>TOPSECRET<style>[[/private]]</style><p>after</p>")
            func posts() throws -> Int {
                try String(contentsOfFile: server.logPath, encoding: .utf8).components(separatedBy: "POST /api/postcards").count
            }
            let before = try posts()
            #expect(throws: PolicyError.self) { try pipeline.process(try parse(styled)) }
            #expect(try posts() == before, "nothing was published")
            // Spans only inside attributes: nothing to show, so nothing is published; the postcard is censored.
            let attribute = try pipeline.process(try parse(html("<p title=\"[[private]]ZQATTR[[/private]]\">x</p>")))
            #expect(attribute.publication == nil && attribute.password == nil)
            #expect(!String(decoding: (try attribute.copies[0].bytes), as: UTF8.self).contains("ZQATTR"))
            // A document the server refuses for good (too large) is refused, not retried for ever.
            let big = html("<p>[[private]]s[[/private]]" + String(repeating: "long text ", count: 600) + "</p>")
            #expect(throws: PipelineError.self) { try pipeline.process(try parse(big)) }
            do { _ = try pipeline.process(try parse(big)) } catch let error as PipelineError {
                guard case .publishRefused = error.code else { Issue.record("\(error)"); return }
            }
        }
    }

    @Test("a failure after publishing withdraws the publication")
    func withdrawnOnFailure() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        // Alice's public key only: the letter cannot be signed, after the spans were published.
        try withGnuPGHome(importing: ["alice.pub.asc", "bob.pub.asc"]) { home throws in
            let pipeline = partiallyEncrypted(home, try HTTPPublisher(url: server.url, token: server.token))
            #expect(throws: PipelineError.self) { try pipeline.process(try parse(mixedMailText)) }
        }
        let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
        #expect(log.contains("POST /api/postcards 201") && log.contains(" 204"), "published, then deleted")
    }

    @Test("the leak property: no span text and no password in any postcard, the server's store or its log")
    func leakProperty() throws {
        let server = try ReadingServerProcess()
        defer { server.remove() }
        let seed = UInt64(ProcessInfo.processInfo.environment["LEAK_SEED"] ?? "") ?? 20261121
        var generator = MailGenerator(random: SeededRandom(state: seed))
        var allSecrets: [String] = []
        var passwords: [String] = []
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            let pipeline = partiallyEncrypted(home, try HTTPPublisher(url: server.url, token: server.token))
            for index in 0..<25 {
                generator.secrets = []
                let text = generator.mail()
                let (_, copies, publication, password) = try pipeline.process(try MIMEMessage.parse(Array(text.utf8)))
                let key = try #require(password, "mail \(index)")
                passwords.append(key.grouped)
                allSecrets += generator.secrets
                let postcard = try #require(copies.first { $0.kind == .postcard })
                let visible = try everythingVisible(postcard.bytes)
                for secret in generator.secrets + [key.grouped] {
                    #expect(!visible.contains { $0.lowercased().contains(secret.lowercased()) },
                            "mail \(index) (seed \(seed)) leaks \(secret)")
                }
                // What the page shows after the password holds the prose spans' words.
                let (_, spans) = try readSpans(server, try #require(publication), key)
                #expect(!spans.isEmpty && spans.allSatisfy { !$0.isEmpty })
            }
        }
        server.stop()
        let stored = String(decoding: server.everythingStored(), as: UTF8.self).lowercased()
        for secret in allSecrets + passwords {
            #expect(!stored.contains(secret.lowercased()), "the server stored or logged \(secret)")
        }
    }
}

@Suite("Markers found in any encoding")
struct MarkerScanTests {
    @Test("a marker in UTF-8, Latin-1, UTF-16LE or UTF-16BE content, in any case, is found; none is not invented")
    func encodings() throws {
        func mail(_ content: Data) throws -> MIMEMessage {
            try MIMEMessage.parse(Array("From: a@example.org\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n".utf8)
                                  + Array(content.base64EncodedString().utf8) + [10])
        }
        let text = "x [[Private]]s[[/PRIVATE]] y"
        for content in [Data(text.utf8), text.data(using: .isoLatin1)!, text.data(using: .utf16LittleEndian)!,
                        text.data(using: .utf16BigEndian)!] {
            #expect(Redactor.standard.remainingMarker(in: try mail(content)) != nil)
        }
        // Broken markers, or letters with other bytes than zero between them: nothing found.
        #expect(Redactor.standard.remainingMarker(in: try mail(Data("[[privte]]".utf8))) == nil)
        // A blank inside a marker makes a near-marker, which counts (NearMarkerTests).
        #expect(Redactor.standard.remainingMarker(in: try mail(Data("[[priv ate]]".utf8))) != nil)
        #expect(Redactor.standard.remainingMarker(in: try mail(Data([0x5B, 0x01, 0x5B, 0x01]))) == nil)
    }

    @Test("content is searched in pieces: a marker anywhere in 3 MiB, across any boundary of the 1 MiB windows, in UTF-8 or in UTF-16 of either byte order (also as the last bytes), is found")
    func acrossWindows() throws {
        func mail(_ content: [UInt8]) throws -> MIMEMessage {
            try MIMEMessage.parse(Array("From: a@example.org\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n".utf8)
                                  + Array(Data(content).base64EncodedString(options: .lineLength76Characters).utf8) + [10])
        }
        let filler = [UInt8](repeating: UInt8(ascii: "x"), count: 3 << 20)
        let markers: [[UInt8]] = [Array("[[private]]".utf8), Array("[[/Private]]".utf8),
                                  Array("[[private]]".data(using: .utf16LittleEndian)!),
                                  Array("[[private]]".data(using: .utf16BigEndian)!)]
        var searched = 0
        for marker in markers {
            // Around each window boundary, at odd and even offsets, and at the very end.
            for boundary in [1 << 20, 2 << 20] {
                // UTF-16 stands at even offsets from the content's start, as real UTF-16 does.
                for shift in marker[0] == 0 || marker[1] == 0 ? [-marker.count - 2, -10, -4, 0, 2]
                    : [-marker.count - 1, -marker.count / 2, -3, 0, 1] {
                    var content = filler
                    let at = boundary + shift
                    content.replaceSubrange(at..<(at + marker.count), with: marker)
                    #expect(Redactor.standard.remainingMarker(in: try mail(content)) != nil, "at \(at)")
                    searched += 1
                }
            }
            var content = filler
            content.replaceSubrange((content.count - marker.count)..., with: marker)
            #expect(Redactor.standard.remainingMarker(in: try mail(content)) != nil, "at the end")
        }
        #expect(searched == 40)
        #expect(Redactor.standard.remainingMarker(in: try mail(filler)) == nil)
    }
}
