import ArgumentParser
import Filter
import Foundation
import HTTPRequests
import PartialEncryption
import Pipeline
import ReadingServer
import Settings
import SharedStore

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
            throw CommandFailure("cannot create \(passwordTo): \(errno == EEXIST ? "it exists already" : reason(errno))",
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

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the reading pages of partially encrypted postcards.",
        discussion: """
            Stores published postcards (text with numbered places and the encrypted spans; never \
            the password or the span text) in an SQLite file and serves the reading page at \
            /r/ID, which decrypts in the browser. Binds to 127.0.0.1: put a TLS proxy in front \
            and give its address with --public-url. Prints 'listening on URL' once ready; one \
            line per request on standard error. Stops on SIGTERM or SIGINT. POST /api/postcards \
            answers 201 {id, url, deleteToken, expires}; errors are {error}.

            \(ExitStatus.section([
                (.success, "stopped by a signal"),
                (.usage, "usage error, or a publish token shorter than 16 characters"),
                (.noInput, "the token file cannot be read"),
                (.cannotCreate, "the store cannot be opened or made"),
                (.config, "the --store-config file's [store] table is unusable"),
                (.temporary, "the address cannot be bound, or anything unexpected"),
            ]))
            """
    )

    @Option(help: ArgumentHelp("Address to bind.", valueName: "address"))
    var listen = "127.0.0.1"

    @Option(help: ArgumentHelp("Port to bind; 0 picks a free one.", valueName: "port"))
    var port = 8080

    @Option(help: ArgumentHelp("The address readers use, e.g. https://read.example.org (default: http://ADDRESS:PORT).",
                               valueName: "url"))
    var publicURL: String?

    @Option(help: ArgumentHelp("File with the token publishers must present.", valueName: "file"))
    var tokenFile: String

    @Option(help: ArgumentHelp("Largest document accepted: bytes, or with K, M or G (default 1M).", valueName: "size"))
    var maxSize = ByteSize(bytes: 1 << 20)

    @Option(help: ArgumentHelp("Days a published page lives, at most.", valueName: "days"))
    var lifetimeDays = 30

    @Option(help: ArgumentHelp("The SQLite file of published postcards (created 0600).", valueName: "file"))
    var store = "/var/lib/mailsec/reading.sqlite"

    @Option(help: ArgumentHelp("A TOML file whose [store] table names the PostgreSQL database several servers share "
                               + "(url, password_file or password_command, ...; see filter.toml(5)); instead of --store.",
                               valueName: "file"))
    var storeConfig: String?

    @Option(help: ArgumentHelp("Seconds a client has to send a whole request; slower ones are cut off.", valueName: "seconds"))
    var requestTimeout = 10

    @Option(help: ArgumentHelp("Seconds an open connection may stay idle.", valueName: "seconds"))
    var idleTimeout = 30

    @Option(help: ArgumentHelp("Connections served at once (more wait to be accepted).", valueName: "count"))
    var maxConnections = 256

    @Option(help: ArgumentHelp("Connections at once from one client address (more are closed at once).", valueName: "count"))
    var maxConnectionsPerAddress = 32

    @Option(help: ArgumentHelp("Serve Prometheus metrics at http://ADDRESS:PORT/metrics (:PORT for 127.0.0.1; "
                               + "[IPv6]:PORT); off by default. Prints 'metrics on URL' once ready.", valueName: "address:port"))
    var metricsListen: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        try check("--lifetime-days", lifetimeDays, in: Limits.days)
        _ = try maxSize.validate("--max-size")
        try check("--request-timeout", requestTimeout, in: Limits.seconds)
        try check("--idle-timeout", idleTimeout, in: Limits.seconds)
        try check("--max-connections", maxConnections, in: 1...65_536)
        try check("--max-connections-per-address", maxConnectionsPerAddress, in: 1...65_536)
        if let metricsListen {
            do { _ = try ListenConfig.address(metricsListen) } catch { throw ValidationError("--metrics-listen: \(error.description)") }
        }
        if let publicURL, !(publicURL.hasPrefix("https://") || publicURL.hasPrefix("http://")) {
            throw ValidationError("--public-url must start with https:// or http://")
        }
    }

    func run() throws {
        let token = String(decoding: try readSmallFile(tokenFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.utf8.count >= 16 else { throw CommandFailure("the publish token in \(tokenFile) is shorter than 16 characters", status: .usage) }
        var configuration = ReadingServerConfiguration(host: listen, port: port, storePath: store, publishToken: token,
                                                       publicURL: publicURL, lifetime: lifetimeDays * 86400,
                                                       maximumDocument: maxSize.bytes ?? 1 << 20)
        configuration.limits = ConnectionLimits(requestTimeout: .seconds(requestTimeout), idleTimeout: .seconds(idleTimeout),
                                                maximumConnections: maxConnections, maximumPerAddress: maxConnectionsPerAddress)
        configuration.metrics = try metricsListen.map { try ListenConfig.address($0) }
        let server: ReadingServer
        let log: @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data((Self.timestamp() + " " + line + "\n").utf8))
        }
        if let storeConfig {
            // The shared store: nothing connects until the first request (or the purge at start, which then fails with 75).
            let settings: StoreSettings?
            do { settings = try StoreSettings.read(TOMLKeys(try TOMLKeys.document(String(decoding: try readSmallFile(storeConfig), as: UTF8.self)), "")) }
            catch let error as ConfigError { throw CommandFailure("\(storeConfig): \(error.description)", status: .config) }
            guard let settings else { throw CommandFailure("\(storeConfig): no [store] table", status: .config) }
            do { server = ReadingServer(configuration: configuration, store: try SharedStore.documents(settings), log: log) } catch {
                throw CommandFailure(error.description, status: .temporary)
            }
        } else { do {
            server = try ReadingServer(configuration: configuration, log: log)
        } catch {
            // 73 when the file cannot be made, 75 for a busy or damaged one (StoreError's own status).
            throw CommandFailure("cannot open the store \(store): \(error.description)", status: error.exitStatus)
        } }
        let host = listen
        let metricsHost = configuration.metrics.map { $0.host.contains(":") ? "[\($0.host)]" : $0.host } ?? host
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                try await server.run(onListening: { port in
                    FileHandle.standardOutput.write(Data("listening on http://\(host):\(port)\n".utf8))
                }, onMetrics: { port in
                    FileHandle.standardOutput.write(Data("metrics on http://\(metricsHost):\(port)/metrics\n".utf8))
                })
            } catch {
                outcome.set("cannot serve on \(host):\(configuration.port): \(error)")
            }
            done.signal()
        }
        done.wait()
        if let failure = outcome.get() { throw CommandFailure(failure, status: .temporary) }
    }

    static func timestamp() -> String { ISO8601DateFormatter().string(from: Date()) }

    /// The server task's failure, read once the task is over.
    final class Outcome: @unchecked Sendable {
        // Written by the server task before it signals, read after the wait.
        private var message: String?
        func set(_ text: String) { message = text }
        func get() -> String? { message }
    }
}

struct Reveal: ParsableCommand {
    static let configuration = CommandConfiguration(
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
