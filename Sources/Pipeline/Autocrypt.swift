import Foundation

/// The Autocrypt header (Autocrypt Level 1).
package enum Autocrypt {
    /// `addr=ADDR; prefer-encrypt=mutual; keydata=BASE64`, already folded: the
    /// key data on lines of their own, joined by `\n ` (readers ignore the
    /// white space inside keydata). Set it as a raw header field so that it is
    /// not encoded again (``MIME/MIMEMessage/appendRawHeader(_:_:)``).
    package static func header(address: String, keydata: [UInt8]) -> String {
        "addr=\(address); prefer-encrypt=mutual; keydata=\n " + folded(keydata)
    }

    /// `addr=ADDR; keydata=BASE64`, folded as ``header(address:keydata:)``:
    /// the value of an `Autocrypt-Gossip` header (Level 1 §2.7, key gossip),
    /// which goes inside the encryption, in the header of the encrypted part.
    package static func gossipHeader(address: String, keydata: [UInt8]) -> String {
        "addr=\(address); keydata=\n " + folded(keydata)
    }

    /// The base64 of `keydata` on lines of 72 characters, joined by `\n `.
    static func folded(_ keydata: [UInt8]) -> String {
        // By bytes: base64 is ASCII, and String.index(_:offsetBy:) walks
        // characters (300,000 instructions a mail for two letters, issue 24).
        let base64 = Array(Data(keydata).base64EncodedString().utf8)
        var out: [UInt8] = []
        out.reserveCapacity(base64.count + base64.count / 36 + 2)
        for start in stride(from: 0, to: base64.count, by: 72) {
            if start > 0 { out += [10, 32] }
            out += base64[start..<min(start + 72, base64.count)]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
