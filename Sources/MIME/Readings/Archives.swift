internal import CArchive

/// 7z and RAR archives (RAR 4 and 5), which their readers unpack and ``Inflation``'s walk
/// did not: a span inside one went out unread. libarchive (Debian's) reads them from
/// memory, entry by entry; its formats are limited to these two, so that zip and tar stay
/// with the walk, which reads them as their own readers do (a zip both ways, a tar's members).
final class OtherArchive {
    private let archive: OpaquePointer

    /// True when `bytes` start as a 7z or RAR archive.
    static func opens(_ bytes: UnsafeRawBufferPointer) -> Bool {
        func starts(_ prefix: [UInt8]) -> Bool { bytes.count >= prefix.count && zip(prefix, bytes).allSatisfy { $0 == $1 } }
        return starts([0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) || starts([0x52, 0x61, 0x72, 0x21, 0x1A, 0x07])
    }

    /// A reader of the archive in `bytes`, which must outlive it; nil when libarchive cannot start.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let archive = archive_read_new() else { return nil }
        self.archive = archive
        archive_read_support_format_7zip(archive)
        archive_read_support_format_rar(archive)
        archive_read_support_format_rar5(archive)
        guard archive_read_open_memory(archive, bytes.baseAddress, bytes.count) == ARCHIVE_OK else { return nil }
    }

    deinit { archive_read_free(archive) }

    /// What ``next()`` found.
    enum Entry {
        /// An entry to read (``read(into:)``); `encrypted` when its data is, which no one reads without the password.
        case entry(encrypted: Bool)
        /// No more entries.
        case end
        /// The archive cannot be read on (damaged, a method libarchive does not know, the headers encrypted).
        case failed
    }

    /// The next entry's header.
    func next() -> Entry {
        var entry: OpaquePointer?
        switch archive_read_next_header(archive, &entry) {
        case ARCHIVE_OK, ARCHIVE_WARN: return .entry(encrypted: entry.map { archive_entry_is_data_encrypted($0) != 0 } ?? false)
        case ARCHIVE_EOF: return .end
        default: return .failed
        }
    }

    /// Reads the entry's data into `buffer`: the bytes read, 0 at its end, nil when it cannot be read.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let count = archive_read_data(archive, buffer.baseAddress, buffer.count)
        return count >= 0 ? count : nil
    }
}
