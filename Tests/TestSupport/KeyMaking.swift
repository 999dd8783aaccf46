import Foundation

/// Keys made for a test in a GnuPG home (no passphrase, ed25519 with a
/// cv25519 encryption subkey), at a faked time when asked: how the key-change
/// tests make rotations, certifications and expired keys without fixtures.
extension TemporaryGnuPGHome {
    private func quiet(_ arguments: [String], at time: String?) throws -> ProcessResult {
        try gpg(["--pinentry-mode", "loopback", "--passphrase", ""] + (time.map { ["--faked-system-time", $0 + "!"] } ?? []) + arguments)
    }

    /// Makes a key for `userID` (`Name <address>`) as if at `time`
    /// (`20200101T000000`; nil: now); returns its fingerprint.
    public func makeKey(_ userID: String, at time: String? = nil, expires: String = "never") throws -> String {
        let made = try quiet(["--status-fd", "1", "--quick-gen-key", userID, "future-default", "default", expires], at: time)
        guard let line = made.output.split(separator: "\n").first(where: { $0.contains("KEY_CREATED") }),
              let fingerprint = line.split(separator: " ").last else {
            throw FixtureError(message: "gpg --quick-gen-key failed: \(made.errors)")
        }
        return String(fingerprint)
    }

    /// Certifies every user ID of `key` with `signer` (exportable, class 0x10), as if at `time`.
    public func certify(_ key: String, by signer: String, at time: String? = nil) throws {
        let signed = try quiet(["-u", signer, "--quick-sign-key", key], at: time)
        guard signed.status == 0 else { throw FixtureError(message: "gpg --quick-sign-key failed: \(signed.errors)") }
    }

    /// Sets the expiry of `key`'s primary key to `date` (`2020-12-31`), as if at `time`.
    public func setExpiry(_ key: String, _ date: String, at time: String? = nil) throws {
        let set = try quiet(["--quick-set-expire", key, date], at: time)
        guard set.status == 0 else { throw FixtureError(message: "gpg --quick-set-expire failed: \(set.errors)") }
    }

    /// The public keys `fingerprints`, binary.
    public func export(_ fingerprints: [String]) throws -> [UInt8] {
        let exported = try gpg(["--export"] + fingerprints)
        guard exported.status == 0, !exported.stdout.isEmpty else { throw FixtureError(message: "gpg --export failed: \(exported.errors)") }
        return exported.stdout
    }

    /// Imports `keys` (from ``export(_:)`` of another home) with the gpg command line.
    public func importKeys(_ keys: [UInt8]) throws {
        let imported = try gpg(["--import"], input: keys)
        guard imported.status == 0 else { throw FixtureError(message: "gpg --import failed: \(imported.errors)") }
    }
}
