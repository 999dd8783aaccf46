import Foundation
import OpenPGP
import Platform
import Synchronization

/// Why the node's keyring could not be brought to a revision, in one line
/// (a path, a fingerprint, a revision; never key material).
package struct KeyringSyncError: Error, Sendable, CustomStringConvertible {
    /// One line.
    package let description: String
    /// The node's own folders failed (a full disk, a read-only file system),
    /// not the published rows: the same rows may apply once that is mended.
    package let local: Bool
    /// A failure with `description`.
    package init(_ description: String, local: Bool = false) {
        self.description = description
        self.local = local
    }
}

/// The resident filter's GnuPG home as the keys published in the shared
/// store keep it (issue 25): `gnupg_home` is a symbolic link to the current
/// *generation*, a complete home in the folder `gnupg_home + ".keys"`.
///
/// A change is never made in the home mails are using. ``apply(_:)`` copies
/// the current generation beside it (keyring, trust database, the secret
/// keys the filter signs with, gpg.conf), imports and deletes the published
/// changes there with GPGME, checks every one, writes the revision into it
/// (``revisionFile``, durably), and only then swaps the link with one
/// `rename`. A failure at any step removes the new generation and leaves the
/// current one as it was. Each mail takes the current generation's path
/// once, at its start (``enter()``), and uses that home for every gpg it
/// starts, so a mail sees one whole keyring, the old or the new, never a
/// mix, and never waits for a sync. A generation that was replaced is
/// removed (its gpg-agent stopped) once no mail holds it (``sweep()``).
///
/// The revision applied last lives in the generation itself, so it is
/// always the keyring's own: after a restart the node goes on from it.
package final class NodeKeyring: Sendable {
    /// `gnupg_home`: the link mails and the administrator's gpg use.
    package let link: String
    /// Where the generations are (0700).
    package let generations: String
    /// The file in a generation that holds its revision.
    package static let revisionFile = "mailsec-key-revision"

    private struct State {
        var current: String
        var revision: Int64
        /// Mails in progress per generation path.
        var leases: [String: Int] = [:]
    }
    private let state: Mutex<State>
    /// One change of the generations at a time: ``apply(_:)`` and ``sweep()``
    /// (which would take a generation being built for one left over).
    private let changing = NSLock()

    /// Takes over the home at `home`: a folder becomes the first generation
    /// (`r0`, revision 0) with `home` a link to it; a link made before is
    /// followed. Generations left by an earlier run that are not the current
    /// one (a sync cut off by a crash) are removed.
    package init(home: String) throws(KeyringSyncError) {
        link = home
        generations = home + ".keys"
        var info = stat()
        guard lstat(home, &info) == 0 else { throw KeyringSyncError("gnupg_home \(home): \(OSError(errno))") }
        if mkdir(generations, 0o700) != 0 && errno != EEXIST {
            throw KeyringSyncError("cannot make \(generations): \(OSError(errno))")
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            // Once, before any mail: the folder moves into the generations and a link takes its place.
            let first = generations + "/r0"
            guard rename(home, first) == 0 else { throw KeyringSyncError("cannot move \(home) to \(first): \(OSError(errno))") }
            guard symlink(first, home) == 0 else {
                let failure = OSError(errno)
                _ = rename(first, home)
                throw KeyringSyncError("cannot link \(home) to \(first): \(failure)")
            }
        }
        guard let target = Self.target(of: home) else { throw KeyringSyncError("gnupg_home \(home) is neither a folder nor a link to one") }
        let revision = Self.revision(in: target)
        state = Mutex(State(current: target, revision: revision))
        // Left by a run that stopped half way through a sync: never the current one.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: generations)) ?? [] {
            let path = generations + "/" + name
            if path != target { Self.remove(path) }
        }
    }

    /// The revision the current generation holds (0: none applied yet).
    package var revision: Int64 { state.withLock { $0.revision } }

    /// The current generation's path (for tests and logs).
    package var current: String { state.withLock { $0.current } }

    /// The home a mail starting now uses from start to end; give it back with ``leave(_:)``.
    package func enter() -> String {
        state.withLock { state in
            state.leases[state.current, default: 0] += 1
            return state.current
        }
    }

    /// The mail that took `path` with ``enter()`` is done with it.
    package func leave(_ path: String) {
        state.withLock { state in
            let left = (state.leases[path] ?? 1) - 1
            state.leases[path] = left > 0 ? left : nil
        }
    }

    /// Brings the keyring to the last of `rows` (in revision order, all
    /// after ``revision``) as one change: all of them or none. Each
    /// published key must import as exactly that fingerprint, public only;
    /// each removal deletes its key (one that is not there is no change).
    /// Returns the revision now applied.
    @discardableResult
    package func apply(_ rows: [PublishedKey]) throws(KeyringSyncError) -> Int64 {
        changing.lock()
        defer { changing.unlock() }
        let (current, revision) = state.withLock { ($0.current, $0.revision) }
        guard let last = rows.last?.revision else { return revision }
        guard rows.allSatisfy({ $0.revision > revision }) else {
            throw KeyringSyncError("published keys: revisions out of order (\(revision) applied)")
        }
        let next = generations + "/r\(last).\(UInt32.random(in: 0...UInt32.max))"
        do throws(KeyringSyncError) {
            try Self.copy(current, to: next)
            let gnupg = GnuPG(home: next)
            for row in rows {
                try Self.apply(row, to: gnupg)
            }
            do { try DurableFile.replace(next + "/" + Self.revisionFile, with: Array("\(last)\n".utf8)) } catch {
                throw KeyringSyncError("cannot write the revision in \(next): \(error)", local: true)
            }
            try Self.syncTree(next)
            // The swap: a new link, renamed over the old one in one step.
            let swap = link + ".swap.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
            guard symlink(next, swap) == 0 else { throw KeyringSyncError("cannot make a link beside \(link): \(OSError(errno))", local: true) }
            guard rename(swap, link) == 0 else {
                let failure = OSError(errno)
                unlink(swap)
                throw KeyringSyncError("cannot swap \(link): \(failure)", local: true)
            }
            Self.syncFolder(of: link)
        } catch {
            Self.remove(next)
            throw error
        }
        state.withLock { state in
            state.current = next
            state.revision = last
        }
        removeUnused()
        return last
    }

    /// Removes every generation that is not the current one and that no
    /// mail holds: those replaced, and any a failed removal left.
    package func sweep() {
        changing.lock()
        defer { changing.unlock() }
        removeUnused()
    }

    private func removeUnused() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: generations)) ?? []
        let unused = state.withLock { state in
            names.map { generations + "/" + $0 }.filter { $0 != state.current && state.leases[$0] == nil }
        }
        for path in unused { Self.remove(path) }
    }

    /// One published row applied to the home of `gnupg`: a removal deletes
    /// its key; a key must import as exactly its fingerprint, public only.
    /// (`mailsec keys publish` tries each key so in a scratch home first: a
    /// key gpg refuses is never published to stop every node.)
    package static func apply(_ row: PublishedKey, to gnupg: GnuPG) throws(KeyringSyncError) {
        let name = "revision \(row.revision) (\(row.fingerprint))"
        guard GnuPG.isFingerprint(row.fingerprint) else { throw KeyringSyncError("published keys: \(name): not a fingerprint") }
        guard let armor = row.armor else {
            do { _ = try gnupg.deleteKey(row.fingerprint.uppercased()) } catch {
                throw KeyringSyncError("published keys: \(name): cannot remove it (\(error))")
            }
            return
        }
        let summary: ImportSummary
        do { summary = try gnupg.importKeys(Array(armor.utf8)) } catch {
            throw KeyringSyncError("published keys: \(name): refused (\(error))")
        }
        guard summary.secretRead == 0 else { throw KeyringSyncError("published keys: \(name): refused (it holds a secret key)") }
        let imported = Set(summary.fingerprints.map { $0.uppercased() })
        guard imported == [row.fingerprint.uppercased()] else {
            throw KeyringSyncError("published keys: \(name): refused (its key data is not that key alone)")
        }
    }

    /// The folder `link` points to, or `link` itself when it is a folder.
    static func target(of link: String) -> String? {
        var info = stat()
        guard lstat(link, &info) == 0 else { return nil }
        if info.st_mode & S_IFMT == S_IFDIR { return link }
        guard info.st_mode & S_IFMT == S_IFLNK, let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link) else {
            return nil
        }
        let path = target.hasPrefix("/") ? target : (link as NSString).deletingLastPathComponent + "/" + target
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return path
    }

    /// The revision a generation holds; 0 when it holds none.
    static func revision(in folder: String) -> Int64 {
        guard let data = FileManager.default.contents(atPath: folder + "/" + revisionFile),
              let number = Int64(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
              number >= 0 else { return 0 }
        return number
    }

    /// Copies the home `from` into the new folder `to` (0700), its files 0600:
    /// folders and regular files only (no agent sockets), and no lock files.
    private static func copy(_ from: String, to: String) throws(KeyringSyncError) {
        guard mkdir(to, 0o700) == 0 else { throw KeyringSyncError("cannot make \(to): \(OSError(errno))", local: true) }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: from) else {
            throw KeyringSyncError("cannot read \(from)", local: true)
        }
        for name in names where !name.hasPrefix(".#lk") && !name.hasSuffix(".lock") && name != revisionFile {
            let source = from + "/" + name, target = to + "/" + name
            var info = stat()
            guard lstat(source, &info) == 0 else { continue }  // gone meanwhile (a gpg's temporary)
            switch info.st_mode & S_IFMT {
            case S_IFDIR: try copy(source, to: target)
            case S_IFREG:
                guard let data = FileManager.default.contents(atPath: source) else {
                    throw KeyringSyncError("cannot read \(source)", local: true)
                }
                // Synced with the rest of the generation (syncTree), after gpg's own changes.
                do { try DurableFile.writeNew(Array(data), to: target, sync: false) } catch {
                    throw KeyringSyncError("cannot write \(target): \(error)", local: true)
                }
            default: continue
            }
        }
    }

    /// fsync of every file and folder of a new generation before it is swapped in.
    private static func syncTree(_ folder: String) throws(KeyringSyncError) {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? []
        for path in [folder] + names.map({ folder + "/" + $0 }) {
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if fd < 0 { continue }  // a socket gpg made meanwhile
            defer { close(fd) }
            guard fsync(fd) == 0 else { throw KeyringSyncError("cannot sync \(path): \(OSError(errno))", local: true) }
        }
    }

    private static func syncFolder(of path: String) {
        let fd = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    /// Stops the agent of the home at `path`, if one runs, and removes the home.
    package static func remove(_ path: String) {
        for gpgconf in ["/usr/bin/gpgconf", "/bin/gpgconf"] where access(gpgconf, X_OK) == 0 {
            if case .success(let pid) = ChildProcess.spawn(gpgconf, ["gpgconf", "--homedir", path, "--kill", "gpg-agent"],
                                                           stdin: .null, stdout: .null, stderr: .null, ownGroup: false) {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            }
            break
        }
        // An agent that is still ending may add a file while the folder is removed: tried again, a few times.
        for _ in 0..<20 {
            try? FileManager.default.removeItem(atPath: path)
            var info = stat()
            if lstat(path, &info) != 0 { return }
            usleep(50_000)
        }
    }
}
