internal import CGMime
internal import CMailsecShims
import Foundation

/// A GMime stream that hands every write to a closure (`mailsec_sink_stream_new`),
/// so that GMime can write a message, or decode a part, in pieces without a
/// copy of the whole in memory.
final class SinkStream {
    private final class Box {
        let body: (UnsafeRawBufferPointer) -> Void
        init(_ body: @escaping (UnsafeRawBufferPointer) -> Void) { self.body = body }
    }

    let raw: UnsafeMutablePointer<GMimeStream>
    private let box: Box

    init(_ body: @escaping (UnsafeRawBufferPointer) -> Void) {
        GMimeLibrary.initialise()
        box = Box(body)
        raw = mailsec_sink_stream_new({ bytes, length, context in
            guard let context else { return }
            Unmanaged<Box>.fromOpaque(context).takeUnretainedValue().body(UnsafeRawBufferPointer(start: bytes, count: length))
        }, Unmanaged.passUnretained(box).toOpaque())
    }

    deinit { g_object_unref(raw) }
}

/// Looks at text line by line as it passes in pieces: does some line start
/// with "From ", does some line end in white space (before its CR LF)?
/// What the canonical form must protect from mail servers (RFC 3156 §3).
struct LineScan {
    private(set) var fromLine = false
    private(set) var trailingSpace = false
    private var lineStart: [UInt8] = []   // the first bytes of the current line, up to five
    private var atLineStart = true
    private var last: UInt8 = 10          // the last byte before a CR, if any
    private var pendingCR = false

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            if byte == 10 {
                if last == 32 || last == 9 { trailingSpace = true }
                lineStart = []
                atLineStart = true
                last = 10
                pendingCR = false
                continue
            }
            if atLineStart {
                lineStart.append(byte)
                if lineStart.count == 5 {
                    if lineStart == Array("From ".utf8) { fromLine = true }
                    atLineStart = false
                }
            }
            if byte == 13 { pendingCR = true; continue }
            // A CR not before LF is part of the line.
            pendingCR = false
            last = byte
        }
    }

    /// The end of the text ends its last line too.
    mutating func finish() {
        if last == 32 || last == 9 { trailingSpace = true }
    }
}

extension MIMEEntity {
    /// Calls `body` with the decoded content of a leaf (transfer encoding
    /// removed) in pieces, never the whole at once; false for multiparts and
    /// messages, or when the content cannot be read.
    @discardableResult
    public func forEachContentPiece(_ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard mailsec_gmime_is_part(raw) != 0 else { return false }
        let part: UnsafeMutablePointer<GMimePart> = cast(raw)
        guard let wrapper = g_mime_part_get_content(part) else { return true }
        return withoutActuallyEscaping(body) { body in
            let sink = SinkStream(body)
            return g_mime_data_wrapper_write_to_stream(wrapper, sink.raw) >= 0
        }
    }

    /// Calls `body` with the decoded content of a leaf where GMime holds it, when it is held in
    /// memory as it decodes (no transfer encoding to undo, a memory stream, as a message parsed
    /// from memory or a file has it): a large text is then not copied to be read. nil when it is
    /// held otherwise; the caller reads ``content`` then.
    func withStoredContent<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T? {
        guard mailsec_gmime_is_part(raw) != 0,
              let wrapper = g_mime_part_get_content(cast(raw) as UnsafeMutablePointer<GMimePart>),
              [GMIME_CONTENT_ENCODING_DEFAULT, GMIME_CONTENT_ENCODING_7BIT, GMIME_CONTENT_ENCODING_8BIT,
               GMIME_CONTENT_ENCODING_BINARY].contains(g_mime_data_wrapper_get_encoding(wrapper)),
              let stream = g_mime_data_wrapper_get_stream(wrapper),
              g_type_check_instance_is_a(cast(stream), g_mime_stream_mem_get_type()) != 0 else { return nil }
        let memory: UnsafeMutablePointer<GMimeStreamMem> = cast(stream)
        guard let array = memory.pointee.buffer else { return nil }
        // What the data wrapper writes: the stream from its start to its end (or the array's).
        let start = Int(stream.pointee.bound_start)
        let end = stream.pointee.bound_end == -1 ? Int(array.pointee.len) : Int(stream.pointee.bound_end)
        guard start >= 0, start <= end, end <= Int(array.pointee.len) else { return nil }
        return try withExtendedLifetime(self) {
            try body(UnsafeRawBufferPointer(start: array.pointee.data.map { UnsafeRawPointer($0) + start }, count: end - start))
        }
    }

    /// The length of a leaf's content as it is stored (still transfer
    /// encoded), when GMime knows it: an upper bound of its decoded length.
    var encodedContentLength: Int? {
        guard mailsec_gmime_is_part(raw) != 0,
              let wrapper = g_mime_part_get_content(cast(raw) as UnsafeMutablePointer<GMimePart>),
              let stream = g_mime_data_wrapper_get_stream(wrapper) else { return nil }
        let length = g_mime_stream_length(stream)
        return length > 0 && length <= Int64(Int32.max) ? Int(length) : nil
    }

    /// Re-encodes the entity in place so that its canonical form is 7-bit
    /// clean and has no line a mail server might touch (see ``canonicalBytes()``).
    /// Reads each leaf in pieces, so a large part is never held whole.
    func prepareCanonicalForm() {
        g_mime_object_encode(raw, GMIME_ENCODING_CONSTRAINT_7BIT)
        for (_, entity) in walk() where mailsec_gmime_is_part(entity.raw) != 0 {
            let part: UnsafeMutablePointer<GMimePart> = cast(entity.raw)
            let encoding = g_mime_part_get_content_encoding(part)
            guard encoding != GMIME_CONTENT_ENCODING_BASE64 else { continue }
            var scan = LineScan()
            guard entity.forEachContentPiece({ scan.feed($0) }) else { continue }
            scan.finish()
            if scan.fromLine {
                g_mime_part_set_content_encoding(part, GMIME_CONTENT_ENCODING_BASE64)
            } else if encoding != GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE && scan.trailingSpace {
                g_mime_part_set_content_encoding(part, GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE)
            }
        }
    }

    /// Writes the canonical form (as ``canonicalBytes()`` returns it) to the
    /// pipe `fd` and closes it: the body streams
    /// out and is never whole in memory. The entity is re-encoded in place
    /// first. Throws when not everything could be written (the reader went
    /// away): then the reader has seen only part of it.
    public func writeCanonicalForm(to fd: Int32) throws {
        GMimeLibrary.initialise()
        // Owns fd from here on, whatever happens: closed when released, so the
        // reader always sees the end.
        let stream = g_mime_stream_pipe_new(fd)!
        defer { g_object_unref(stream) }
        prepareCanonicalForm()
        let options = g_mime_format_options_new()
        defer { g_mime_format_options_free(options) }
        g_mime_format_options_set_newline_format(options, GMIME_NEWLINE_FORMAT_DOS)
        guard g_mime_object_write_to_stream(raw, options, stream) >= 0 else {
            throw MIMEError(.io, detail: String(cString: strerror(errno)))
        }
    }

    /// A copy of this entity that shares its leaves' content (GMime's data
    /// wrappers) instead of copying it: the tree, header fields, parameters
    /// and transfer encodings are the copy's own, so changing them leaves
    /// this entity alone. Content is never changed in place here (new
    /// content replaces the wrapper), so sharing it is safe, and a 100 MB
    /// attachment costs nothing to copy. Written out, the copy is byte for
    /// byte what this entity is.
    public func copySharingContent() throws -> MIMEEntity {
        MIMEEntity(taking: try Self.shareContent(raw))
    }

    /// The entity's own header fields parsed into a new object of the same
    /// class, then its content shared, its children or message copied alike.
    ///
    /// A part whose kind its header fields alone do not tell (a part with
    /// no Content-Type inside `multipart/digest` is a message) is copied
    /// whole instead, written out and parsed again: rare, and small.
    static func shareContent(_ object: UnsafeMutablePointer<GMimeObject>) throws -> UnsafeMutablePointer<GMimeObject> {
        let header = try headerBlock(object)
        if let clone: UnsafeMutablePointer<GMimeObject> = try? withParser(header, { parser, options in
            g_mime_parser_construct_part(parser, options)
        }) {
            if kind(of: clone) == kind(of: object), headerCount(of: clone) == headerCount(of: object),
               (try? fill(clone, from: object)) != nil { return clone }
            g_object_unref(clone)
        }
        return try withParser(MIME.serialize(object, newline: .lf, hidden: [])) { parser, options in
            g_mime_parser_construct_part(parser, options)
        }
    }

    private static func kind(of object: UnsafeMutablePointer<GMimeObject>) -> Int {
        mailsec_gmime_is_part(object) != 0 ? 1 : mailsec_gmime_is_multipart(object) != 0 ? 2
            : mailsec_gmime_is_message_part(object) != 0 ? 3 : 0
    }

    /// Gives `clone`, parsed from `object`'s header fields alone, what lies
    /// below them: the content shared, children and messages copied alike.
    static func fill(_ clone: UnsafeMutablePointer<GMimeObject>, from object: UnsafeMutablePointer<GMimeObject>) throws {
        clone.pointee.ensure_newline = object.pointee.ensure_newline
        if mailsec_gmime_is_part(object) != 0 && mailsec_gmime_is_part(clone) != 0 {
            let part: UnsafeMutablePointer<GMimePart> = cast(object), copy: UnsafeMutablePointer<GMimePart> = cast(clone)
            // A part may have no content at all; GMime wants none set then.
            if let content = g_mime_part_get_content(part) { g_mime_part_set_content(copy, content) }
            // Setting the encoding rewrites the field (BASE64 becomes base64): only when it differs.
            if g_mime_part_get_content_encoding(copy) != g_mime_part_get_content_encoding(part) {
                g_mime_part_set_content_encoding(copy, g_mime_part_get_content_encoding(part))
            }
            g_mime_part_set_openpgp_data(copy, g_mime_part_get_openpgp_data(part))
        } else if mailsec_gmime_is_multipart(object) != 0 && mailsec_gmime_is_multipart(clone) != 0 {
            let multipart: UnsafeMutablePointer<GMimeMultipart> = cast(object), copy: UnsafeMutablePointer<GMimeMultipart> = cast(clone)
            while g_mime_multipart_get_count(copy) > 0 { g_mime_multipart_remove_at(copy, 0) }
            for index in 0..<g_mime_multipart_get_count(multipart) {
                guard let child = g_mime_multipart_get_part(multipart, index) else { continue }
                let childCopy = try shareContent(child)
                g_mime_multipart_add(copy, childCopy)
                g_object_unref(childCopy)
            }
            g_mime_multipart_set_prologue(copy, g_mime_multipart_get_prologue(multipart))
            g_mime_multipart_set_epilogue(copy, g_mime_multipart_get_epilogue(multipart))
            copy.pointee.write_end_boundary = multipart.pointee.write_end_boundary
        } else if mailsec_gmime_is_message_part(object) != 0 && mailsec_gmime_is_message_part(clone) != 0 {
            let part: UnsafeMutablePointer<GMimeMessagePart> = cast(object), copy: UnsafeMutablePointer<GMimeMessagePart> = cast(clone)
            // An attached message without fields is one GMime could not read
            // (it keeps the text elsewhere): the part is then copied whole.
            if let message = g_mime_message_part_get_message(part), headerCount(of: cast(message)) == 0 {
                throw MIMEError(.notParsable)
            }
            let embedded = try g_mime_message_part_get_message(part).map { try MIMEMessage.shareContent($0) }
            g_mime_message_part_set_message(copy, embedded)
            if let embedded { g_object_unref(embedded) }
        } else {
            throw MIMEError(.notParsable)
        }
    }

    /// The header section of `object` as written (`g_mime_object_get_headers`),
    /// ended by an empty line.
    static func headerBlock(_ object: UnsafeMutablePointer<GMimeObject>) throws -> [UInt8] {
        let options = g_mime_format_options_new()
        defer { g_mime_format_options_free(options) }
        g_mime_format_options_set_newline_format(options, GMIME_NEWLINE_FORMAT_UNIX)
        guard let text = g_mime_object_get_headers(object, options) else { throw MIMEError(.notParsable) }
        defer { g_free(text) }
        return Array(UnsafeRawBufferPointer(start: text, count: strlen(text))) + [10]
    }

    /// Runs GMime's parser over `bytes` and returns what `construct` made (a reference the caller owns).
    static func withParser<T>(_ bytes: [UInt8],
                              _ construct: (UnsafeMutablePointer<GMimeParser>?, OpaquePointer?) -> UnsafeMutablePointer<T>?) throws
        -> UnsafeMutablePointer<T> {
        let stream = MemoryStream(copying: bytes)
        let parser = g_mime_parser_new_with_stream(stream.raw)
        defer { g_object_unref(parser) }
        let options = g_mime_parser_options_new()
        defer { g_mime_parser_options_free(options) }
        guard let made = withExtendedLifetime(stream, { construct(parser, options) }) else {
            throw MIMEError(.notParsable)
        }
        return made
    }
}

extension MIMEMessage {
    /// Writes the message as ``serialize(newline:hiding:)`` would, handing it
    /// to `body` in pieces: never whole in memory. When `body` throws, the
    /// rest is not handed on and the error is thrown.
    public func write(newline: Newline = .lf, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var failure: (any Error)?
        withoutActuallyEscaping(body) { body in
            let sink = SinkStream { piece in
                guard failure == nil else { return }
                do { try body(piece) } catch { failure = error }
            }
            let options = g_mime_format_options_new()
            defer { g_mime_format_options_free(options) }
            g_mime_format_options_set_newline_format(options, newline == .crlf ? GMIME_NEWLINE_FORMAT_DOS : GMIME_NEWLINE_FORMAT_UNIX)
            if g_mime_object_write_to_stream(object, options, sink.raw) < 0 && failure == nil {
                failure = MIMEError(.io, detail: "the message could not be written")
            }
        }
        if let failure { throw failure }
    }

    /// A copy of this message that shares its leaves' content, as
    /// ``MIMEEntity/copySharingContent()`` does for an entity.
    public func copySharingContent() throws -> MIMEMessage {
        MIMEMessage(taking: try Self.shareContent(raw))
    }

    /// The message's header fields (its body's among them, so GMime keeps
    /// their order) parsed into a new message, whose body then gets the
    /// original body's content, shared.
    /// A message whose fields do not all come back is copied whole instead.
    static func shareContent(_ message: UnsafeMutablePointer<GMimeMessage>) throws -> UnsafeMutablePointer<GMimeMessage> {
        let header = try MIMEEntity.headerBlock(cast(message))
        if let clone: UnsafeMutablePointer<GMimeMessage> = try? MIMEEntity.withParser(header, { parser, options in
            g_mime_parser_construct_message(parser, options)
        }) {
            if headerCount(of: cast(clone)) == headerCount(of: cast(message)) {
                switch (g_mime_message_get_mime_part(message), g_mime_message_get_mime_part(clone)) {
                case (let body?, let copy?): if (try? MIMEEntity.fill(copy, from: body)) != nil { return clone }
                case (nil, nil): return clone
                default: break
                }
            }
            g_object_unref(clone)
        }
        return try MIMEEntity.withParser(MIME.serialize(cast(message), newline: .lf, hidden: [])) { parser, options in
            g_mime_parser_construct_message(parser, options)
        }
    }
}
