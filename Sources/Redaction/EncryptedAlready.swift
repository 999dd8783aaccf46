import Foundation
import MIME
import OpenPGP

/// What counts as encrypted already, and what as signed: read from the
/// content itself, minimally and in one pass, not from the labels alone.
///
/// Encrypted means an OpenPGP message whose packets are PKESK or SKESK
/// (tags 1, 3) followed by an encrypted data packet (SED 9, SEIPD 18, AEAD
/// 20), or S/MIME enveloped-data (CMS content type 1.2.840.113549.1.7.3, or
/// authEnvelopedData). A literal, compressed or signed-only OpenPGP message,
/// an armored block inside ordinary text and S/MIME signed-data are not:
/// they are content like any other.
package enum EncryptedAlready {
    /// True for an entity that is ciphertext and nothing else:
    /// `multipart/encrypted` whose encrypted part is an OpenPGP message as
    /// above, S/MIME enveloped-data, or a text leaf that is nothing but one
    /// armored OpenPGP message as above.
    package static func isEncrypted(_ entity: MIMEEntity) -> Bool {
        let type = entity.contentType
        switch entity.kind {
        case .multipart:
            guard type.is("multipart", "encrypted"), entity.children.count == 2,
                  let content = entity.children[1].content else { return false }
            return isOpenPGPEncrypted(content)
        case .message:
            return false
        case .leaf:
            if type.is("application", "pkcs7-mime") || type.is("application", "x-pkcs7-mime") {
                let kind = type.parameters["smime-type"]?.lowercased()
                if let kind, kind != "enveloped-data" && kind != "authenveloped-data" { return false }
                return entity.content.map { cmsContentType($0) == .enveloped } ?? false
            }
            if type.type == "text" || type.is("application", "pgp-encrypted") || type.is("application", "octet-stream") {
                // Its first bytes first: a large attachment is not held whole only to learn it is no armor.
                guard mayBeArmoredMessage(entity.contentPrefix(4096)), let bytes = entity.content else { return false }
                return isOnlyArmoredMessage(bytes) && isOpenPGPEncrypted(bytes)
            }
            return false
        }
    }

    /// True for an entity labelled as ciphertext: `multipart/encrypted`,
    /// `application/pgp-encrypted`, or S/MIME declared enveloped-data. Such
    /// an entity that ``isEncrypted(_:)`` does not find to be ciphertext (a
    /// literal or compressed OpenPGP message dressed as encrypted) says one
    /// thing and is another: mailsec does not send it on as either.
    package static func claimsEncryption(_ entity: MIMEEntity) -> Bool {
        let type = entity.contentType
        if type.is("multipart", "encrypted") { return true }
        guard entity.kind == .leaf else { return false }
        if type.is("application", "pgp-encrypted") { return true }
        guard type.is("application", "pkcs7-mime") || type.is("application", "x-pkcs7-mime") else { return false }
        let kind = type.parameters["smime-type"]?.lowercased()
        return kind == "enveloped-data" || kind == "authenveloped-data"
    }

    /// True for an entity that carries a signature a postcard would break:
    /// `multipart/signed`, S/MIME signed-data or a detached S/MIME signature,
    /// or text that is cleartext-signed (`-----BEGIN PGP SIGNED MESSAGE-----`).
    package static func isSigned(_ entity: MIMEEntity) -> Bool {
        let type = entity.contentType
        if type.is("multipart", "signed") { return true }
        guard entity.kind == .leaf else { return false }
        if type.is("application", "pkcs7-signature") || type.is("application", "x-pkcs7-signature") { return true }
        if type.is("application", "pkcs7-mime") || type.is("application", "x-pkcs7-mime") {
            if type.parameters["smime-type"]?.lowercased() == "signed-data" { return true }
            return entity.content.map { cmsContentType($0) == .signed } ?? false
        }
        if type.type == "text" { return isCleartextSigned(entity) }
        return false
    }

    /// ``isCleartextSigned(_:)`` of a leaf's content, read in pieces as it is decoded: a text part
    /// of 100 MB is not copied whole to look at its lines (issue 24, row 5).
    package static func isCleartextSigned(_ entity: MIMEEntity) -> Bool {
        let header = Array("-----BEGIN PGP SIGNED MESSAGE-----".utf8)
        var matched: Int? = 0  // bytes of the header the current line starts with; nil past a difference
        var found = false
        entity.forEachContentPiece { piece in
            guard !found, let start = piece.baseAddress else { return }
            var index = 0
            while index < piece.count {
                guard let count = matched else {
                    // Past a difference: on to the next line.
                    guard let newline = memchr(start + index, 10, piece.count - index) else { return }
                    index = start.distance(to: UnsafeRawPointer(newline)) + 1
                    matched = 0
                    continue
                }
                let byte = piece[index]
                index += 1
                if byte == 10 {
                    matched = 0
                } else if byte == header[count] {
                    matched = count + 1
                    if count + 1 == header.count { found = true; return }
                } else {
                    matched = nil
                }
            }
        }
        return found
    }

    /// True when any entity of `message` (embedded messages included) is signed.
    package static func isSigned(_ message: MIMEMessage) -> Bool {
        message.body?.walk().contains { isSigned($0.entity) } ?? false
    }

    /// True when a line of `bytes` is `-----BEGIN PGP SIGNED MESSAGE-----`.
    package static func isCleartextSigned(_ bytes: [UInt8]) -> Bool {
        let header = Array("-----BEGIN PGP SIGNED MESSAGE-----".utf8)
        guard bytes.count >= header.count else { return false }
        var index = 0
        while index + header.count <= bytes.count {
            if bytes[index] == header[0] && bytes[index..<(index + header.count)].elementsEqual(header) { return true }
            // On to the next line.
            guard let newline = bytes[index...].firstIndex(of: 10) else { return false }
            index = newline + 1
        }
        return false
    }

    /// False when the first bytes of a content show it is not one armored message
    /// (``isOnlyArmoredMessage(_:)``): something other than blanks before a beginning
    /// other than `-----BEGIN PGP MESSAGE-----`. True when they may still be one.
    package static func mayBeArmoredMessage(_ prefix: [UInt8]) -> Bool {
        let begin = Array("-----BEGIN PGP MESSAGE-----".utf8)
        guard let first = prefix.firstIndex(where: { !(Self.isBlank($0)) }) else { return true }
        return prefix[first...].prefix(begin.count).elementsEqual(begin.prefix(prefix.count - first))
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 || byte == 10 || byte == 13 }

    /// True when `bytes`, white space aside, are one armored `PGP MESSAGE` block and nothing else.
    package static func isOnlyArmoredMessage(_ bytes: [UInt8]) -> Bool {
        let begin = Array("-----BEGIN PGP MESSAGE-----".utf8), end = Array("-----END PGP MESSAGE-----".utf8)
        guard let first = bytes.firstIndex(where: { !isBlank($0) }), let last = bytes.lastIndex(where: { !isBlank($0) }),
              last - first + 1 >= begin.count + end.count,
              bytes[first..<(first + begin.count)].elementsEqual(begin),
              bytes[(last + 1 - end.count)...last].elementsEqual(end) else { return false }
        // One block: no second BEGIN after the first.
        let inner = bytes[(first + begin.count)..<(last + 1 - end.count)]
        return inner.firstRange(of: Array("-----BEGIN".utf8)) == nil
    }

    /// True when the OpenPGP message in `bytes` (armored or binary) is one or
    /// more PKESK/SKESK packets (a marker packet may come first) followed by
    /// an encrypted data packet. Only packet headers are read.
    package static func isOpenPGPEncrypted(_ bytes: [UInt8]) -> Bool {
        guard let data = Packets.binary(bytes) else { return false }
        var sessionKeys = 0
        for packet in Packets.list(data) {
            switch packet.tag {
            case 10 where sessionKeys == 0: continue  // marker packet
            case 1, 3: sessionKeys += 1
            case 9, 18, 20: return sessionKeys > 0
            default: return false
            }
        }
        return false
    }

    enum CMSType { case enveloped, signed, other }

    /// The content type of a CMS ContentInfo (DER or BER): the OID after the
    /// outer SEQUENCE's header. nil when the bytes do not start so.
    static func cmsContentType(_ der: [UInt8]) -> CMSType? {
        var index = 0
        /// Skips a tag and its length; false when they do not fit.
        func header(expecting tag: UInt8) -> Int? {
            guard index < der.count, der[index] == tag, index + 1 < der.count else { return nil }
            index += 1
            let first = der[index]
            index += 1
            if first < 0x80 { return Int(first) }
            if first == 0x80 { return -1 }  // indefinite (BER)
            let count = Int(first & 0x7F)
            guard count <= 4, index + count <= der.count else { return nil }
            let length = der[index..<(index + count)].reduce(0) { $0 << 8 | Int($1) }
            index += count
            return length
        }
        guard header(expecting: 0x30) != nil, let length = header(expecting: 0x06), length > 0,
              index + length <= der.count else { return nil }
        let oid = Array(der[index..<(index + length)])
        let pkcs7: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07]
        if oid == pkcs7 + [0x03] || oid == [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x01, 0x17] { return .enveloped }
        if oid == pkcs7 + [0x02] { return .signed }
        return .other
    }
}
