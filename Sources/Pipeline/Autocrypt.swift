import Foundation

/// The Autocrypt header (Autocrypt Level 1).
public enum Autocrypt {
    /// `addr=ADDR; prefer-encrypt=mutual; keydata=BASE64`, already folded: the
    /// key data on lines of their own, joined by `\n ` (readers ignore the
    /// white space inside keydata). Set it as a raw header field so that it is
    /// not encoded again (``MIME/MIMEMessage/appendRawHeader(_:_:)``).
    public static func header(address: String, keydata: [UInt8]) -> String {
        "addr=\(address); prefer-encrypt=mutual; keydata=\n " + folded(keydata)
    }

    /// `addr=ADDR; keydata=BASE64`, folded as ``header(address:keydata:)``:
    /// the value of an `Autocrypt-Gossip` header (Level 1 §2.7, key gossip),
    /// which goes inside the encryption, in the header of the encrypted part.
    public static func gossipHeader(address: String, keydata: [UInt8]) -> String {
        "addr=\(address); keydata=\n " + folded(keydata)
    }

    /// The base64 of `keydata` on lines of 72 characters, joined by `\n `.
    static func folded(_ keydata: [UInt8]) -> String {
        let base64 = Data(keydata).base64EncodedString()
        var chunks: [Substring] = []
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 72, limitedBy: base64.endIndex) ?? base64.endIndex
            chunks.append(base64[index..<end])
            index = end
        }
        return chunks.joined(separator: "\n ")
    }
}
