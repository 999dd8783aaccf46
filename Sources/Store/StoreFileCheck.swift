import Foundation
import Synchronization

/// Checks a store's files before SQLite opens them, for the two kinds of
/// damage SQLite itself takes in silence:
///
/// - an empty database file is, to SQLite, a new database: the outbox would
///   read as empty and every queued mail be forgotten. A store that exists is
///   never made anew (a new one is made whole under another name and linked
///   into place, see ``LocalStore``), so an empty file is damage;
/// - a WAL whose frames fail their checksums is cut off at the first bad
///   frame when SQLite recovers it (sqlite.org/fileformat2.html#walformat,
///   "WAL reset"), and the transactions after it — queued mails — are lost
///   without a word. Recovery runs when no process has the store open; then
///   the WAL is read here first: its header, and each frame's salts and
///   cumulative checksum. It is damage when the shared-memory index
///   (`-shm`, left behind by the processes that had the store open) says more
///   frames were committed than the WAL still holds intact, when the header
///   itself is broken, or when an intact frame of this WAL follows a broken
///   one. (A last frame torn by a crash, with no index that says it was
///   committed, is what SQLite is built to drop: a transaction never
///   reported done.)
///
/// On damage the store is not opened at all, so SQLite discards nothing; a
/// copy of the WAL is kept aside (`-wal.damaged`) all the same, since the
/// person may open the store with another tool.
enum StoreFileCheck {
    static func check(_ file: String) throws(LocalStoreError) {
        let bytes = try read(file, limit: 100)
        guard let bytes else { return }  // no store yet
        guard !bytes.isEmpty else {
            throw LocalStoreError(.damaged, "the store \(file) is empty (damaged); it is not made anew: restore it from a backup, "
                                  + "or move it away to start an empty store")
        }
        guard bytes.count >= 100, bytes.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw LocalStoreError(.damaged, "the store \(file) is not an SQLite database (damaged); restore it from a backup")
        }
        try checkWAL(file)
    }

    /// The file's first `limit` bytes (nil when there is no file), or all of it.
    static func read(_ path: String, limit: Int? = nil) throws(LocalStoreError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw LocalStoreError(.damaged, "cannot read the store file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw LocalStoreError(.damaged, "the store file \(path) is not a regular file")
        }
        let count = min(Int(info.st_size), limit ?? Int.max)
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes[offset...].withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw LocalStoreError(.damaged, "cannot read the store file \(path)") }
            offset += got
        }
        return bytes
    }

    /// What the shared-memory index says was committed: frames and the WAL's salts.
    struct Index: Equatable {
        var frames: Int
        var salts: [UInt8]
    }

    /// Stores this process has open: SQLite shares one index between them
    /// and recovers nothing while one is open, and a look at a WAL another
    /// thread is writing could catch it half way.
    static let openHere = Mutex([String: Int]())

    /// One open store, counted in ``openHere`` from its init to its deinit.
    final class OpenHere: Sendable {
        let file: String
        init(_ file: String) {
            self.file = file
            openHere.withLock { $0[file, default: 0] += 1 }
        }
        deinit {
            openHere.withLock { open in
                open[file, default: 1] -= 1
                if open[file] == 0 { open[file] = nil }
            }
        }
    }

    static func checkWAL(_ file: String) throws(LocalStoreError) {
        let walPath = file + "-wal", shmPath = file + "-shm"
        // A process that has the store open holds a read lock on the index's
        // "DMS" byte (128): then SQLite reads that index and does not recover.
        // (A lock of this process is not seen by F_GETLK: `openHere` is.)
        if openHere.withLock({ $0[file, default: 0] > 0 }) || isInUse(shmPath) { return }
        var found: (problem: String, wal: [UInt8])?
        // Looked at twice: a process that opened the store meanwhile may have
        // been writing it while it was read.
        for attempt in 0..<2 {
            if attempt > 0 { usleep(50_000) }
            guard let wal = try read(walPath), !wal.isEmpty else { return }
            guard let problem = Self.problem(wal: wal, shm: try? read(shmPath, limit: 136)) else { return }
            found = (problem, wal)
        }
        guard let (problem, wal) = found else { return }
        let aside = walPath + ".damaged"
        if access(aside, F_OK) != 0 {
            let fd = open(aside, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                _ = wal.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                fsync(fd)
                close(fd)
            }
        }
        throw LocalStoreError(.damaged, "the store's WAL \(walPath) is damaged (\(problem)); the store is not opened, "
                              + "so nothing in it is dropped: restore the folder from a backup (a copy of the WAL is in \(aside))")
    }

    /// What is wrong with `wal`, given the index `shm` (nil: none left); nil when nothing is.
    static func problem(wal: [UInt8], shm: [UInt8]?) -> String? {
        let index = shm.flatMap(Self.index)
        let walk = walkFrames(wal)
        if let index, index.frames > 0 {
            if walk.salts != index.salts { return "its header does not match the index of committed frames" }
            if walk.valid < index.frames { return "\(index.frames) frames were committed, \(walk.valid) are intact" }
            // Every committed frame is intact; frames past them were never committed. A
            // transaction that spilled pages before its commit rewrites a frame in place and
            // the checksums after it at commit: killed in between, it leaves a broken frame
            // with intact ones behind it, and SQLite's recovery drops them as it should
            // (submission-e2e's kill -9 during DATA: the outbox was refused as damaged).
            return nil
        }
        if walk.salts == nil { return "its header is broken" }
        // Without the index, a frame with intact ones after it is the one sign of damage
        // inside committed frames that a torn last write does not leave.
        if walk.intactAfterBroken { return "frame \(walk.valid + 1) fails its checksum, later frames do not" }
        return nil
    }

    static func isInUse(_ shm: String) -> Bool {
        let fd = open(shm, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 128
        lock.l_len = 1
        return fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != Int16(F_UNLCK)
    }

    /// The wal-index header (two equal copies of 48 bytes, native byte order):
    /// `mxFrame` at 16, the salts at 32.
    static func index(_ shm: [UInt8]) -> Index? {
        guard shm.count >= 96, Array(shm[0..<48]) == Array(shm[48..<96]) else { return nil }
        func native32(_ at: Int) -> Int {
            Int(UInt32(shm[at]) | UInt32(shm[at + 1]) << 8 | UInt32(shm[at + 2]) << 16 | UInt32(shm[at + 3]) << 24)
        }
        guard native32(0) == 3_007_000, shm[12] == 1 else { return nil }  // iVersion, isInit
        return Index(frames: native32(16), salts: Array(shm[32..<40]))
    }

    /// Walks the WAL's frames as SQLite's recovery does.
    static func walkFrames(_ wal: [UInt8]) -> (salts: [UInt8]?, valid: Int, intactAfterBroken: Bool) {
        func be32(_ at: Int) -> UInt32 {
            UInt32(wal[at]) << 24 | UInt32(wal[at + 1]) << 16 | UInt32(wal[at + 2]) << 8 | UInt32(wal[at + 3])
        }
        guard wal.count >= 32 else { return (nil, 0, false) }
        let magic = be32(0)
        guard magic == 0x377F_0682 || magic == 0x377F_0683, be32(4) == 3_007_000 else { return (nil, 0, false) }
        let bigEndian = magic & 1 == 1
        let pageSize = Int(be32(8))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return (nil, 0, false) }
        func word(_ at: Int) -> UInt32 {
            bigEndian ? be32(at) : UInt32(wal[at]) | UInt32(wal[at + 1]) << 8 | UInt32(wal[at + 2]) << 16 | UInt32(wal[at + 3]) << 24
        }
        func checksum(_ range: Range<Int>, _ start: (UInt32, UInt32)) -> (UInt32, UInt32) {
            var (s0, s1) = start
            var at = range.lowerBound
            while at < range.upperBound {
                s0 = s0 &+ word(at) &+ s1
                s1 = s1 &+ word(at + 4) &+ s0
                at += 8
            }
            return (s0, s1)
        }
        let header = checksum(0..<24, (0, 0))
        guard header == (be32(24), be32(28)) else { return (nil, 0, false) }
        let salts = Array(wal[16..<24])
        var running = header
        var valid = 0, frame = 0, broken = false, intactAfterBroken = false
        var offset = 32
        while offset + 24 + pageSize <= wal.count {
            let sameSalts = Array(wal[(offset + 8)..<(offset + 16)]) == salts
            if !broken {
                let sum = checksum((offset + 24)..<(offset + 24 + pageSize), checksum(offset..<(offset + 8), running))
                if sameSalts && sum == (be32(offset + 16), be32(offset + 20)) {
                    running = sum
                    valid += 1
                } else {
                    broken = true
                }
            } else if sameSalts {
                // Whether this frame's own checksum would hold cannot be known
                // without the chain; a frame of this WAL after a broken one is
                // enough: a torn last write leaves none behind it.
                intactAfterBroken = true
            }
            frame += 1
            offset += 24 + pageSize
        }
        return (salts, valid, intactAfterBroken)
    }
}
