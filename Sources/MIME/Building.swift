internal import CGMime
internal import CMailsecShims
import Foundation

extension MIMEEntity {
    /// A `text/SUBTYPE` part holding `text` in UTF-8 (US-ASCII when it is
    /// plain ASCII), with a 7-bit-safe transfer encoding. GMime's own
    /// `g_mime_text_part_set_text` would pick a legacy charset such as
    /// ISO-8859-1; one charset for everything we write is simpler to reason about.
    public static func text(_ text: String, subtype: String = "plain") -> MIMEEntity {
        GMimeLibrary.initialise()
        let part = g_mime_text_part_new_with_subtype(subtype)!
        let entity = MIMEEntity(taking: cast(part))
        entity.setContent(Array(text.utf8))
        g_mime_text_part_set_charset(part, text.utf8.allSatisfy { $0 < 0x80 } ? "us-ascii" : "utf-8")
        return entity
    }

    /// A leaf part of type `type/subtype` holding `data`, base64 or
    /// quoted-printable as fits. With a `filename` it is an attachment.
    public static func part(_ data: [UInt8], type: String, subtype: String, filename: String? = nil) throws -> MIMEEntity {
        guard !type.isEmpty, !subtype.isEmpty else { throw MIMEError(.invalidArgument, detail: "empty media type") }
        GMimeLibrary.initialise()
        let part = g_mime_part_new_with_type(type, subtype)!
        let entity = MIMEEntity(taking: cast(part))
        entity.setContent(data)
        if let filename { g_mime_part_set_filename(part, filename) }
        return entity
    }

    /// Replaces the text of a `text/*` leaf, written as UTF-8 with a 7-bit-safe
    /// transfer encoding whatever the charset and encoding were before.
    public func replaceText(_ text: String) throws {
        guard mailsec_gmime_is_text_part(raw) != 0 else { throw MIMEError(.invalidArgument, detail: "not a text part") }
        setContent(Array(text.utf8))
        g_mime_text_part_set_charset(cast(raw), text.utf8.allSatisfy { $0 < 0x80 } ? "us-ascii" : "utf-8")
    }

    /// Sets the file name of a leaf (Content-Disposition `filename` and
    /// Content-Type `name`).
    public func setFilename(_ filename: String) {
        guard mailsec_gmime_is_part(raw) != 0 else { return }
        g_mime_part_set_filename(cast(raw), filename)
    }

    /// Removes every header field named `name`.
    public func removeHeader(_ name: String) {
        while g_mime_object_remove_header(raw, name) != 0 {}
    }

    /// Appends a header field written exactly as given, as
    /// ``MIMEMessage/appendRawHeader(_:_:)`` does for a message (an
    /// Autocrypt-Gossip key, say). `value` must be 7-bit, folded by the caller.
    public func appendRawHeader(_ name: String, _ value: String) throws {
        try MIME.appendRawHeader(to: raw, name, value)
    }

    /// Folds this part's long header fields, as
    /// ``MIMEMessage/foldLongHeaders()`` does for a message.
    @discardableResult
    public func foldLongHeaders() -> [String] {
        HeaderFolding.foldLongFields(of: raw)
    }

    /// Prepends a header field; the value is encoded as needed.
    public func prependHeader(_ name: String, _ value: String) {
        g_mime_object_prepend_header(raw, name, value, "utf-8")
    }

    /// An independent copy of this entity (written out and parsed again).
    public func copy() throws -> MIMEEntity {
        try MIMEEntity.parse(serialize(newline: .lf), options: .unlimited).entity
    }

    /// Sets the decoded content of a leaf and picks a 7-bit-safe transfer encoding.
    func setContent(_ data: [UInt8]) {
        let part: UnsafeMutablePointer<GMimePart> = cast(raw)
        let stream = MemoryStream(copying: data)
        let wrapper = withExtendedLifetime(stream) { g_mime_data_wrapper_new_with_stream(stream.raw, GMIME_CONTENT_ENCODING_DEFAULT) }
        g_mime_part_set_content(part, wrapper)
        g_object_unref(wrapper)
        g_mime_part_set_content_encoding(part, g_mime_part_get_best_content_encoding(part, GMIME_ENCODING_CONSTRAINT_7BIT))
    }

    /// A `multipart/SUBTYPE` holding `children` (for example `mixed` or
    /// `alternative`).
    public static func multipart(_ subtype: String, _ children: [MIMEEntity]) -> MIMEEntity {
        GMimeLibrary.initialise()
        let multipart = g_mime_multipart_new_with_subtype(subtype)!
        for child in children { g_mime_multipart_add(multipart, child.raw) }
        return MIMEEntity(taking: cast(multipart))
    }

    /// A `message/rfc822` part that carries `message`.
    public static func message(_ message: MIMEMessage) -> MIMEEntity {
        GMimeLibrary.initialise()
        let part = g_mime_message_part_new_with_message("rfc822", message.raw)!
        return MIMEEntity(taking: cast(part))
    }

    /// Sets a Content-Type parameter (`g_mime_object_set_content_type_parameter`).
    public func setContentTypeParameter(_ name: String, _ value: String) {
        g_mime_object_set_content_type_parameter(raw, name, value)
    }

    /// Sets a header field, replacing any of the same name.
    public func setHeader(_ name: String, _ value: String) {
        g_mime_object_set_header(raw, name, value, "utf-8")
    }
}

extension MIMEEntity {
    /// A `text/SUBTYPE` part holding `text` as UTF-8, always
    /// quoted-printable and never flowed: the one form a rebuilt postcard's
    /// text is written in, so that every reader decodes it alike.
    ///
    /// Made directly, not through ``text(_:subtype:)``: its copy of the text
    /// into an array, its scan for ASCII and GMime's scan for the best
    /// encoding were 10% of redacting 100 MB, and each result was set aside.
    /// The content is stored encoded (``QuotedPrintable``, GMime's encoding
    /// byte for byte), so that writing the part copies it out instead of
    /// running GMime's encoding filter over it each time it is written.
    /// `encodedHere: false` leaves the encoding to GMime's filter, as before: the oracle of the tests.
    package static func quotedPrintableText(_ text: String, subtype: String = "plain", encodedHere: Bool = true) -> MIMEEntity {
        GMimeLibrary.initialise()
        let part = g_mime_text_part_new_with_subtype(subtype)!
        let entity = MIMEEntity(taking: cast(part))
        let stream: UnsafeMutablePointer<GMimeStream>
        let encoding: GMimeContentEncoding
        if encodedHere && QuotedPrintable.maximumLength(text.utf8.count) < Int(UInt32.max) {
            // The stream owns the array it is given: the encoded text is made once, in place.
            stream = g_mime_stream_mem_new_with_byte_array(QuotedPrintable.encodedByteArray(text))!
            encoding = GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE
        } else {
            // More than a GMime byte array holds encoded: GMime encodes it as it writes.
            var text = text
            stream = text.withUTF8 { utf8 in
                utf8.withMemoryRebound(to: CChar.self) { chars in
                    chars.baseAddress.map { g_mime_stream_mem_new_with_buffer($0, chars.count) } ?? g_mime_stream_mem_new()
                }
            }!
            encoding = GMIME_CONTENT_ENCODING_DEFAULT
        }
        let wrapper = g_mime_data_wrapper_new_with_stream(stream, encoding)
        g_object_unref(stream)
        g_mime_part_set_content(cast(part), wrapper)
        g_object_unref(wrapper)
        g_mime_part_set_content_encoding(cast(part), GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE)
        g_mime_text_part_set_charset(part, "utf-8")
        return entity
    }
}
