import MIME

/// A message made ready for DATA: CRLF line ends, leading dots doubled
/// (RFC 5321 §4.5.2), the final "." line, and what the server must support
/// to take it.
struct MessageData {
    /// The bytes to write after the 354, the final ".\r\n" included.
    let wire: [UInt8]
    /// The message's size as SIZE counts it (before dot-stuffing).
    let size: Int
    /// Octets above 127 in the body: BODY=8BITMIME is needed.
    let eightBitBody: Bool
    /// Octets above 127 in the header section (UTF-8 header fields): SMTPUTF8 is wanted.
    let eightBitHeader: Bool
    /// A line of more than 998 octets (RFC 5321 §4.5.3.1.6).
    let longLine: Bool
    /// A NUL octet, which no SMTP transport carries.
    let nul: Bool

    static let maxLine = 998

    /// Scans and stuffs in one pass. Bare LF becomes CRLF; a bare CR is kept
    /// (and counted as part of its line).
    init(_ bytes: [UInt8]) {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 40 + 8)
        var lineStart = true, inHeader = true, headerLineEmpty = true
        var previous: UInt8 = 0
        var lineLength = 0
        var eightBitBody = false, eightBitHeader = false, longLine = false, nul = false
        var size = 0
        for byte in bytes {
            if lineStart && byte == UInt8(ascii: ".") { out.append(UInt8(ascii: ".")) }
            if byte == 10 {
                if previous != 13 { out.append(13); size += 1 } else { lineLength -= 1 }
                if lineLength > Self.maxLine { longLine = true }
                if inHeader && headerLineEmpty { inHeader = false }
                lineLength = 0
                headerLineEmpty = true
            } else {
                lineLength += 1
                if byte != 13 { headerLineEmpty = false }
                if byte >= 0x80 { if inHeader { eightBitHeader = true } else { eightBitBody = true } }
                if byte == 0 { nul = true }
            }
            out.append(byte)
            size += 1
            lineStart = byte == 10
            previous = byte
        }
        if lineLength > Self.maxLine { longLine = true }
        if !lineStart { out += [13, 10]; size += 2 }
        out += Array(".\r\n".utf8)
        wire = out
        self.size = size
        self.eightBitBody = eightBitBody
        self.eightBitHeader = eightBitHeader
        self.longLine = longLine
        self.nul = nul
    }
}

extension MessageData {
    /// The message for a server that takes only what `extensions` allow:
    /// as it is when it fits, else re-encoded by ``TransportEncoding`` (MIME
    /// module, GMime) so that every body part is 7-bit with short lines.
    /// Throws a permanent error when even that cannot make it valid SMTP.
    static func prepare(_ bytes: [UInt8], eightBitMIME: Bool, smtpUTF8: Bool, peer: String) throws(SMTPError) -> MessageData {
        var data = MessageData(bytes)
        if data.longLine || (data.eightBitBody && !eightBitMIME) || data.nul {
            guard let encoded = TransportEncoding.sevenBitBodies(bytes) else {
                throw SMTPError(.permanent, "the message cannot be read as MIME to re-encode it for \(peer)")
            }
            data = MessageData(encoded)
        }
        if data.longLine {
            throw SMTPError(.permanent, "the message has a header line longer than \(maxLine) octets, which SMTP cannot carry")
        }
        if data.nul {
            throw SMTPError(.permanent, "the message holds a NUL octet, which SMTP cannot carry")
        }
        if data.eightBitHeader && !smtpUTF8 && !eightBitMIME {
            throw SMTPError(.permanent, "the message has 8-bit header fields and \(peer) offers neither SMTPUTF8 nor 8BITMIME")
        }
        return data
    }
}

/// What no SMTP server can carry, checked before a mail is queued: so that a
/// mail is refused whole (65) rather than some copies sent and one failing.
package enum SMTPCarriage {
    /// Why `message` cannot go over SMTP to any server, even re-encoded (a
    /// header line over 998 octets, a NUL in a header); nil when it can.
    /// Server-dependent limits (SIZE, SMTPUTF8) are not judged here.
    package static func problem(_ message: [UInt8]) -> String? {
        var length = 0
        var suspect = false
        for byte in message {
            if byte == 10 { length = 0; continue }
            length += 1
            if byte == 0 || length > MessageData.maxLine { suspect = true; break }
        }
        guard suspect else { return nil }  // the common case: no copy is made
        do {
            _ = try MessageData.prepare(message, eightBitMIME: true, smtpUTF8: true, peer: "a server")
            return nil
        } catch {
            return error.description
        }
    }
}
