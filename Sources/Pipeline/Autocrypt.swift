import Foundation

/// The Autocrypt header (Autocrypt Level 1).
public enum Autocrypt {
    /// `addr=ADDR; prefer-encrypt=mutual; keydata=BASE64`, the key data split
    /// by spaces so the header can be folded (white space inside keydata is
    /// ignored by readers).
    public static func header(address: String, keydata: [UInt8]) -> String {
        let base64 = Data(keydata).base64EncodedString()
        var chunks: [Substring] = []
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 72, limitedBy: base64.endIndex) ?? base64.endIndex
            chunks.append(base64[index..<end])
            index = end
        }
        return "addr=\(address); prefer-encrypt=mutual; keydata=" + chunks.joined(separator: " ")
    }
}
