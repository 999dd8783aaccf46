import Crypto
import Foundation

/// The public keyring cannot be read in full: a key look-up in it cannot be
/// trusted, since a key it hides would look like a missing key. Always
/// temporary: a filter defers (75), the CLI exits 75.
public struct KeyringError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The keyring file (or where it should be).
    public let path: String
    /// What is wrong, without any key material.
    public let problem: String

    /// One line naming the file and the problem.
    public var description: String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let what = name == "trustdb.gpg" ? "trust database" : name == "gpg.conf" ? "GnuPG configuration"
            : name.hasPrefix("pubring") || name == "public-keys.d" ? "public keyring" : "GnuPG home"
        return "the \(what) \(path) is damaged (\(problem)); restore it from a backup (keys could not be looked up)"
    }
}

/// Checks a GnuPG home's public keyring before its look-up is believed.
///
/// GnuPG 2.2 reports keyring damage to nobody who asks through GPGME: with an
/// empty, truncated or bit-flipped `pubring.kbx`, `gpg --list-keys` prints
/// `keydb_search failed` on stderr (no status line, sometimes an
/// `ERROR keylist.getkey 9`, which is also what a plain missing key gives),
/// exits 2, and lists the keys before the damage. GPGME's
/// `gpgme_op_keylist_next` then ends in a normal EOF and `truncated` is 0 (tried
/// on GPGME 1.18, Debian 12). So the file is checked here instead:
///
/// - `pubring.kbx`: a 32-byte header blob (`KBXf`, version 1), then blobs whose
///   lengths add up to the file's size exactly, each of a known type, each
///   with the SHA-1 checksum GnuPG writes over it (blobs written before
///   GnuPG 2.1 carry none or MD5, and are taken as they are). GnuPG deletes
///   a key by setting its blob's type byte to 0 in place, so a flip of that
///   one byte to 0 looks exactly like a deleted key: key continuity is what
///   catches that, and a keyring cut exactly between two blobs;
/// - `pubring.gpg` (only when there is no `pubring.kbx`): a sequence of
///   OpenPGP packets whose lengths add up to the file's size, starting with a
///   public key; a flipped bit inside a packet is not found (the format has no
///   checksum);
/// - anything else in place of the file (a folder, a socket), a file that
///   cannot be read, and an empty file, are damage. No keyring file at all is a
///   new, empty home (gpg makes an empty one itself);
/// - `trustdb.gpg`: gpg reads it for every key it lists (the validity), and
///   with it unreadable, garbled or a folder gpg dies after part of the
///   listing (`Fatal: … invalid trustdb`, exit 2, no status line), which
///   GPGME again ends in a plain EOF. It is a sequence of 40-byte records: a
///   version record (type 1, `gpg`, version 3) whose hash table and free list
///   point at records that exist, then records of known types only. An empty
///   one is damage too: gpg makes a new one silently, and every validity
///   (ownertrust) is lost with it. No file at all is a new home;
/// - `gpg.conf`: anything but a readable regular file (gpg loops for ever on a
///   folder there, printing read errors): checked before the listing starts;
/// - keyboxd's `public-keys.d/pubring.db` (GnuPG 2.4): a non-empty SQLite file.
///
/// What a check of the files cannot see (a record of the trust database
/// damaged inside its fields) gpg meets while it lists: it then writes a
/// `FAILURE` (or `ERROR`) status line, which ``GnuPG`` watches for.
package enum KeyringCheck {
    /// The home gpg uses for `home`: itself, `$GNUPGHOME`, or `~/.gnupg`.
    static func resolvedHome(_ home: String?) -> String {
        if let home { return home }
        if let env = getenv("GNUPGHOME"), env.pointee != 0 { return String(cString: env) }
        return NSHomeDirectory() + "/.gnupg"
    }

    /// Throws ``KeyringError`` when a file the home's key look-up depends on
    /// is damaged: the public keyring, the trust database, `gpg.conf`.
    package static func check(home: String?) throws(KeyringError) {
        try checkBeforeListing(home: home)
        try checkContents(home: home)
    }

    /// What must hold before gpg is started at all: `gpg.conf` is a readable
    /// regular file or absent (gpg never ends on a folder there); the trust
    /// database and keyboxd's files are sound (gpg writes a new trust
    /// database over an empty one as it starts: a check beside it could
    /// read that one instead of the damage).
    static func checkBeforeListing(home: String?) throws(KeyringError) {
        let folder = resolvedHome(home)
        let conf = folder + "/gpg.conf"
        if exists(conf) { _ = try contents(conf) }
        let trustdb = folder + "/trustdb.gpg"
        if exists(trustdb) { try checkTrustDatabase(try contents(trustdb), path: trustdb) }
        let keyboxd = folder + "/public-keys.d"
        if exists(keyboxd) {
            var info = stat()
            guard stat(keyboxd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw KeyringError(path: keyboxd, problem: "not a folder")
            }
            let database = keyboxd + "/pubring.db"
            if exists(database) {
                let bytes = try contents(database)
                guard bytes.count >= 100, bytes.starts(with: Array("SQLite format 3\0".utf8)) else {
                    throw KeyringError(path: database, problem: "not an SQLite database")
                }
            }
        }
    }

    /// The keyring's contents (checked while gpg lists).
    static func checkContents(home: String?) throws(KeyringError) {
        let folder = resolvedHome(home)
        let kbx = folder + "/pubring.kbx", legacy = folder + "/pubring.gpg"
        if exists(kbx) {
            try checkKeybox(try contents(kbx), path: kbx)
        } else if exists(legacy) {
            try checkPackets(try contents(legacy), path: legacy)
        }
    }

    /// The trust database's records (GnuPG's `tdbio.c`): 40 bytes each; the
    /// first the version record; every record of a known type.
    static func checkTrustDatabase(_ bytes: [UInt8], path: String) throws(KeyringError) {
        let size = 40
        guard !bytes.isEmpty else { throw KeyringError(path: path, problem: "empty file") }
        guard bytes.count % size == 0 else { throw KeyringError(path: path, problem: "cut off at byte \(bytes.count - bytes.count % size)") }
        guard bytes[0] == 1, Array(bytes[1..<4]) == Array("gpg".utf8), bytes[4] == 3 else {
            throw KeyringError(path: path, problem: "the version record is missing")
        }
        func be32(_ at: Int) -> Int {
            Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        }
        let records = bytes.count / size
        let firstFree = be32(28), hashTable = be32(36)
        guard firstFree < records, hashTable < records, hashTable == 0 || bytes[hashTable * size] == 10 else {
            throw KeyringError(path: path, problem: "the version record points past the records")
        }
        // Unused (0), hash table (10), hash list (11), trust (12), valid (13), free (254).
        for record in 1..<records where ![0, 10, 11, 12, 13, 254].contains(bytes[record * size]) {
            throw KeyringError(path: path, problem: "record \(record) has an unknown type")
        }
    }

    /// Runs `listing` (a gpg key listing) while the keyring is checked on
    /// another thread, and returns its result only once the check passed: the
    /// listing's gpg process starts without waiting for the check, and a
    /// damaged keyring throws ``KeyringError`` whatever the listing gave
    /// (also when it failed: the damage is the reason to report).
    package static func checking<T>(home: String?, while listing: () throws -> T) throws -> T {
        try checkBeforeListing(home: home)
        let check = try Background { try KeyringCheck.checkContents(home: home) }
        let listed = Result { try listing() }
        _ = try check.wait().get()
        return try listed.get()
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 || errno != ENOENT
    }

    /// The file's bytes, read with plain system calls so that every failure is seen.
    static func contents(_ path: String) throws(KeyringError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            // A symbolic link is followed by gpg: follow it here too, once.
            let retry = errno == ELOOP ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1
            guard retry >= 0 else { throw KeyringError(path: path, problem: "cannot be opened: \(String(cString: strerror(errno)))") }
            defer { close(retry) }
            return try read(retry, path)
        }
        defer { close(fd) }
        return try read(fd, path)
    }

    private static func read(_ fd: Int32, _ path: String) throws(KeyringError) -> [UInt8] {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw KeyringError(path: path, problem: "not a regular file")
        }
        // Not zeroed first: every byte is read over (a keyring of 10,000 keys is 4 MB).
        var failure: KeyringError?
        let bytes = [UInt8](unsafeUninitializedCapacity: Int(info.st_size)) { buffer, count in
            var offset = 0
            while offset < buffer.count {
                let got = Glibc.read(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if got < 0 && errno == EINTR { continue }
                guard got >= 0 else {
                    failure = KeyringError(path: path, problem: "read error: \(String(cString: strerror(errno)))")
                    break
                }
                guard got > 0 else { failure = KeyringError(path: path, problem: "shorter than its size"); break }
                offset += got
            }
            // What was not read is not handed out (a short read throws below).
            if offset < buffer.count { (buffer.baseAddress! + offset).initialize(repeating: 0, count: buffer.count - offset) }
            count = buffer.count
        }
        if let failure { throw failure }
        return bytes
    }

    static func checkKeybox(_ bytes: [UInt8], path: String) throws(KeyringError) {
        func be32(_ at: Int) -> Int {
            Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        }
        guard !bytes.isEmpty else { throw KeyringError(path: path, problem: "empty file") }
        guard bytes.count >= 32, be32(0) == 32, bytes[4] == 1, bytes[5] == 1, Array(bytes[8..<12]) == Array("KBXf".utf8) else {
            throw KeyringError(path: path, problem: "the keybox header is missing")
        }
        var offset = 32
        var blob = 1
        while offset < bytes.count {
            guard bytes.count - offset >= 5 else { throw KeyringError(path: path, problem: "cut off at byte \(offset)") }
            let length = be32(offset)
            guard length >= 5, length <= bytes.count - offset else {
                throw KeyringError(path: path, problem: "blob \(blob) at byte \(offset) runs past the end")
            }
            let type = bytes[offset + 4]
            guard type == 0 || type == 2 || type == 3 else {
                throw KeyringError(path: path, problem: "blob \(blob) at byte \(offset) has an unknown type")
            }
            guard length >= 40 else { throw KeyringError(path: path, problem: "blob \(blob) at byte \(offset) too short") }
            guard blobChecksumHolds(bytes, at: offset, length: length) else {
                throw KeyringError(path: path, problem: "blob \(blob) at byte \(offset) fails its checksum")
            }
            offset += length
            blob += 1
        }
    }

    /// True when the blob of `length` bytes at `offset` carries no SHA-1
    /// checksum (all zero: none; four zero bytes first: MD5 of GnuPG before
    /// 2.1) or the one over its bytes. Hashed where it lies, the type byte fed
    /// in apart: GnuPG deletes a key by setting its blob's type to 0 in place,
    /// and the checksum is still the one made with the type it had (OpenPGP or X.509).
    static func blobChecksumHolds(_ bytes: [UInt8], at offset: Int, length: Int) -> Bool {
        bytes.withUnsafeBytes { file in
            let blob = UnsafeRawBufferPointer(rebasing: file[offset..<(offset + length)])
            let sum = UnsafeRawBufferPointer(rebasing: blob[(length - 20)...])
            guard sum.contains(where: { $0 != 0 }), sum.prefix(4).contains(where: { $0 != 0 }) else { return true }
            let type = blob[4]
            return (type == 0 ? [2, 3] : [type]).contains { (original: UInt8) in
                var hasher = Insecure.SHA1()
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: blob[..<4]))
                withUnsafeBytes(of: original) { hasher.update(bufferPointer: $0) }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: blob[5..<(length - 20)]))
                return hasher.finalize().withUnsafeBytes { $0.elementsEqual(sum) }
            }
        }
    }

    static func checkPackets(_ bytes: [UInt8], path: String) throws(KeyringError) {
        guard !bytes.isEmpty else { throw KeyringError(path: path, problem: "empty file") }
        var offset = 0
        var first = true
        while offset < bytes.count {
            let start = offset
            let header = bytes[offset]
            guard header & 0x80 != 0 else { throw KeyringError(path: path, problem: "no packet at byte \(start)") }
            let tag: Int
            var length: Int
            offset += 1
            func need(_ count: Int) throws(KeyringError) {
                guard bytes.count - offset >= count else { throw KeyringError(path: path, problem: "cut off at byte \(start)") }
            }
            if header & 0x40 != 0 {
                tag = Int(header & 0x3F)
                try need(1)
                let octet = Int(bytes[offset])
                if octet < 192 { length = octet; offset += 1 }
                else if octet < 224 { try need(2); length = (octet - 192) << 8 + Int(bytes[offset + 1]) + 192; offset += 2 }
                else if octet == 255 {
                    try need(5)
                    length = Int(bytes[offset + 1]) << 24 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 8
                        | Int(bytes[offset + 4])
                    offset += 5
                } else { throw KeyringError(path: path, problem: "partial length in a keyring at byte \(start)") }
            } else {
                tag = Int(header >> 2) & 0x0F
                let kind = header & 3
                guard kind != 3 else { throw KeyringError(path: path, problem: "indeterminate length at byte \(start)") }
                let size = 1 << Int(kind)
                try need(size)
                length = 0
                for index in 0..<size { length = length << 8 | Int(bytes[offset + index]) }
                offset += size
            }
            // Key material, user IDs, signatures and GnuPG's ring trust packets only.
            guard [2, 6, 12, 13, 14, 17].contains(tag), !first || tag == 6 else {
                throw KeyringError(path: path, problem: "unexpected packet at byte \(start)")
            }
            guard length <= bytes.count - offset else { throw KeyringError(path: path, problem: "cut off at byte \(start)") }
            offset += length
            first = false
        }
    }
}
