import ArgumentParser
import Filter
import Foundation
import HTTPRequests
import PartialEncryption
import Platform
import Pipeline
import ReadingServer

/// Where partially encrypted postcards publish, and where their password goes.
struct ReadingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The reading server to publish to: http://host:port of a 'mailsec serve' on this machine "
                               + "(plain http to loopback only), or https:// through its TLS proxy (TLS 1.2 or later).", valueName: "url"))
    var publishURL: String?

    @Option(help: ArgumentHelp("For an https --publish-url: trust the CA certificates in this PEM file instead of the system's.",
                               valueName: "file"))
    var publishCAFile: String?

    @Option(help: ArgumentHelp("File with the server's publish token (default: $MAILSEC_PUBLISH_TOKEN).",
                               valueName: "file"))
    var publishTokenFile: String?

    @Option(help: ArgumentHelp("Days the reading page lives (default: the server's, at most its limit).",
                               valueName: "days"))
    var lifetimeDays: Int?

    @Option(help: ArgumentHelp("Write the reading page's password to this new private file (0600) instead of standard error.",
                               valueName: "file"))
    var passwordTo: String?

    func validate() throws {
        if let lifetimeDays { try check("--lifetime-days", lifetimeDays, in: Limits.days) }
        if let publishURL {
            do { _ = try HTTPEndpoint(publishURL) } catch { throw ValidationError("--publish-url \(publishURL): \(error.description)") }
        }
        if publishCAFile != nil && publishURL == nil { throw ValidationError("--publish-ca-file needs --publish-url") }
    }

    func publisher() throws -> (any SpanPublisher)? {
        guard let publishURL else { return nil }
        let token: String
        if let publishTokenFile {
            token = String(decoding: try readSmallFile(publishTokenFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } else if let fromEnvironment = ProcessInfo.processInfo.environment["MAILSEC_PUBLISH_TOKEN"] {
            token = fromEnvironment
        } else {
            throw ValidationError("--publish-url needs --publish-token-file or MAILSEC_PUBLISH_TOKEN")
        }
        do { return try HTTPPublisher(url: publishURL, token: token, caFile: publishCAFile) } catch {
            throw ValidationError(error.description)
        }
    }

    /// Creates the `--password-to` file (new, 0600) before anything is
    /// published, so that a path that cannot be made fails early; nil without
    /// the option.
    func openPasswordFile() throws -> Int32? {
        guard let passwordTo else { return nil }
        let fd = open(passwordTo, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CommandFailure("cannot create \(passwordTo): \(errno == EEXIST ? "it exists already" : errnoReason(errno))",
                                 status: .cannotCreate)
        }
        return fd
    }

    /// Removes the password file made by `openPasswordFile` when it is not
    /// used (no publication, or a failure).
    func discardPasswordFile(_ fd: Int32?) {
        guard let fd, let passwordTo else { return }
        close(fd)
        unlink(passwordTo)
    }

    /// Gives the password to the sender (the one running the command): into
    /// the password file when there is one, else on standard error; a
    /// password file that cannot be written falls back to standard error, so
    /// the password is never lost. It is in no copy and no manifest.
    func hand(_ password: SpanPassword, _ publication: Publication, file fd: Int32?) {
        var lines = ["mailsec: the postcard's private parts are at \(publication.url) until \(publication.expires)"]
        var written = false
        if let fd {
            let bytes = Array((password.grouped + "\n").utf8)
            written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
            close(fd)
            if !written, let passwordTo { unlink(passwordTo) }
        }
        if !written { lines.append("mailsec: password: \(password.grouped)") }
        lines.append("mailsec: give the password to the postcard's recipients by phone or messenger, never by mail")
        lines.append("mailsec: to delete the page: curl -X DELETE -H 'Authorization: Bearer \(publication.deleteToken)' "
                     + publication.url.replacingOccurrences(of: "/r/", with: "/api/postcards/"))
        FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }
}
