internal import CGMime

/// Re-encoding for transports that carry less than the message uses: an SMTP
/// server without 8BITMIME, or a line longer than SMTP's 998 octets. Lives
/// here, beside the parser, because only GMime knows where each part's
/// content starts and how to choose its transfer encoding; the SMTP client
/// calls it.
public enum TransportEncoding {
    /// The message with every leaf part that is 8-bit, binary, or has a line
    /// longer than 998 octets re-encoded as quoted-printable or base64
    /// (whichever GMime finds shorter: `g_mime_object_encode` with the 7-bit
    /// constraint), with CRLF line ends. Parts inside `multipart/signed` and
    /// `multipart/encrypted` are left alone (GMime never re-encodes those, as
    /// that would break the signature). Header fields are not changed. Nil
    /// when the bytes cannot be parsed as a message.
    public static func sevenBitBodies(_ bytes: [UInt8]) -> [UInt8]? {
        guard let message = try? MIMEMessage.parse(bytes, options: .unlimited) else { return nil }
        g_mime_object_encode(message.object, GMIME_ENCODING_CONSTRAINT_7BIT)
        return message.serialize(newline: .crlf)
    }
}
