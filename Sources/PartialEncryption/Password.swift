import Platform

/// The password of a partially encrypted postcard: 16 characters from an
/// alphabet of 32 without look-alikes (no 0/O, no 1/I), so 80 bits, written
/// in four groups of four to be read aloud: `K7WD-9MZQ-HX4C-2RPF`.
///
/// The characters live in a byte array that is zeroed when the value is
/// dropped by its last owner; `description` never shows them.
public final class SpanPassword: CustomStringConvertible, @unchecked Sendable {
    // @unchecked: `bytes` is never mutated after init except in deinit, when
    // no other reference exists.
    /// The alphabet: digits 2–9 and letters without I and O.
    public static let alphabet = Array("23456789ABCDEFGHJKLMNPQRSTUVWXYZ".utf8)
    /// Characters in a generated password.
    public static let length = 16
    /// Entropy of a generated password.
    public static let bits = 80

    private var bytes: [UInt8]

    /// A fresh password from the system's random number generator.
    public init() {
        var generator = SystemRandomNumberGenerator()
        // 256 is a multiple of 32: masking keeps every character equally likely.
        bytes = (0..<Self.length).map { _ in Self.alphabet[Int(UInt8.random(in: 0...255, using: &generator) & 31)] }
    }

    /// A password as the reader typed it. Case, white space and dashes do not
    /// matter (as on the reading page, whose script drops `[\s-]`); nil when
    /// what remains is not made of the alphabet's characters.
    public init?(typed: String) {
        let kept = String(String.UnicodeScalarView(typed.uppercased().unicodeScalars.filter {
            $0 != "-" && !$0.properties.isWhitespace
        })).utf8
        guard !kept.isEmpty, kept.allSatisfy(Self.alphabet.contains) else { return nil }
        bytes = Array(kept)
    }

    deinit {
        zeroize(&bytes)
    }

    /// The normalised characters, the input of the key derivation.
    func withNormalized<R>(_ body: ([UInt8]) throws -> R) rethrows -> R { try body(bytes) }

    /// The password grouped for reading aloud, to hand to the sender only.
    public var grouped: String {
        stride(from: 0, to: bytes.count, by: 4).map { start in
            String(decoding: bytes[start..<min(start + 4, bytes.count)], as: UTF8.self)
        }.joined(separator: "-")
    }

    /// Never the characters.
    public var description: String { "<password>" }
}
