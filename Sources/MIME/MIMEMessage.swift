internal import CGMime
internal import CMailsecShims
import Foundation

/// An RFC 5322 message. Owns one reference to its `GMimeMessage`.
///
/// Not `Sendable`: GMime objects must stay on one thread at a time.
public final class MIMEMessage {
    let raw: UnsafeMutablePointer<GMimeMessage>

    /// Problems the parser noticed and worked around; empty for built messages.
    public private(set) var parseIssues: [ParseIssue] = []

    init(taking raw: UnsafeMutablePointer<GMimeMessage>) { self.raw = raw }

    init(borrowing raw: UnsafeMutablePointer<GMimeMessage>) {
        g_object_ref(raw)
        self.raw = raw
    }

    deinit { g_object_unref(raw) }

    var object: UnsafeMutablePointer<GMimeObject> { cast(raw) }

    // MARK: Parsing

    /// Parses a message from memory.
    /// A bare CR (not before LF) ends a line, as Python's `email` and most
    /// readers take it; GMime would read on to the next LF. Every path that
    /// parses mail comes here, so each reads such a mail the same one way
    /// (issue 21: not refused by one command and passed by another).
    public static func parse(_ bytes: [UInt8], options: ParseOptions = .standard) throws -> MIMEMessage {
        guard bytes.count <= options.maxSize else { throw MIMEError(.tooLarge, limit: options.maxSize) }
        let bytes = HeaderScan.bareCRAsLineEnds(bytes)
        try HeaderScan.refuseNUL(in: bytes)
        try HeaderScan.refuseUnboundedEncodedWords(in: bytes)
        let stream = MemoryStream(copying: bytes)
        // The parts point into the stream, which GMime keeps for them: no second copy of each.
        return try withExtendedLifetime(stream) { try parse(stream: stream.raw, persist: true, options: options) }
    }

    /// Parses the message in the file at `path` (read once, into memory).
    public static func parse(contentsOf path: String, options: ParseOptions = .standard) throws -> MIMEMessage {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw MIMEError(.io, detail: String(cString: strerror(errno))) }
        defer { close(fd) }
        return try parse(fileDescriptor: fd, options: options)
    }

    /// Parses a message read from the open file descriptor `fd` (left open),
    /// at most ``ParseOptions/maxSize`` bytes. The input is read once, into
    /// memory, and GMime parses the very bytes that were checked (NULs,
    /// encoded-words, bare CRs): a file read twice, checked from disk and then
    /// parsed from disk, could be written between the reads (through a shared
    /// memory mapping without changing its times, a hostile review found), and
    /// be parsed unchecked. Its parts point into that one buffer.
    public static func parse(fileDescriptor fd: Int32, options: ParseOptions = .standard) throws -> MIMEMessage {
        let stream = try MemoryStream(readingAll: fd, limit: options.maxSize)
        let hasBareCR = try stream.withBytes { bytes throws -> Bool in
            var survey = HeaderScan.Survey()
            survey.feed(bytes)
            survey.finish()
            // With a bare CR the line ends are made one kind first, and the checks made on that.
            if survey.hasBareCR { return true }
            // The order of ``parse(_:options:)``: the same bytes get the same error, from a file or from memory.
            if survey.hasNUL { try HeaderScan.refuseNUL(in: bytes) }
            if let unbounded = survey.unboundedEncodedWords { throw unbounded }
            return false
        }
        if hasBareCR { return try parse(stream.bytes, options: options) }
        return try withExtendedLifetime(stream) { try parse(stream: stream.raw, persist: true, options: options) }
    }

    /// What `fstat` says of a mailbox being read, which must not change
    /// between the checks made before GMime parses it (NULs, encoded-words,
    /// bare CRs) and GMime's own read: a file written meanwhile would be
    /// parsed unchecked, so it is refused instead, to be read again. A
    /// mailbox is streamed from disk, not held whole, so its bytes are read
    /// twice; a store through a shared memory mapping into a page already
    /// written leaves the times alone, and passes (a single message is read
    /// once instead: ``parse(fileDescriptor:options:)``).
    struct FileStamp: Equatable {
        private var device: UInt64 = 0, inode: UInt64 = 0, size: Int64 = 0
        private var modified = timespec(), changed = timespec()

        init(_ fd: Int32) throws {
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw MIMEError(.io, detail: String(cString: strerror(errno))) }
            self.init(info)
        }

        init(_ info: stat) {
            device = UInt64(info.st_dev); inode = UInt64(info.st_ino); size = Int64(info.st_size)
            modified = info.st_mtim; changed = info.st_ctim
        }

        /// Throws when the file behind `fd` is no longer as stamped.
        func unchanged(_ fd: Int32) throws {
            guard try FileStamp(fd) == self else { throw MIMEError(.io, detail: "the file changed while it was read") }
        }

        static func == (a: FileStamp, b: FileStamp) -> Bool {
            (a.device, a.inode, a.size) == (b.device, b.inode, b.size)
                && (a.modified.tv_sec, a.modified.tv_nsec, a.changed.tv_sec, a.changed.tv_nsec)
                == (b.modified.tv_sec, b.modified.tv_nsec, b.changed.tv_sec, b.changed.tv_nsec)
        }
    }

    /// Where a mailbox is read from: a regular file as a GMime stream bounded
    /// to the size that was checked (a file that grows meanwhile is read no
    /// further), or anything else read into memory, at most `maxSize` bytes.
    enum Source {
        case file(UnsafeMutablePointer<GMimeStream>, FileStamp)  // the caller releases the stream
        case bytes([UInt8])

        init(_ fd: Int32, options: ParseOptions, mbox: Bool) throws {
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw MIMEError(.io, detail: String(cString: strerror(errno))) }
            let stamp = FileStamp(info)
            if (info.st_mode & S_IFMT) == S_IFREG {
                let size = Int(info.st_size)
                guard size <= options.maxSize else { throw MIMEError(.tooLarge, limit: options.maxSize) }
                // One read of the file for all three signs (three reads of a 100 MB mailbox were
                // 5% of parsing it, issue 24 row 4).
                let survey = try HeaderScan.survey(ofFile: fd, size: size)
                // A file with a bare CR is read into memory, where its line ends are made one kind
                // before a NUL is placed and encoded-words counted, as for input in memory (a hostile
                // review: `\r\0` after a header line was refused from a file, a body from stdin).
                if survey.hasBareCR { self = .bytes(try HeaderScan.contents(ofFile: fd, size: size)); return }
                if survey.hasNUL { try HeaderScan.placeNUL(inFile: fd, size: size, mbox: mbox) }
                if let unbounded = survey.unboundedEncodedWords { throw unbounded }
                let own = dup(fd)
                guard own >= 0 else { throw MIMEError(.io, detail: String(cString: strerror(errno))) }
                GMimeLibrary.initialise()
                self = .file(g_mime_stream_fs_new_with_bounds(own, 0, gint64(size))!, stamp)  // owns `own` and closes it
                return
            }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw MIMEError(.io, detail: String(cString: strerror(errno)))
                }
                if count == 0 { break }
                bytes += chunk[..<count]
                guard bytes.count <= options.maxSize else { throw MIMEError(.tooLarge, limit: options.maxSize) }
            }
            self = .bytes(bytes)
        }
    }

    /// Splits an mbox file into messages (`GMIME_FORMAT_MBOX`).
    public static func parseMbox(_ bytes: [UInt8], options: ParseOptions = .standard) throws -> [MIMEMessage] {
        var messages: [MIMEMessage] = []
        try forEachInMbox(bytes, options: options) { messages.append($0) }
        return messages
    }

    /// Calls `body` with each message of an mbox in turn, so that a large
    /// mailbox is never held whole as messages: each is released when
    /// `body` returns (unless it keeps it).
    public static func forEachInMbox(_ bytes: [UInt8], options: ParseOptions = .standard,
                                     _ body: (MIMEMessage) throws -> Void) throws {
        guard bytes.count <= options.maxSize else { throw MIMEError(.tooLarge, limit: options.maxSize) }
        let bytes = HeaderScan.bareCRAsLineEnds(bytes)
        try HeaderScan.refuseNUL(in: bytes, mbox: true)
        try HeaderScan.refuseUnboundedEncodedWords(in: bytes)
        let stream = MemoryStream(copying: bytes)
        // The parts may keep pointing into the stream, which lives as long as they need.
        try withExtendedLifetime(stream) { try forEachInMbox(stream: stream.raw, persist: true, options: options, body) }
    }

    /// The same for the mbox file at `path`, read from disk as it is parsed:
    /// neither the file nor its messages are ever held whole (a pipe given
    /// by name is read into memory, at most `maxSize` bytes).
    public static func forEachInMbox(contentsOf path: String, options: ParseOptions = .standard,
                                     _ body: (MIMEMessage) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw MIMEError(.io, detail: String(cString: strerror(errno))) }
        defer { close(fd) }
        switch try Source(fd, options: options, mbox: true) {
        case .file(let stream, let stamp):
            defer { g_object_unref(stream) }
            // Every part read now: a file is not kept open for later. Each message
            // is handed on only once it is read and the file is as it was checked.
            try forEachInMbox(stream: stream, persist: false, options: options) { message in
                try stamp.unchanged(fd)
                try body(message)
            }
        case .bytes(let bytes):
            try forEachInMbox(bytes, options: options, body)
        }
    }

    private static func forEachInMbox(stream: UnsafeMutablePointer<GMimeStream>, persist: Bool, options: ParseOptions,
                                      _ body: (MIMEMessage) throws -> Void) throws {
        let parser = g_mime_parser_new_with_stream(stream)
        defer { g_object_unref(parser) }
        g_mime_parser_set_persist_stream(parser, persist ? 1 : 0)
        g_mime_parser_set_format(parser, GMIME_FORMAT_MBOX)
        var count = 0
        while g_mime_parser_eos(parser) == 0 {
            let collector = IssueCollector()
            guard let raw = collector.withParserOptions({ g_mime_parser_construct_message(parser, $0) }) else {
                // Input is left but no message could be made of it: say so
                // rather than drop the rest of the mailbox.
                if g_mime_parser_eos(parser) == 0 && count > 0 { throw MIMEError(.notParsable) }
                break
            }
            let message = MIMEMessage(taking: raw)
            message.parseIssues = collector.issues
            try message.checkLimits(options)
            count += 1
            try body(message)
        }
    }

    /// Parses the message in `stream`. A file's parts are read now (`persist`
    /// false): a part left on disk could change or vanish under us, and
    /// writing it out later would fail unnoticed. A memory stream's parts
    /// point into it (`persist`), GMime holding it for them: a 100 MB
    /// postcard parsed for its check was held twice.
    private static func parse(stream: UnsafeMutablePointer<GMimeStream>, persist: Bool, options: ParseOptions) throws -> MIMEMessage {
        let collector = IssueCollector()
        let raw = collector.withParserOptions { parserOptions in
            let parser = g_mime_parser_new_with_stream(stream)
            defer { g_object_unref(parser) }
            g_mime_parser_set_persist_stream(parser, persist ? 1 : 0)
            return g_mime_parser_construct_message(parser, parserOptions)
        }
        guard let raw else { throw MIMEError(.notParsable) }
        let message = MIMEMessage(taking: raw)
        message.parseIssues = collector.issues
        try message.checkLimits(options)
        return message
    }

    private func checkLimits(_ options: ParseOptions) throws {
        try options.check(headers: headerCount(of: object), body: body)
    }

    // MARK: Reading

    /// The top-level body entity (`g_mime_message_get_mime_part`).
    public var body: MIMEEntity? {
        g_mime_message_get_mime_part(raw).map { MIMEEntity(borrowing: $0) }
    }

    /// The message's header fields, in order, decoded.
    public var headers: [Header] { MIME.headers(of: object) }

    /// The first header named `name` (case-insensitive), decoded.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The Subject, decoded (`g_mime_message_get_subject`).
    public var subject: String? { g_mime_message_get_subject(raw).map { String(cString: $0) } }

    /// The Message-ID without angle brackets.
    public var messageID: String? { g_mime_message_get_message_id(raw).map { String(cString: $0) } }

    /// The mailboxes of an address field, groups flattened, names decoded.
    public func addresses(_ field: AddressField) -> [MailAddress] {
        guard let list = g_mime_message_get_addresses(raw, field.raw) else { return [] }
        return MailAddress.mailboxes(in: list)
    }

    // MARK: Writing

    /// Serialises the message. Header fields named in `hiding` (for example
    /// `Bcc`) are left out of the output.
    public func serialize(newline: Newline = .lf, hiding: [String] = []) -> [UInt8] {
        MIME.serialize(object, newline: newline, hidden: hiding)
    }

    /// The message as ``serialize(newline:hiding:)`` writes it, lent to `body` where GMime wrote
    /// it: a large postcard is not copied into an array to be checked and written out.
    public func withSerialized<T>(newline: Newline = .lf, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let stream = MIME.written(object, newline: newline, hidden: [])
        return try stream.withBytes(body)
    }

    // MARK: Building

    /// A new message with `body` and no headers yet (`g_mime_message_new`).
    /// GMime's "pretty headers" mode is off: it pre-creates empty header
    /// fields, which would be written out as broken empty lines.
    public convenience init(body: MIMEEntity) {
        GMimeLibrary.initialise()
        self.init(taking: g_mime_message_new(0))
        g_mime_message_set_mime_part(raw, body.raw)
    }

    /// Replaces the body.
    public func setBody(_ body: MIMEEntity) {
        g_mime_message_set_mime_part(raw, body.raw)
    }

    /// Adds mailboxes to an address field; names are encoded as needed.
    public func add(_ addresses: [MailAddress], to field: AddressField) {
        for address in addresses {
            g_mime_message_add_mailbox(raw, field.raw, address.name.isEmpty ? nil : address.name, address.address)
        }
    }

    /// Sets the Subject, encoding it (RFC 2047) when it is not plain ASCII.
    public func setSubject(_ subject: String) {
        g_mime_message_set_subject(raw, subject, "utf-8")
    }

    /// Sets a header field, replacing any of the same name; the value is
    /// encoded as needed.
    public func setHeader(_ name: String, _ value: String) {
        g_mime_object_set_header(object, name, value, "utf-8")
    }

    /// Appends a header field, keeping any of the same name; the value is
    /// encoded as needed.
    public func appendHeader(_ name: String, _ value: String) {
        g_mime_object_append_header(object, name, value, "utf-8")
    }

    /// Appends a header field written exactly as given, for values that must
    /// not be encoded (an Autocrypt key, say). `value` must be 7-bit; lines
    /// after the first are joined with `\n ` (folded) by the caller.
    public func appendRawHeader(_ name: String, _ value: String) throws {
        try MIME.appendRawHeader(to: object, name, value)
    }

    /// An independent copy of this message (written out and parsed again).
    public func copy() throws -> MIMEMessage {
        // The limits were applied when the original was parsed; its copy is not held to them again.
        try MIMEMessage.parse(serialize(newline: .lf), options: .unlimited)
    }

    /// Removes every header field named `name`.
    public func removeHeader(_ name: String) {
        while g_mime_object_remove_header(object, name) != 0 {}
    }

    /// Folds, in place, every header field with a line over 78 octets before
    /// whitespace it already has (RFC 5322 §2.2.3): the unfolded text stays
    /// the same. A field copied from a parsed mail keeps its one long line
    /// otherwise. A word longer than a line is not broken. Returns the names
    /// of the fields folded.
    @discardableResult
    public func foldLongHeaders() -> [String] {
        HeaderFolding.foldLongFields(of: object)
    }

    /// Rewrites, in place and in order, every header field whose raw value
    /// holds 8-bit bytes (raw UTF-8 in a Subject or display name, say) from
    /// its decoded value, encoded as RFC 2047 encoded-words where needed;
    /// address fields stay addresses (`g_mime_header_set_value`, which
    /// formats by the field's kind). Returns the names of the fields rewritten.
    @discardableResult
    public func encodeEightBitHeaders() -> [String] {
        guard let list = g_mime_object_get_header_list(object) else { return [] }
        var rewritten: [String] = []
        for index in 0..<g_mime_header_list_get_count(list) {
            guard let header = g_mime_header_list_get_header_at(list, index),
                  let raw = g_mime_header_get_raw_value(header),
                  strlen(raw) > 0, UnsafeBufferPointer(start: raw, count: strlen(raw)).contains(where: { UInt8(bitPattern: $0) >= 0x80 }),
                  let value = g_mime_header_get_value(header) else { continue }
            let decoded = String(cString: value)
            g_mime_header_set_value(header, nil, decoded, "utf-8")
            if let name = g_mime_header_get_name(header) { rewritten.append(String(cString: name)) }
        }
        return rewritten
    }
}

extension MailAddress {
    /// The mailboxes of an address list as written in a header field
    /// (`internet_address_list_parse`), groups flattened, names decoded.
    public static func parseList(_ text: String) -> [MailAddress] {
        GMimeLibrary.initialise()
        guard let list = internet_address_list_parse(nil, text) else { return [] }
        defer { g_object_unref(list) }
        return mailboxes(in: list)
    }

    static func mailboxes(in list: UnsafeMutablePointer<InternetAddressList>) -> [MailAddress] {
        var result: [MailAddress] = []
        for index in 0..<internet_address_list_length(list) {
            guard let address = internet_address_list_get_address(list, index) else { continue }
            let name = internet_address_get_name(address).map { String(cString: $0) } ?? ""
            if mailsec_is_address_group(address) != 0 {
                let group: UnsafeMutablePointer<InternetAddressGroup> = cast(address)
                if let members = internet_address_group_get_members(group) {
                    result += mailboxes(in: members)
                }
            } else {
                let mailbox: UnsafeMutablePointer<InternetAddressMailbox> = cast(address)
                let addr = internet_address_mailbox_get_addr(mailbox).map { String(cString: $0) } ?? ""
                result.append(MailAddress(name: name, address: addr))
            }
        }
        return result
    }
}

/// NUL bytes in header sections. GMime keeps header values as C strings, so
/// a NUL cuts a field short and can swallow the line that ends the header
/// section: what is written out is then a different message (found by
/// fuzzing). Mail may not carry NUL (RFC 5322 §2.2, §2.3), so such input is
/// refused. A header section starts the input and follows every line that
/// begins with `--` (a boundary, as far as can be told before parsing), and
/// in a mailbox every `From ` line; it ends at the first empty line.
enum HeaderScan {
    /// `bytes` with every line end an LF when there is a bare CR (one not
    /// before LF) among them: a bare CR and a CR LF alike, so the lines are of
    /// one kind (GMime reads a mix of LF and CR LF lines unevenly). One
    /// exception: after a line's last `=` (and any spaces or tabs), a run of
    /// CRs before an LF is one line end. GMime and RFC 2045's decoders take
    /// `=` CR CR LF as a quoted-printable soft line break, which joins the
    /// lines; read as a line end and an empty line it would split a marker
    /// they show whole, and the rebuild would send the span as text. The same
    /// array when there is no bare CR (nearly all mail). One pass.
    static func bareCRAsLineEnds(_ bytes: [UInt8]) -> [UInt8] {
        guard firstBareCR(bytes[...]) != nil else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == 13 else { out.append(bytes[index]); index += 1; continue }
            var end = index
            while end < bytes.count && bytes[end] == 13 { end += 1 }
            if end < bytes.count && bytes[end] == 10 && (end - index == 1 || endsInSoftBreak(out)) {
                out.append(10)      // CR LF, or `=` CR… LF: one line end
                index = end + 1
            } else {
                out.append(10)      // a bare CR ends a line
                index += 1
            }
        }
        return out
    }

    /// True when the line written so far ends in `=`, spaces and tabs aside.
    private static func endsInSoftBreak(_ out: [UInt8]) -> Bool {
        var at = out.count - 1
        while at >= 0 && (out[at] == 32 || out[at] == 9) { at -= 1 }
        return at >= 0 && out[at] == UInt8(ascii: "=")
    }

    /// Where the first CR not followed by LF stands in `bytes`, if anywhere
    /// (a CR at the very end counts: nothing follows it).
    static func firstBareCR(_ bytes: ArraySlice<UInt8>) -> Int? {
        bytes.withUnsafeBytes { firstBareCR(in: $0) }.map { bytes.startIndex + $0 }
    }

    /// The same for raw bytes, as an offset from their start.
    static func firstBareCR(in buffer: UnsafeRawBufferPointer) -> Int? {
        // memchr, not firstIndex(of:): that read a byte at a time (3% of redacting a text).
        guard let base = buffer.baseAddress else { return nil }
        var from = 0
        while from < buffer.count, let hit = memchr(base + from, 13, buffer.count - from) {
            let cr = base.distance(to: UnsafeRawPointer(hit))
            if cr + 1 == buffer.count || buffer[cr + 1] != 10 { return cr }
            from = cr + 2
        }
        return nil
    }

    /// What one read of the input, in pieces of any size, tells before it is
    /// parsed: whether it holds a NUL (to be placed by ``Lines``) or a bare
    /// CR, and whether its encoded-words would cost GMime unbounded work.
    struct Survey {
        private(set) var hasNUL = false
        private(set) var hasBareCR = false
        /// The error ``EncodedWordWork`` threw, if it did.
        private(set) var unboundedEncodedWords: (any Error)?
        private var words = EncodedWordWork()
        /// The last piece ended in a CR: bare unless the next piece starts with LF.
        private var pendingCR = false

        mutating func feed(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            if unboundedEncodedWords == nil {
                do { try words.feed(bytes) } catch { unboundedEncodedWords = error }
            }
            if !hasNUL { hasNUL = memchr(base, 0, bytes.count) != nil }
            if !hasBareCR {
                if pendingCR && bytes[0] != 10 {
                    hasBareCR = true
                } else if let cr = firstBareCR(in: bytes), cr < bytes.count - 1 {
                    hasBareCR = true
                }
                pendingCR = bytes[bytes.count - 1] == 13
            }
        }

        /// At the input's end: a CR as its last byte is a bare one.
        mutating func finish() {
            if pendingCR { hasBareCR = true }
            pendingCR = false
        }
    }

    /// The ``Survey`` of the first `size` bytes of a regular file, read once in pieces.
    static func survey(ofFile fd: Int32, size: Int) throws -> Survey {
        var survey = Survey()
        try eachPiece(ofFile: fd, size: size) { survey.feed($0); return true }
        survey.finish()
        return survey
    }

    /// The first `size` bytes of a regular file.
    static func contents(ofFile fd: Int32, size: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, size - offset, off_t(offset)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw MIMEError(.io, detail: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            offset += count
        }
        return Array(bytes[..<offset])
    }

    // A file is read whole for its NULs only when the survey found one (nearly all mail has none):
    // see ``placeNUL(inFile:size:mbox:)``.

    /// The second read of a file with a NUL: ``Lines`` finds whether one is in a header section.
    static func placeNUL(inFile fd: Int32, size: Int, mbox: Bool) throws {
        var scan = Lines(mbox: mbox)
        try eachPiece(ofFile: fd, size: size) { try scan.feed($0); return true }
    }

    /// Calls `body` with the first `size` bytes of a regular file in pieces
    /// of 1 MiB at most, until it returns false.
    static func eachPiece(ofFile fd: Int32, size: Int, _ body: (UnsafeRawBufferPointer) throws -> Bool) throws {
        guard size > 0 else { return }
        var piece = [UInt8](repeating: 0, count: min(size, 1 << 20))
        var offset = 0
        while offset < size {
            let count = piece.withUnsafeMutableBytes { pread(fd, $0.baseAddress, min($0.count, size - offset), off_t(offset)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw MIMEError(.io, detail: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            guard try piece.withUnsafeBytes({ try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) else { return }
            offset += count
        }
    }

    /// GMime decodes a header field's encoded-words as it parses the
    /// message, and for each `=?` it looks for the `?=` that ends it up to
    /// the field's end: a field of n unclosed encoded-words costs it n times
    /// the field's length (40,000 in a Subject of 600 KB: minutes of a
    /// filter's worker). Before parsing, this counts that work — for each
    /// byte, the `=?` still open before it in the same field (a line and
    /// the lines after it that start with a space or tab; bodies are
    /// counted too, which can only count more) — and refuses the input
    /// when it passes ``encodedWordWorkLimit``. Ordinary mail, a few
    /// encoded-words, each closed, counts next to nothing. One pass, in pieces.
    struct EncodedWordWork {
        private var previous: UInt8 = 10
        private var open = 0
        private(set) var work = 0

        mutating func feed(_ bytes: UnsafeRawBufferPointer) throws {
            guard let base = bytes.baseAddress else { return }
            var at = 0
            while at < bytes.count {
                // With no `=?` open, only the next `?` can change anything: it opens one
                // after `=`. memchr finds it (the byte loop was 9% of redacting a 1 MB
                // text, issue 24 row 5); the loop below reads the bytes of an open one.
                if open == 0 {
                    guard let hit = memchr(base + at, Int32(UInt8(ascii: "?")), bytes.count - at) else {
                        previous = bytes[bytes.count - 1]
                        return
                    }
                    let question = base.distance(to: UnsafeRawPointer(hit))
                    let before = question == at ? previous : bytes[question - 1]
                    previous = UInt8(ascii: "?")
                    at = question + 1
                    if before == UInt8(ascii: "=") { open = 1 }
                    continue
                }
                let byte = bytes[at]
                at += 1
                if previous == 10 && byte != 32 && byte != 9 { open = 0 }  // a new field
                if open > 0 {
                    work += open
                    if work > HeaderScan.encodedWordWorkLimit { throw MIMEError(.encodedWordsUnbounded, limit: HeaderScan.encodedWordWorkLimit) }
                }
                if previous == UInt8(ascii: "=") && byte == UInt8(ascii: "?") { open += 1 }
                else if previous == UInt8(ascii: "?") && byte == UInt8(ascii: "=") { open = 0 }
                previous = byte
            }
        }
    }

    /// The most ``EncodedWordWork`` lets through: 32 Mi bytes scanned, some
    /// tens of milliseconds of GMime's time.
    static let encodedWordWorkLimit = 1 << 25

    static func refuseUnboundedEncodedWords(in bytes: [UInt8]) throws {
        var count = EncodedWordWork()
        try bytes.withUnsafeBytes { try count.feed($0) }
    }

    static func refuseNUL(in bytes: [UInt8], mbox: Bool = false) throws {
        try bytes.withUnsafeBytes { try refuseNUL(in: $0, mbox: mbox) }
    }

    static func refuseNUL(in bytes: UnsafeRawBufferPointer, mbox: Bool = false) throws {
        guard let base = bytes.baseAddress, memchr(base, 0, bytes.count) != nil else { return }
        var scan = Lines(mbox: mbox)
        try scan.feed(bytes)
    }

    /// Follows the input line by line, in pieces of any size, and throws at
    /// the first NUL in a header section. A line that holds a NUL (and was
    /// let through, so was in a body) leaves a body behind it, unless it
    /// starts a header section itself.
    struct Lines {
        let mbox: Bool
        private var inHeader = true         // at the start of the current line
        private var length = 0              // of the current line so far
        private var start: UInt64 = 0       // its first five bytes at most, the first in the lowest byte
        private var startCount = 0
        private var endsInCR = false
        private var hasNUL = false

        init(mbox: Bool) { self.mbox = mbox }

        mutating func feed(_ bytes: UnsafeRawBufferPointer) throws {
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            func offset(_ hit: UnsafeMutableRawPointer?) -> Int? { hit.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) - base } }
            // The next NUL at or after `at`, looked for again only once `at` is past it: one
            // search per NUL, not per line (a mailbox of short lines spent 6% of its parse here).
            var nextNUL = offset(memchr(base, 0, bytes.count))
            var at = 0
            while at < bytes.count {
                let newline = offset(memchr(base + at, 10, bytes.count - at))
                let end = newline ?? bytes.count
                if end > at {
                    if !hasNUL, let nul = nextNUL, nul < end {
                        if inHeader { throw MIMEError(.nulInHeader) }
                        hasNUL = true
                    }
                    var next = at
                    while startCount < 5 && next < end {
                        start |= UInt64(base[next]) << (8 * startCount)
                        startCount += 1
                        next += 1
                    }
                    length += end - at
                    endsInCR = base[end - 1] == 13
                }
                guard newline != nil else { return }
                endLine()
                at = end + 1
                if let nul = nextNUL, nul < at { nextNUL = at < bytes.count ? offset(memchr(base + at, 0, bytes.count - at)) : nil }
            }
        }

        /// "From " as ``start`` holds it.
        private static let from: UInt64 = Array("From ".utf8).reversed().reduce(0) { $0 << 8 | UInt64($1) }

        /// At a line's end: an empty line starts a body; a line beginning
        /// with `--`, and in a mailbox one beginning with `From `, a header section.
        private mutating func endLine() {
            let count = length - (endsInCR ? 1 : 0)
            if count == 0 {
                inHeader = false
            } else if count >= 2 && start & 0xFFFF == 0x2D2D {
                inHeader = true
            } else if mbox && count >= 5 && start == Self.from {
                inHeader = true
            } else if hasNUL {
                inHeader = false
            }
            length = 0
            start = 0
            startCount = 0
            endsInCR = false
            hasNUL = false
        }
    }
}
