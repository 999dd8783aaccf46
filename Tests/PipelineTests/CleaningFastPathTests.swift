import Foundation
@testable import Redaction
import TestSupport
import Testing

/// The byte scans that let plain text skip the rebuild's cleaning and block
/// cutting must agree with the slow paths on every input: a scan that missed
/// a control would leave it in a postcard, one that missed "begin" would keep
/// a uuencoded block as text.
@Suite("Cleaning's fast paths agree with the scalar walk")
struct CleaningFastPathTests {
    /// Pieces that matter to the scans (controls in both encodings, the block
    /// words in part and whole, multi-byte scalars whose bytes look like C1) and plain ones.
    static let pieces = ["a", "b", " ", "e", "g", "i", "n", "begin", "=ybegin", "begi", "BinHex", "Bin", "-----BEGIN PGP ",
                         "-----BEGIN PG", "\n", "\t", "\r", "\r\n", "\0", "\u{08}", "\u{1B}", "\u{1B}[31m", "\u{7F}",
                         "\u{80}", "\u{85}", "\u{9B}", "\u{9F}", "\u{A0}", "é", "Ā", "\u{2028}", "→", "🙂", "ł", "\u{0102}"]

    static func text(_ random: inout SeededRandom) -> String {
        (0..<Int.random(in: 0...24, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    @Test("needsCleaning is true exactly when the walk changes the text (20,000 random texts, both modes)")
    func cleaning() {
        var random = SeededRandom(seed: 0x5EED_C1EA)
        for _ in 0..<20_000 {
            let text = Self.text(&random)
            for singleLine in [false, true] {
                let changes = Cleaning.walked(text, singleLine: singleLine) != text
                #expect(Cleaning.needsCleaning(text, singleLine: singleLine) == changes,
                        "\(Array(text.unicodeScalars).map { String($0.value, radix: 16) }) singleLine \(singleLine)")
                #expect(Cleaning.cleaned(text, singleLine: singleLine) == Cleaning.walked(text, singleLine: singleLine))
            }
        }
    }

    @Test("containsAny finds a word exactly when Foundation's contains does (20,000 random texts)")
    func words() {
        var random = SeededRandom(seed: 0xB10C_5EED)
        for _ in 0..<20_000 {
            let text = Self.text(&random)
            for word: StaticString in ["begin", "BinHex", "-----BEGIN PGP "] {
                #expect(Cleaning.containsAny(text, [word]) == text.contains("\(word)"), "\(text.debugDescription) \(word)")
            }
            #expect(Cleaning.containsAny(text, ["begin", "BinHex", "-----BEGIN PGP "])
                    == (text.contains("begin") || text.contains("BinHex") || text.contains("-----BEGIN PGP ")))
        }
    }

    @Test("a text that is not native UTF-8 (bridged from NSString) is scanned too")
    func bridged() {
        let bridged = NSString(string: "plain\u{1B}[31m begin 644 x") as String
        #expect(Cleaning.needsCleaning(bridged, singleLine: false))
        #expect(Cleaning.containsAny(bridged, ["begin"]))
    }
}
