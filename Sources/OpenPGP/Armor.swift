import Foundation

/// OpenPGP ASCII armor (RFC 4880 §6), so that binary key data exported once
/// can be shown armored without asking gpg a second time.
public enum Armor {
    /// Armors `data` as `-----BEGIN PGP <type>-----` with a CRC-24 checksum.
    public static func armor(_ data: [UInt8], type: String = "PUBLIC KEY BLOCK") -> String {
        let base64 = Data(data).base64EncodedString()
        var lines: [String] = []
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[index..<end]))
            index = end
        }
        let crc = crc24(data)
        let checksum = Data([UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]).base64EncodedString()
        return (["-----BEGIN PGP \(type)-----", ""] + lines + ["=" + checksum, "-----END PGP \(type)-----", ""])
            .joined(separator: "\n")
    }

    static func crc24(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xB704CE
        for byte in data {
            crc ^= UInt32(byte) << 16
            for _ in 0..<8 {
                crc <<= 1
                if crc & 0x1000000 != 0 { crc ^= 0x1864CFB }
            }
        }
        return crc & 0xFFFFFF
    }
}
