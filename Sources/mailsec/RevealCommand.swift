import ArgumentParser
import Filter
import Foundation
import HTTPRequests
import PartialEncryption
import Pipeline
import ReadingServer

struct RevealCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reveal",
        abstract: "Read a partially encrypted postcard's private parts, as its reading page does.",
        discussion: """
            Fetches the document at URL (the link in the postcard, https://…/r/ID or http://), \
            derives the key from the password and prints the From, Subject and text with the \
            private parts filled in. The password is read from --password-from, else from the \
            first line of standard input (asked for without echo on a terminal).

            \(ExitStatus.section([
                (.success, "the private parts were printed"),
                (.usage, "usage error: not a reading page address, an empty password"),
                (.dataError, "the server's answer is not a reading document"),
                (.noInput, "the password file cannot be read; the page does not exist (expired, deleted)"),
                (.refused, "wrong password"),
                (.temporary, "the server cannot be reached, its certificate is not trusted, or anything unexpected"),
            ]))
            """
    )

    @Option(help: ArgumentHelp("Read the password from this file (its first line).", valueName: "file"))
    var passwordFrom: String?

    @Option(help: ArgumentHelp("Trust the CA certificates in this PEM file (instead of the system's) for https.",
                               valueName: "file"))
    var caFile: String?

    @Argument(help: ArgumentHelp("The reading page's address, as in the postcard.", valueName: "url"))
    var url: String

    func validate() throws {
        do { _ = try DocumentFetcher(pageURL: url) } catch { throw ValidationError(error.description) }
    }

    func run() throws {
        let fetcher: DocumentFetcher
        do { fetcher = try DocumentFetcher(pageURL: url, caFile: caFile) } catch { throw ValidationError(error.description) }
        let typed: String
        if let passwordFrom {
            typed = String(decoding: try readSmallFile(passwordFrom), as: UTF8.self)
                .split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        } else if isatty(STDIN_FILENO) != 0, let entered = getpass("password: ") {
            typed = String(cString: entered)
        } else {
            typed = readLine() ?? ""
        }
        let trimmed = typed.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {  // before any network use
            throw ValidationError("no password given (on standard input, or --password-from FILE)")
        }
        guard let password = SpanPassword(typed: trimmed) else {
            throw CommandFailure("wrong password", status: .refused)
        }
        let document: ReadingDocument
        do { document = try fetcher.fetch() } catch {
            throw CommandFailure(error.description, status: error.status == 404 ? .noInput : error.status == 200 ? .dataError : .temporary)
        }
        let spans = try SpanBlob(base64URL: document.blob).open(password: password)
        var text = "From: \(ReadingDocument.fill(document.from, spans))\n"
        text += "Subject: \(ReadingDocument.fill(document.subject, spans))\n\n"
        text += ReadingDocument.fill(document.body, spans)
        let placed = Set((document.from + document.subject + document.body).compactMap { segment -> Int? in
            if case .span(let number) = segment { return number }
            return nil
        })
        for (index, span) in spans.enumerated() where !placed.contains(index + 1) {
            text += "\n[#\(index + 1)] \(span)"
        }
        try writeOutput(Array((text.hasSuffix("\n") ? text : text + "\n").utf8), to: nil)
    }
}
