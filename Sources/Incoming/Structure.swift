import Foundation
import MIME

/// Where an OpenPGP signature or encryption stands in a mail, decided from
/// the MIME tree alone. Only a signature or encryption that *is* the whole
/// body covers the mail; anything nested beside other content, inside an
/// attached message, or an armored block with other text around it covers a
/// part only. This is the difference the signature-wrapping and EFAIL attacks
/// rely on a reader to miss.
public struct Protection {
    /// How the protection is written.
    public enum Kind: String, Sendable, Equatable, Codable {
        /// RFC 3156 `multipart/signed` or `multipart/encrypted`.
        case pgpMIME = "pgp-mime"
        /// An armored block in a text part.
        case inline
    }

    /// Where it stands.
    public enum Place: String, Sendable, Equatable, Codable {
        /// It is the message's whole body.
        case whole
        /// It is one part among others (in `multipart/mixed`,
        /// `multipart/alternative` …), or an armored block with other text around it.
        case partial
        /// It is inside an attached or forwarded message (`message/rfc822`).
        case attached
    }

    /// How it is written: PGP/MIME or an inline armored block.
    public let kind: Kind
    /// Where it stands: the whole body, one part among others, or inside an attached mail.
    public let place: Place
    /// The part, as `1.2.1` (`1` is the body); the text part for inline.
    public let path: [Int]
    /// The part itself.
    let entity: MIMEEntity
    /// True for PGP/MIME that Microsoft Exchange rewrote into `multipart/mixed`
    /// (an empty text part, the `application/pgp-encrypted` part, `encrypted.asc`):
    /// read as the `multipart/encrypted` it was.
    public internal(set) var mangledByExchange = false

    /// The armored ciphertext of a PGP/MIME encryption, also of the Exchange shape.
    var ciphertext: [UInt8]? {
        mangledByExchange ? entity.children[2].content : PGPMIME.ciphertext(of: entity)
    }

    /// `1`, `1.2` …
    public var partName: String { path.isEmpty ? "1" : "1." + path.map { String($0 + 1) }.joined(separator: ".") }
}

/// The signatures and encryptions found in a mail.
public struct MailStructure {
    /// Every signature found, in the order of the parts.
    public let signed: [Protection]
    /// Every encryption found, in the order of the parts.
    public let encrypted: [Protection]
    /// True when the mail holds S/MIME (`application/pkcs7-mime`, or
    /// `multipart/signed` with an S/MIME protocol), which mailsec does not read.
    public let smime: Bool

    static let signedBegin = "-----BEGIN PGP SIGNED MESSAGE-----"
    static let signatureEnd = "-----END PGP SIGNATURE-----"
    static let messageBegin = "-----BEGIN PGP MESSAGE-----"
    static let messageEnd = "-----END PGP MESSAGE-----"

    /// The first part of the multipart with `boundary` in the raw message,
    /// as sent, with CRLF line endings: what a PGP/MIME signature covers.
    public static func signedContent(in raw: [UInt8], boundary: String) -> [UInt8]? {
        RawParts.firstPart(in: raw, boundary: boundary)
    }

    /// Classifies every signature and encryption in `message`.
    public init(_ message: MIMEMessage) {
        var signed: [Protection] = []
        var encrypted: [Protection] = []
        guard let body = message.body else {
            self.signed = []
            self.encrypted = []
            self.smime = false
            return
        }
        var smime = false
        // Parts inside an embedded message: their paths start below a message/rfc822 part.
        var embeddedRoots: [[Int]] = []
        let parts = body.walk()
        for (path, entity) in parts where entity.embeddedMessage != nil { embeddedRoots.append(path) }
        func place(_ path: [Int], whole: Bool) -> Protection.Place {
            if embeddedRoots.contains(where: { path.count > $0.count && Array(path.prefix($0.count)) == $0 }) { return .attached }
            return whole ? .whole : .partial
        }
        if Self.isMangledByExchange(body) {
            var protection = Protection(kind: .pgpMIME, place: .whole, path: [], entity: body)
            protection.mangledByExchange = true
            encrypted.append(protection)
        }
        for (path, entity) in parts {
            let type = entity.contentType
            if type.is("application", "pkcs7-mime") || type.is("application", "x-pkcs7-mime")
                || type.is("multipart", "signed") && Self.smimeProtocols.contains(type.parameters["protocol"]?.lowercased() ?? "") {
                smime = true
            } else if type.is("multipart", "signed") {
                signed.append(Protection(kind: .pgpMIME, place: place(path, whole: path.isEmpty), path: path, entity: entity))
            } else if type.is("multipart", "encrypted") {
                encrypted.append(Protection(kind: .pgpMIME, place: place(path, whole: path.isEmpty), path: path, entity: entity))
            } else if type.type == "text", let text = entity.text {
                // A text that is exactly one armored block is the body's protection when it is the body.
                let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
                let whole = path.isEmpty
                if trimmed.contains(Self.signedBegin) {
                    let exact = trimmed.hasPrefix(Self.signedBegin) && trimmed.hasSuffix(Self.signatureEnd)
                        && trimmed.components(separatedBy: Self.signedBegin).count == 2
                    signed.append(Protection(kind: .inline, place: place(path, whole: whole && exact), path: path, entity: entity))
                } else if trimmed.contains(Self.messageBegin) {
                    let exact = trimmed.hasPrefix(Self.messageBegin) && trimmed.hasSuffix(Self.messageEnd)
                        && trimmed.components(separatedBy: Self.messageBegin).count == 2
                    encrypted.append(Protection(kind: .inline, place: place(path, whole: whole && exact), path: path, entity: entity))
                }
            }
        }
        self.signed = signed
        self.encrypted = encrypted
        self.smime = smime
    }

    static let smimeProtocols: Set<String> = ["application/pkcs7-signature", "application/x-pkcs7-signature"]

    /// Exactly the shape Microsoft Exchange makes of PGP/MIME (as Enigmail and
    /// Thunderbird recognise it): the body is `multipart/mixed` with three
    /// parts, an empty `text/plain`, `application/pgp-encrypted` saying
    /// `Version: 1`, and `application/octet-stream` named `encrypted.asc`.
    /// Anything more or different is not repaired: other text beside the
    /// ciphertext is the EFAIL shape.
    static func isMangledByExchange(_ body: MIMEEntity) -> Bool {
        let children = body.children
        guard body.contentType.is("multipart", "mixed"), children.count == 3,
              children[0].contentType.is("text", "plain"),
              children[0].text?.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty == true,
              children[1].contentType.is("application", "pgp-encrypted"),
              children[1].content.map({ String(decoding: $0, as: UTF8.self) })?
                .trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("Version: 1") == true,
              children[2].contentType.is("application", "octet-stream"),
              children[2].filename == "encrypted.asc" else { return false }
        return true
    }
}

/// Finding a `multipart/signed` part's first part exactly as it was sent.
enum RawParts {
    /// The bytes of the first body part of the multipart with `boundary` in
    /// `raw`, as sent, with CRLF line endings (RFC 3156 §5: the signature is
    /// over the canonical form). nil when the boundary lines are not found.
    static func firstPart(in raw: [UInt8], boundary: String) -> [UInt8]? {
        let delimiter = Array(("--" + boundary).utf8)
        // Line starts where a delimiter line (optionally with trailing white space) stands.
        var delimiters: [(start: Int, next: Int)] = []
        var lineStart = 0
        while lineStart < raw.count {
            var lineEnd = lineStart
            while lineEnd < raw.count && raw[lineEnd] != 10 { lineEnd += 1 }
            var contentEnd = lineEnd
            while contentEnd > lineStart && [13, 32, 9].contains(raw[contentEnd - 1]) { contentEnd -= 1 }
            let line = raw[lineStart..<contentEnd]
            if line.elementsEqual(delimiter) || line.elementsEqual(delimiter + Array("--".utf8)) {
                delimiters.append((lineStart, min(lineEnd + 1, raw.count)))
                if delimiters.count == 2 { break }
            }
            lineStart = lineEnd + 1
        }
        guard delimiters.count == 2 else { return nil }
        var end = delimiters[1].start
        // The line break before the next delimiter belongs to the delimiter.
        if end > 0 && raw[end - 1] == 10 { end -= 1 }
        if end > 0 && raw[end - 1] == 13 { end -= 1 }
        let start = delimiters[0].next
        guard start <= end else { return nil }
        return crlf(Array(raw[start..<end]))
    }

    static func crlf(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 40)
        var previous: UInt8 = 0
        for byte in bytes {
            if byte == 10 && previous != 13 { out.append(13) }
            out.append(byte)
            previous = byte
        }
        return out
    }
}
