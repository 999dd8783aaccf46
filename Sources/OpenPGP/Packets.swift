import Foundation
import Platform

/// One OpenPGP packet (RFC 4880 §4.2, RFC 9580 §4.2), as it stands in the data.
package struct Packet: Sendable {
    /// The packet tag: 1 PKESK, 2 signature, 6 public key, 9 SED, 13 user ID, 14 public subkey, 18 SEIPD, 20 AEAD …
    package let tag: Int
    /// The whole packet, header included.
    package let bytes: ArraySlice<UInt8>
    /// The body; for a packet in partial lengths (only data packets are) its first octet only.
    package let body: ArraySlice<UInt8>

    /// A signature packet's type (0x10–0x13 certification, 0x18 subkey binding, 0x1F direct key …); nil otherwise.
    package var signatureType: UInt8? {
        guard tag == 2, let version = body.first else { return nil }
        switch version {
        case 3: return body.count > 2 ? body[body.startIndex + 2] : nil
        default: return body.count > 1 ? body[body.startIndex + 1] : nil
        }
    }
}

/// What protects an encrypted message's content, read from its packets.
package enum EncryptedDataKind: Sendable, Equatable {
    /// Tag 9: symmetrically encrypted data, no integrity protection at all.
    case unprotected
    /// Tag 18 version 1: CFB with a modification detection code (SHA-1).
    case mdc
    /// Tag 18 version 2 (RFC 9580) or tag 20 (GnuPG's OCB packet): AEAD.
    case aead
}

/// Reading OpenPGP packet headers: far enough to see which packets a message
/// or a key holds, never to decrypt anything.
package enum Packets {
    /// The binary data of `bytes`: the base64 of an ASCII-armored block, or
    /// `bytes` as they are when they are not armored. nil for armor that does not decode.
    package static func binary(_ bytes: [UInt8]) -> [UInt8]? {
        let text = String(decoding: bytes.prefix(64 << 20), as: UTF8.self)
        guard let begin = text.range(of: "-----BEGIN PGP ") else { return bytes }
        var lines = text[begin.upperBound...].split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).dropFirst()
        // Armor headers end at the first empty line.
        if lines.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            while let line = lines.first, !line.trimmingCharacters(in: .whitespaces).isEmpty { lines = lines.dropFirst() }
        }
        var base64 = ""
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("-----END") || (trimmed.hasPrefix("=") && trimmed.count == 5) { break }
            base64 += trimmed
        }
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// The packets of `data` in order. A packet in partial lengths (a data
    /// packet) ends the walk: what follows it is its own content.
    package static func list(_ data: [UInt8]) -> [Packet] {
        var packets: [Packet] = []
        var index = 0
        while index < data.count {
            let start = index
            let ctb = data[index]
            guard ctb & 0x80 != 0 else { break }
            index += 1
            let tag: Int
            var length: Int?
            var partial = false
            if ctb & 0x40 != 0 {  // new format
                tag = Int(ctb & 0x3F)
                guard index < data.count else { break }
                let first = Int(data[index])
                switch first {
                case 0..<192: length = first; index += 1
                case 192..<224:
                    guard index + 1 < data.count else { return packets }
                    length = ((first - 192) << 8) + Int(data[index + 1]) + 192; index += 2
                case 255:
                    guard index + 4 < data.count else { return packets }
                    length = data[(index + 1)...(index + 4)].reduce(0) { $0 << 8 | Int($1) }; index += 5
                default: partial = true
                }
            } else {  // old format
                tag = Int((ctb >> 2) & 0x0F)
                switch ctb & 3 {
                case 0: guard index < data.count else { return packets }; length = Int(data[index]); index += 1
                case 1:
                    guard index + 1 < data.count else { return packets }
                    length = Int(data[index]) << 8 | Int(data[index + 1]); index += 2
                case 2:
                    guard index + 3 < data.count else { return packets }
                    length = data[index...(index + 3)].reduce(0) { $0 << 8 | Int($1) }; index += 4
                default: partial = true  // indeterminate: to the end
                }
            }
            if partial {
                // Only the first octet of the body is given: it tells a data packet's version.
                packets.append(Packet(tag: tag, bytes: data[start...], body: data[index..<min(index + 1, data.count)]))
                break
            }
            guard let length, index + length <= data.count else { break }
            packets.append(Packet(tag: tag, bytes: data[start..<(index + length)], body: data[index..<(index + length)]))
            index += length
        }
        return packets
    }

    /// How the first encrypted data packet of an OpenPGP message protects its
    /// content; nil when none is found (gpg then says what it is).
    package static func encryptedDataKind(_ message: [UInt8]) -> EncryptedDataKind? {
        guard let data = binary(message) else { return nil }
        for packet in list(data) {
            switch packet.tag {
            case 9: return .unprotected
            case 18: return packet.body.first == 2 ? .aead : .mdc
            case 20: return .aead
            default: continue
            }
        }
        return nil
    }

    /// The v4 fingerprint of a public key or subkey packet (SHA-1 over 0x99,
    /// the two-octet length and the body, RFC 4880 §12.2); nil for other versions.
    package static func fingerprint(of packet: Packet) -> String? {
        guard packet.tag == 6 || packet.tag == 14, packet.body.first == 4, packet.body.count < 0x10000 else { return nil }
        let prefix: [UInt8] = [0x99, UInt8(packet.body.count >> 8), UInt8(packet.body.count & 0xFF)]
        return Digest.hex(Digest.sha1(prefix + packet.body), uppercase: true)
    }
}

/// One transferable key read from key data: its primary key packet and
/// everything up to the next one (user IDs, signatures, subkeys).
package struct KeyBlock: Sendable {
    /// The v4 fingerprint, upper case; nil for another key version.
    package let fingerprint: String?
    /// True when it is (or holds) secret key material (tags 5 and 7).
    package let secret: Bool
    /// Its packets, as they stand.
    package let bytes: [UInt8]
}

extension Packets {
    /// The keys in `data`: every ASCII-armored block in it (a file may hold
    /// several, one after another), or the data itself when it holds no
    /// armor. Nil when the data does not read as OpenPGP packets (armor that
    /// does not decode, packets cut short, anything before the first key).
    package static func keys(in data: [UInt8]) -> [KeyBlock]? {
        let text = String(decoding: data, as: UTF8.self)
        var binaries: [[UInt8]] = []
        if text.contains("-----BEGIN PGP ") {
            for block in text.components(separatedBy: "-----BEGIN PGP ").dropFirst() {
                guard let binary = Packets.binary(Array(("-----BEGIN PGP " + block).utf8)) else { return nil }
                binaries.append(binary)
            }
        } else {
            binaries = [data]
        }
        var keys: [KeyBlock] = []
        for binary in binaries where !binary.isEmpty {
            let packets = list(binary)
            guard packets.reduce(0, { $0 + $1.bytes.count }) == binary.count, let first = packets.first,
                  first.tag == 5 || first.tag == 6 else { return nil }
            var current: [Packet] = []
            func close() {
                guard let primary = current.first else { return }
                let secret = current.contains { $0.tag == 5 || $0.tag == 7 }
                // A secret key's fingerprint is its public part's; no need to tell it for a key that is refused.
                keys.append(KeyBlock(fingerprint: secret ? nil : fingerprint(of: primary), secret: secret,
                                     bytes: current.flatMap { Array($0.bytes) }))
                current = []
            }
            for packet in packets {
                if packet.tag == 5 || packet.tag == 6 { close() }
                current.append(packet)
            }
            close()
        }
        return keys
    }
}
