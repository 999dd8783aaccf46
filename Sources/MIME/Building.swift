internal import CGMime
import Foundation

extension MIMEEntity {
    /// A `text/SUBTYPE` part holding `text` in UTF-8 (US-ASCII when it is
    /// plain ASCII), with a 7-bit-safe transfer encoding.
    public static func text(_ text: String, subtype: String = "plain") -> MIMEEntity {
        GMimeLibrary.initialise()
        let part = g_mime_text_part_new_with_subtype(subtype)!
        g_mime_text_part_set_text(part, text)
        let plain: UnsafeMutablePointer<GMimePart> = cast(part)
        g_mime_part_set_content_encoding(plain, g_mime_part_get_best_content_encoding(plain, GMIME_ENCODING_CONSTRAINT_7BIT))
        return MIMEEntity(taking: cast(part))
    }

    /// A leaf part of type `type/subtype` holding `data`, base64 or
    /// quoted-printable as fits. With a `filename` it is an attachment.
    public static func part(_ data: [UInt8], type: String, subtype: String, filename: String? = nil) throws -> MIMEEntity {
        guard !type.isEmpty, !subtype.isEmpty else { throw MIMEError(.invalidArgument("empty media type")) }
        GMimeLibrary.initialise()
        let part = g_mime_part_new_with_type(type, subtype)!
        let entity = MIMEEntity(taking: cast(part))
        let stream = MemoryStream(copying: data)
        let wrapper = g_mime_data_wrapper_new_with_stream(stream.raw, GMIME_CONTENT_ENCODING_DEFAULT)
        g_mime_part_set_content(part, wrapper)
        g_object_unref(wrapper)
        if let filename { g_mime_part_set_filename(part, filename) }
        g_mime_part_set_content_encoding(part, g_mime_part_get_best_content_encoding(part, GMIME_ENCODING_CONSTRAINT_7BIT))
        return entity
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
