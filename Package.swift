// swift-tools-version: 6.0
import Foundation
import PackageDescription

// Layers, bottom up (see ../shared/STYLE.md): C system libraries, one C shim,
// one Swift wrapper per C library, the pipeline that joins them, the CLI.
let package = Package(
    name: "mailsec",
    products: [
        // One library: `import Mailsec` (Sources/Mailsec) brings the types a library user needs.
        .library(name: "Mailsec", targets: ["Mailsec"]),
        .executable(name: "mailsec", targets: ["mailsec"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // Both come with Hummingbird; named here because the server uses their types.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The HTTP client (publishing, reveal) and its TLS.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The SMTP client: sockets, DNS with every address tried, and TLS (BoringSSL).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // SQLite: the user's store (outbox …) and the reading server's documents.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Hummingbird's own: the reading server's connection limits are NIO channel handlers.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // The Prometheus exposition of the resident filter's and the reading server's metrics.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation --target Mailsec`: the DocC catalog in Sources/Mailsec (a plugin, nothing linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // PostgreSQL: the store several nodes share (key continuity, the reading server's documents).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CGPGME",
            pkgConfig: "gpgme",
            providers: [.apt(["libgpgme-dev"])]
        ),
        .systemLibrary(
            name: "CGMime",
            pkgConfig: "gmime-3.0",
            providers: [.apt(["libgmime-3.0-dev"])]
        ),
        .systemLibrary(
            name: "CGumbo",
            pkgConfig: "gumbo",
            providers: [.apt(["libgumbo-dev"])]
        ),
        // zlib: the compressed files a reader unpacks (zip, gzip, a PDF's streams) are searched inflated.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // bzip2, xz (and lzma), zstd and lzip, which readers unpack as they do zip and gzip.
        .systemLibrary(
            name: "CCompression",
            providers: [.apt(["libbz2-dev", "liblzma-dev", "libzstd-dev", "liblz-dev"])]
        ),
        // libarchive: 7z and RAR archives, which readers unpack and the walk does not.
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        .target(name: "CMailsecShims", dependencies: ["CGPGME", "CGMime"]),
        // What the operating system offers, in one place: child processes with a deadline
        // that kill their whole group, unnamed files, loopback, netlink, self-zeroing
        // secrets, digests (on swift-crypto). The only target besides the GPGME, GMime and
        // Gumbo wrappers that imports Glibc or a C module.
        .target(name: "CPlatform"),
        .target(name: "Platform", dependencies: ["CPlatform", .product(name: "Crypto", package: "swift-crypto")]),
        // Crypto: the SHA-1 checksums of GnuPG's keybox, checked before a look-up is believed.
        .target(name: "OpenPGP", dependencies: ["Platform", "CGPGME", "CMailsecShims", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "MIME", dependencies: ["CGMime", "CMailsecShims", "CZlib", "CCompression", "CArchive"]),
        // Gumbo's parse with an allocation budget (an arena it can be abandoned with).
        .target(name: "CGumboShims", dependencies: ["CGumbo"]),
        // HTML as a browser parses it (Gumbo's HTML5 tree construction), copied out as values.
        .target(name: "HTML", dependencies: ["CGumbo", "CGumboShims"]),
        // Pure Swift: decisions, plans and redaction. No C, no GnuPG.
        .target(name: "Policy"),
        // HTTP requests (http and https) through async-http-client: one
        // exchange at a time, waited for, with one deadline.
        .target(name: "HTTPRequests", dependencies: [
            "Platform",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        // Partially encrypted postcards: the password, the span blob (PBKDF2 +
        // AES-GCM, redone by the browser with WebCrypto), the published
        // document and the client that publishes it.
        .target(name: "PartialEncryption", dependencies: [
            "Platform", "HTTPRequests",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        // The Prometheus endpoint (`GET /metrics`, served by Hummingbird as the reading
        // server is) and the per-mail log line, shared by the resident filter and `mailsec serve`.
        .target(name: "Monitoring", dependencies: [
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // `mailsec serve`: the HTTP server, its SQLite store and the reading page.
        .target(name: "ReadingServer", dependencies: [
            "Platform", "PartialEncryption", "Store", "Monitoring",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
        ]),
        // Marked spans across whole messages: every reading of a message
        // (MIME/Readings) searched with the policy's markers, and redaction
        // of every field, parameter and part. No GnuPG, no crypto.
        .target(name: "Redaction", dependencies: ["MIME", "Policy", "OpenPGP", "HTML"]),
        .target(name: "Pipeline", dependencies: ["Platform", "OpenPGP", "MIME", "Policy", "Redaction", "PartialEncryption", "Settings"]),
        // The SMTP client (submission and the filter's re-injection): TLS,
        // AUTH, per-recipient results, RFC 5321 time-outs. MIME only to
        // re-encode 8-bit or long-lined mail for a server without 8BITMIME.
        .target(name: "SMTP", dependencies: [
            "Platform", "MIME",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOTLS", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        // The SMTP/LMTP server a resident filter listens with (the client is SMTP).
        .target(name: "SMTPListener", dependencies: [
            "Platform",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        // Reading mail that comes in: signatures with coverage and the From
        // check, safe decryption, Autocrypt import.
        .target(name: "Incoming", dependencies: ["OpenPGP", "MIME"]),
        // Composing: a session whose security states are the pipeline's own
        // plan, recomputed on every change; reply, forward, drafts' content.
        .target(name: "Compose", dependencies: ["Pipeline", "Policy", "OpenPGP", "MIME", "Incoming"]),
        // Every file a person edits, read in one place: filter.toml (with [listen]), config.toml
        // (with [submission]), [reading], [store] and the policy defaults. Typed keys that name
        // themselves in errors, and one error line, FILE:LINE: problem. SMTP only for the names
        // [submission] takes (SASL mechanisms, a HELO name); nothing here connects.
        .target(name: "Settings", dependencies: ["Platform", "Policy", "OpenPGP", "PartialEncryption", "SMTP", "TOMLKit"]),
        // The sendmail/Postfix filter: journal, hand-over (its configuration is Settings').
        .target(name: "Filter", dependencies: ["Platform", "Pipeline", "Policy", "OpenPGP", "MIME", "SMTP", "Settings"]),
        // The resident filter (`mailsec filter --listen`): the filter's decision
        // path behind the SMTP/LMTP listener, on worker threads; reload, drain, sd_notify.
        .target(name: "FilterDaemon", dependencies: ["Filter", "Pipeline", "OpenPGP", "SMTPListener", "Monitoring", "Settings"]),
        // The user's local store under $XDG_DATA_HOME/mailsec (SQLite, WAL):
        // the folder, the file modes and the migrations every feature adds to.
        .target(name: "Store", dependencies: ["Platform", .product(name: "GRDB", package: "GRDB.swift")]),
        // A compose session's persistence: drafts sealed to the sender's own
        // key in the store, and the outbox as where a sent mail goes.
        // Sending: the copies go into the outbox as `send` puts them there (one
        // arrangement, the password notice included, and the same SMTP check).
        .target(name: "ComposeStore", dependencies: ["Compose", "Store", "Outbox", "Contacts", "Pipeline", "OpenPGP", "Sending",
                                                     .product(name: "GRDB", package: "GRDB.swift")]),
        // The contacts in the store: addresses with names, use and key status,
        // suggestions, learning from received mail, and the CLI's key continuity.
        .target(name: "Contacts", dependencies: ["Store", "OpenPGP", "MIME", "Incoming", "Pipeline",
                                                 .product(name: "GRDB", package: "GRDB.swift")]),
        // The outbox: copies and their recipients with their states, durably.
        .target(name: "Outbox", dependencies: ["Store", .product(name: "GRDB", package: "GRDB.swift")]),
        // Sending as a person does: the password (config.toml is Settings'), the
        // delivery of the outbox, the sender's own copy, the connection state.
        .target(name: "Sending", dependencies: ["Platform", "Outbox", "Store", "Settings", "Pipeline", "Policy", "OpenPGP", "MIME",
                                                "PartialEncryption", "SMTP", "Contacts",
                                                .product(name: "GRDB", package: "GRDB.swift")]),
        // The library's one product: the entry point (Outgoing) and the targets a library user imports through it.
        .target(name: "Mailsec", dependencies: ["Compose", "ComposeStore", "Incoming", "MIME", "OpenPGP", "Pipeline", "Policy",
                                                "Sending", "Settings"]),
        // The shared store on PostgreSQL (`[store] url = "postgres://…"`): the same protocols as
        // the local stores (key continuity, the reading server's documents), for several nodes.
        // A target, not a product: only the CLI links it (and with it postgres-nio).
        .target(name: "SharedStore", dependencies: [
            "Platform", "Pipeline", "ReadingServer", "Settings", "Sending", "Filter",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(
            name: "mailsec",
            dependencies: [
                "SharedStore", "Platform", "OpenPGP", "MIME", "Pipeline", "Policy", "Filter", "FilterDaemon", "PartialEncryption", "ReadingServer", "Incoming", "HTTPRequests",
                "Settings", "Store", "Outbox", "Sending", "Contacts", "Compose", "ComposeStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // In-process measurements for scripts/bench (parsing, redaction).
        // The HTML rebuild on standard input, for GrowthTests' instruction counts under callgrind.
        .executableTarget(name: "html-rebuild-probe", dependencies: ["Redaction", "Policy"]),
        .executableTarget(name: "mailsec-bench", dependencies: ["MIME", "Policy"], path: "Benchmarks/Harness"),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "OpenPGPTests", dependencies: ["OpenPGP", "CGPGME", "Platform", "TestSupport"]),
        .testTarget(name: "MIMETests", dependencies: ["MIME", "Platform", "TestSupport"]),
        .testTarget(name: "PlatformTests", dependencies: ["Platform", "TestSupport"]),
        .testTarget(name: "PolicyTests", dependencies: ["Policy", "TestSupport"]),
        // The HTML rebuild: Gumbo's reading of hostile HTML, the allow-list, spans across nodes, one reading.
        .testTarget(name: "HTMLRebuildTests", dependencies: ["HTML", "Redaction", "Policy", "TestSupport"], exclude: ["chromium_text.py"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline", "Policy", "Redaction", "OpenPGP", "MIME", "PartialEncryption",
                                                         "HTTPRequests", "TestSupport"], exclude: ["flowed_reader.py"]),
        .testTarget(name: "FilterTests", dependencies: ["Filter", "Pipeline", "Platform", "Policy", "OpenPGP", "MIME", "TestSupport", "SharedStore", "Settings"]),
        .testTarget(name: "FilterDaemonTests", dependencies: ["FilterDaemon", "HTTPRequests", "Filter", "Pipeline", "OpenPGP", "SMTPListener", "SMTP",
                                                             "TestSupport", "SharedStore", "Settings", "Monitoring"]),
        .testTarget(name: "SMTPTests", dependencies: ["SMTP", "MIME", "Platform", "TestSupport"], exclude: ["Peers"]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport"]),
        // The library as a user meets it: the getting-started article's code, built and run.
        .testTarget(name: "MailsecTests", dependencies: ["Mailsec", "TestSupport"]),
        .testTarget(name: "ComposeTests", dependencies: ["Compose", "ComposeStore", "Contacts", "Store", "Outbox", "Pipeline", "PartialEncryption", "Policy", "OpenPGP", "MIME", "Incoming", "TestSupport"]),
        .testTarget(name: "IncomingTests", dependencies: ["Incoming", "OpenPGP", "MIME", "TestSupport"]),
        // What the fuzz targets check, as a library the regression tests run too.
        .target(name: "MailsecFuzzChecks", dependencies: ["MIME", "Policy", "Redaction", "Incoming", "Filter", "Sending", "Settings",
                                                          "PartialEncryption"],
                path: "Fuzz/Checks"),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["MailsecFuzzChecks", "MIME", "TestSupport"]),
        .testTarget(name: "PartialEncryptionTests", dependencies: [
            "PartialEncryption", "HTTPRequests", "Platform", "TestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        // Issue 12 A as an attacker: hostile mails through the built CLI, every copy read by GMime and Python.
        .testTarget(name: "AdversarialTests", dependencies: ["MIME", "TestSupport"], exclude: ["mail_views.py", "hostile_classes.py", "adversarial_e2e.py"]),
        .testTarget(name: "ReadingServerTests", dependencies: ["ReadingServer", "PartialEncryption", "HTTPRequests", "Platform", "TestSupport",
                                                                .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "OutboxTests", dependencies: ["Outbox", "Store", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "SMTPListenerTests", dependencies: ["SMTPListener", "TestSupport"], exclude: ["Clients"]),
        .testTarget(name: "ContactsTests", dependencies: ["Contacts", "Store", "OpenPGP", "MIME", "Pipeline", "Incoming", "Policy", "TestSupport"]),
        .testTarget(name: "SharedStoreTests", dependencies: ["SharedStore", "Pipeline", "ReadingServer", "Settings", "Platform", "TestSupport"]),
        // Every configuration file as Settings reads it: filter.toml, [listen], config.toml.
        .testTarget(name: "SettingsTests", dependencies: ["Settings", "Policy", "Sending", "SMTP", "TestSupport"]),
        .testTarget(name: "SendingTests", dependencies: ["Sending", "Outbox", "Store", "Settings", "SMTP", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer executables exist only for scripts/fuzz (MAILSEC_FUZZ=1): they
// have no main of their own and link only with -sanitize=fuzzer.
if ProcessInfo.processInfo.environment["MAILSEC_FUZZ"] == "1" {
    package.targets.append(.target(name: "FuzzDriver", path: "Fuzz/Driver"))
    for name in ["ParseAndWalk", "Redaction", "Structure", "FilterConfig", "UserConfig", "ReadingDocument"] {
        package.targets.append(.executableTarget(name: "Fuzz" + name, dependencies: ["FuzzDriver", "MailsecFuzzChecks"],
                                                 path: "Fuzz/" + name))
    }
}
