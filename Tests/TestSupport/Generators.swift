import Foundation

/// SplitMix64: small, seedable, the same sequence on every machine, so that a
/// generated test input is reproduced from its seed alone.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}

/// Quoted-printable (RFC 2045) of `bytes`, LF line ends, lines of at most 76.
public func quotedPrintable(_ bytes: [UInt8]) -> String {
    var out = "", lineLength = 0
    for byte in bytes {
        let piece: String
        if byte == 10 { out += "\n"; lineLength = 0; continue }
        if (33...126).contains(byte) && byte != 61 { piece = String(UnicodeScalar(byte)) }
        else if byte == 32 { piece = " " }
        else { piece = String(format: "=%02X", byte) }
        if lineLength + piece.count > 73 { out += "=\n"; lineLength = 0 }
        out += piece
        lineLength += piece.count
    }
    return out.replacingOccurrences(of: " \n", with: "=20\n")
}
