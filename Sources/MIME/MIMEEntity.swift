internal import CGMime
internal import CMailsecShims
import Foundation

/// Line endings for serialised output.
public enum Newline: Sendable {
    /// `\n`, as stored in files and Maildirs.
    case lf
    /// `\r\n`, the canonical form on the wire and for signatures (RFC 3156).
    case crlf
}

/// One MIME entity: a leaf part, a multipart, or an embedded `message/rfc822`
/// part. Owns one reference to its `GMimeObject`.
///
/// Not `Sendable`: GMime objects must stay on one thread at a time.
public final class MIMEEntity {
    let raw: UnsafeMutablePointer<GMimeObject>

    /// Takes over a reference the caller owns.
    init(taking raw: UnsafeMutablePointer<GMimeObject>) { self.raw = raw }

    /// Retains an object GMime only lends us (transfer none).
    init(borrowing raw: UnsafeMutablePointer<GMimeObject>) {
        g_object_ref(raw)
        self.raw = raw
    }

    deinit { g_object_unref(raw) }

    /// What kind of entity this is.
    public enum Kind: Sendable, Equatable {
        case leaf, multipart, message
    }

    /// Multipart, message part or leaf (`GMIME_IS_MULTIPART`, `GMIME_IS_MESSAGE_PART`).
    public var kind: Kind {
        if mailsec_gmime_is_multipart(raw) != 0 { return .multipart }
        if mailsec_gmime_is_message_part(raw) != 0 { return .message }
        return .leaf
    }

    /// The media type and its parameters.
    public var contentType: ContentType { ContentType(g_mime_object_get_content_type(raw)) }

    /// The header fields of this entity, in order.
    public var headers: [Header] { MIME.headers(of: raw) }

    /// The first header named `name` (case-insensitive), decoded.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The children of a multipart, or the body of an embedded message;
    /// empty for a leaf.
    public var children: [MIMEEntity] {
        switch kind {
        case .multipart:
            let multipart: UnsafeMutablePointer<GMimeMultipart> = cast(raw)
            return (0..<g_mime_multipart_get_count(multipart)).compactMap { index in
                g_mime_multipart_get_part(multipart, index).map { MIMEEntity(borrowing: $0) }
            }
        case .message:
            return embeddedMessage.flatMap { $0.body }.map { [$0] } ?? []
        case .leaf:
            return []
        }
    }

    /// The message inside a `message/rfc822` part.
    public var embeddedMessage: MIMEMessage? {
        guard kind == .message else { return nil }
        let part: UnsafeMutablePointer<GMimeMessagePart> = cast(raw)
        return g_mime_message_part_get_message(part).map { MIMEMessage(borrowing: $0) }
    }

    /// The entity at `path`: each number picks a child (from 0) of the entity
    /// before it; the empty path is this entity. An embedded message has one
    /// child, its body.
    public func entity(at path: [Int]) -> MIMEEntity? {
        var current = self
        for index in path {
            let children = current.children
            guard children.indices.contains(index) else { return nil }
            current = children[index]
        }
        return current
    }

    /// This entity and every entity below it, depth first, with their paths.
    public func walk() -> [(path: [Int], entity: MIMEEntity)] {
        var result: [(path: [Int], entity: MIMEEntity)] = []
        func visit(_ entity: MIMEEntity, _ path: [Int]) {
            result.append((path, entity))
            for (index, child) in entity.children.enumerated() { visit(child, path + [index]) }
        }
        visit(self, [])
        return result
    }

    /// How deep the tree below this entity goes; a leaf is 1.
    public var depth: Int {
        1 + (children.map(\.depth).max() ?? 0)
    }

    /// The text of a `text/*` leaf as a `String`, transfer encoding decoded and
    /// converted from its charset (`g_mime_text_part_get_text`); nil otherwise.
    /// A charset under a name mail software gives it that GMime reads
    /// otherwise or not at all (`ks_c_5601-1987`, `x-mac-roman`,
    /// `unknown-8bit`) is decoded as ``Charsets`` says the name means.
    public var text: String? {
        guard mailsec_gmime_is_text_part(raw) != 0 else { return nil }
        if let declared = contentType.parameters["charset"], let meant = Charsets.alias(declared) {
            return content.flatMap { Charsets.decode($0, charset: meant) }
        }
        // Declared UTF-8 and valid as such: GMime's conversion (UTF-8 to UTF-8) leaves every byte
        // as it is, and its text ends at the first NUL. Read without it: it was a fifth of redacting
        // 100 MB (issue 24, row 5). Anything else goes through GMime, as before.
        if let charset = g_mime_object_get_content_type_parameter(raw, "charset"),
           ["utf-8", "utf8"].contains(String(cString: charset).lowercased()) {
            func utf8Text(_ bytes: UnsafeRawBufferPointer) -> String? {
                guard let base = bytes.baseAddress else { return "" }
                let end = memchr(base, 0, bytes.count).map { base.distance(to: UnsafeRawPointer($0)) } ?? bytes.count
                return String(validating: UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: end), as: UTF8.self)
            }
            // Read where GMime holds it when it can be: a text of 100 MB is not copied twice.
            if let stored = withStoredContent(utf8Text) { if let text = stored { return text } }
            else if let text = content.flatMap({ $0.withUnsafeBytes(utf8Text) }) { return text }
        }
        return gmimeText
    }

    /// GMime's text of a text part (`g_mime_text_part_get_text`), up to its first NUL.
    var gmimeText: String? {
        guard mailsec_gmime_is_text_part(raw) != 0 else { return nil }
        let part: UnsafeMutablePointer<GMimeTextPart> = cast(raw)
        return takeString(g_mime_text_part_get_text(part))
    }

    /// The decoded content of a leaf (transfer encoding removed); nil for
    /// multiparts and messages.
    public var content: [UInt8]? {
        // Decoded straight into the array, not into a GMime buffer first,
        // reserved once: no transfer encoding decodes to more bytes than it
        // has, and pages of the reserve never written are never resident (a
        // 100 MB attachment grown by doubling held 128 MiB and copied it).
        var bytes: [UInt8] = []
        if let length = encodedContentLength { bytes.reserveCapacity(length) }
        return forEachContentPiece { bytes += $0 } ? bytes : nil
    }

    /// The text before the first part of a multipart (its preamble), if any.
    public var prologue: String? {
        get {
            guard kind == .multipart else { return nil }
            return g_mime_multipart_get_prologue(cast(raw)).map { String(cString: $0) }
        }
        set { if kind == .multipart { g_mime_multipart_set_prologue(cast(raw), newValue) } }
    }

    /// The text after the last part of a multipart, if any.
    public var epilogue: String? {
        get {
            guard kind == .multipart else { return nil }
            return g_mime_multipart_get_epilogue(cast(raw)).map { String(cString: $0) }
        }
        set { if kind == .multipart { g_mime_multipart_set_epilogue(cast(raw), newValue) } }
    }

    /// The file name of a leaf (Content-Disposition `filename`, else
    /// Content-Type `name`), decoded.
    public var filename: String? {
        guard mailsec_gmime_is_part(raw) != 0 else { return nil }
        let part: UnsafeMutablePointer<GMimePart> = cast(raw)
        return g_mime_part_get_filename(part).map { String(cString: $0) }
    }

    /// The Content-Disposition value (`inline`, `attachment`), if present.
    public var disposition: String? {
        g_mime_object_get_content_disposition(raw)
            .flatMap { g_mime_content_disposition_get_disposition($0) }
            .map { String(cString: $0).lowercased() }
    }

    /// Serialises the entity, headers included.
    public func serialize(newline: Newline = .lf) -> [UInt8] {
        MIME.serialize(raw, newline: newline, hidden: [])
    }

    /// The RFC 3156 canonical form to sign or encrypt, written with CRLF line
    /// endings. The entity is re-encoded **in place** first so that it is 7-bit
    /// clean (`g_mime_object_encode`), and so that no line a mail server might
    /// touch is left as it is: a part with white space at a line end becomes
    /// quoted-printable (RFC 3156 §3), one with a line starting "From " base64
    /// (GMime's quoted-printable leaves those, and mail stores turn them into
    /// ">From "). Work on a ``copy()`` to leave the original alone.
    public func canonicalBytes() -> [UInt8] {
        prepareCanonicalForm()
        return serialize(newline: .crlf)
    }

    /// Parses a MIME entity (not a whole message) from `bytes`, for example
    /// decrypted PGP/MIME content.
    public static func parse(_ bytes: [UInt8], options: ParseOptions = .standard) throws -> (entity: MIMEEntity, issues: [ParseIssue]) {
        guard bytes.count <= options.maxSize else { throw MIMEError(.tooLarge, limit: options.maxSize) }
        try HeaderScan.refuseNUL(in: bytes)
        try HeaderScan.refuseUnboundedEncodedWords(in: bytes)
        let stream = MemoryStream(copying: bytes)
        let collector = IssueCollector()
        let object = collector.withParserOptions { parserOptions in
            let parser = g_mime_parser_new_with_stream(stream.raw)
            defer { g_object_unref(parser) }
            return withExtendedLifetime(stream) { g_mime_parser_construct_part(parser, parserOptions) }
        }
        guard let object else { throw MIMEError(.notParsable) }
        let entity = MIMEEntity(taking: object)
        try options.check(headers: 0, body: entity)
        return (entity, collector.issues)
    }
}

/// Writes any GMime object to memory (`g_mime_object_write_to_stream`).
func serialize(_ object: UnsafeMutablePointer<GMimeObject>, newline: Newline, hidden: [String]) -> [UInt8] {
    written(object, newline: newline, hidden: hidden).bytes
}

/// Writes any GMime object into a memory stream (`g_mime_object_write_to_stream`).
func written(_ object: UnsafeMutablePointer<GMimeObject>, newline: Newline, hidden: [String]) -> MemoryStream {
    let options = g_mime_format_options_new()
    defer { g_mime_format_options_free(options) }
    g_mime_format_options_set_newline_format(options, newline == .crlf ? GMIME_NEWLINE_FORMAT_DOS : GMIME_NEWLINE_FORMAT_UNIX)
    for name in hidden { g_mime_format_options_add_hidden_header(options, name) }
    let stream = MemoryStream()
    g_mime_object_write_to_stream(object, options, stream.raw)
    return stream
}
