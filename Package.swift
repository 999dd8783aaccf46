// swift-tools-version: 6.0
import Foundation
import PackageDescription

// Layers, bottom up (see ../shared/STYLE.md): C system libraries, one C shim,
// one Swift wrapper per C library, the pipeline that joins them, the CLI.
let package = Package(
    name: "mailsec",
    products: [
        .library(name: "OpenPGP", targets: ["OpenPGP"]),
        .library(name: "MIME", targets: ["MIME"]),
        .library(name: "Policy", targets: ["Policy"]),
        .library(name: "Pipeline", targets: ["Pipeline"]),
        .library(name: "Filter", targets: ["Filter"]),
        .library(name: "Incoming", targets: ["Incoming"]),
        .library(name: "PartialEncryption", targets: ["PartialEncryption"]),
        .library(name: "ReadingServer", targets: ["ReadingServer"]),
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
        // Hummingbird's own: the reading server's connection limits are NIO channel handlers.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
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
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "CMailsecShims", dependencies: ["CGPGME", "CGMime"]),
        // Crypto: the SHA-1 checksums of GnuPG's keybox, checked before a look-up is believed.
        .target(name: "OpenPGP", dependencies: ["CGPGME", "CMailsecShims", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "MIME", dependencies: ["CGMime", "CMailsecShims"]),
        // Pure Swift: decisions, plans and redaction. No C, no GnuPG.
        .target(name: "Policy"),
        // Partially encrypted postcards: the password, the span blob (PBKDF2 +
        // AES-GCM, redone by the browser with WebCrypto), the published
        // document and the client that publishes it.
        .target(name: "PartialEncryption", dependencies: [
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        // `mailsec serve`: the HTTP server, its SQLite store and the reading page.
        .target(name: "ReadingServer", dependencies: [
            "PartialEncryption", "CSQLite",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
        ]),
        .target(name: "Pipeline", dependencies: ["OpenPGP", "MIME", "Policy", "PartialEncryption"]),
        // Reading mail that comes in: signatures with coverage and the From
        // check, safe decryption, Autocrypt import.
        .target(name: "Incoming", dependencies: ["OpenPGP", "MIME"]),
        // The sendmail/Postfix filter: configuration, journal, hand-over.
        .target(name: "Filter", dependencies: ["Pipeline", "Policy", "OpenPGP", "MIME", "TOMLKit"]),
        .executableTarget(
            name: "mailsec",
            dependencies: [
                "OpenPGP", "MIME", "Pipeline", "Policy", "Filter", "PartialEncryption", "ReadingServer", "Incoming",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // In-process measurements for scripts/bench (parsing, redaction).
        .executableTarget(name: "mailsec-bench", dependencies: ["MIME", "Policy"], path: "Benchmarks/Harness"),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "OpenPGPTests", dependencies: ["OpenPGP", "TestSupport"]),
        .testTarget(name: "MIMETests", dependencies: ["MIME", "TestSupport"]),
        .testTarget(name: "PolicyTests", dependencies: ["Policy"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline", "Policy", "OpenPGP", "MIME", "PartialEncryption", "TestSupport"]),
        .testTarget(name: "FilterTests", dependencies: ["Filter", "Pipeline", "Policy", "OpenPGP", "MIME", "TestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport"]),
        .testTarget(name: "IncomingTests", dependencies: ["Incoming", "OpenPGP", "MIME", "TestSupport"]),
        // What the fuzz targets check, as a library the regression tests run too.
        .target(name: "MailsecFuzzChecks", dependencies: ["MIME", "Policy", "Incoming"], path: "Fuzz/Checks"),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["MailsecFuzzChecks", "MIME", "TestSupport"]),
        .testTarget(name: "PartialEncryptionTests", dependencies: [
            "PartialEncryption", "TestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        .testTarget(name: "ReadingServerTests", dependencies: ["ReadingServer", "PartialEncryption", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer executables exist only for scripts/fuzz (MAILSEC_FUZZ=1): they
// have no main of their own and link only with -sanitize=fuzzer.
if ProcessInfo.processInfo.environment["MAILSEC_FUZZ"] == "1" {
    package.targets.append(.target(name: "FuzzDriver", path: "Fuzz/Driver"))
    for name in ["ParseAndWalk", "Redaction", "Structure"] {
        package.targets.append(.executableTarget(name: "Fuzz" + name, dependencies: ["FuzzDriver", "MailsecFuzzChecks"],
                                                 path: "Fuzz/" + name))
    }
}
