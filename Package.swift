// swift-tools-version: 6.0
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
        .executable(name: "mailsec", targets: ["mailsec"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
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
        .target(name: "CMailsecShims", dependencies: ["CGPGME", "CGMime"]),
        .target(name: "OpenPGP", dependencies: ["CGPGME", "CMailsecShims"]),
        .target(name: "MIME", dependencies: ["CGMime", "CMailsecShims"]),
        // Pure Swift: decisions, plans and redaction. No C, no GnuPG.
        .target(name: "Policy"),
        .target(name: "Pipeline", dependencies: ["OpenPGP", "MIME", "Policy"]),
        // The sendmail/Postfix filter: configuration, journal, hand-over.
        .target(name: "Filter", dependencies: ["Pipeline", "Policy", "OpenPGP", "MIME", "TOMLKit"]),
        .executableTarget(
            name: "mailsec",
            dependencies: [
                "OpenPGP", "MIME", "Pipeline", "Policy", "Filter",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "OpenPGPTests", dependencies: ["OpenPGP", "TestSupport"]),
        .testTarget(name: "MIMETests", dependencies: ["MIME", "TestSupport"]),
        .testTarget(name: "PolicyTests", dependencies: ["Policy"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline", "Policy", "OpenPGP", "MIME", "TestSupport"]),
        .testTarget(name: "FilterTests", dependencies: ["Filter", "Pipeline", "Policy", "OpenPGP", "MIME", "TestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
