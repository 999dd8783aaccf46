/// The look-alike scalars of the marker search (issue 21), made once from the generated
/// tables of LookAlikes.swift (scripts/gen-lookalikes: Unicode's NFKC and confusables data):
/// what ``fold(_:)`` folds to a marker's scalar (full-width, mathematical and circled letters,
/// İ and ı), and what may only look like one (a Cyrillic `а`, a `【` or `⟦`), which makes a
/// near-marker (``NearMarkerScan``).
package struct LookAlikes: Sendable {
    /// The tables of the process.
    package static let shared = LookAlikes()

    /// A set of bytes (lead bytes of UTF-8 sequences): where a skip to a marker's first scalar stops.
    package struct Leads: Sendable {
        private var bits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        /// The top bits a byte must all have to be at or above the least byte of the set:
        /// 0xE0 when every byte leads three or four bytes, 0xC0 otherwise.
        package private(set) var top: UInt64 = 0xE0
        /// True when no byte is in the set.
        package private(set) var isEmpty = true
        /// The bytes of the set while they are three at most (else a count of 4): a skip then looks for them
        /// exactly, eight bytes at a time, and passes other text beyond ASCII (CJK) as fast as ASCII.
        /// (A tuple, not an array: a scan holds its set and reads it at every stop, and an array is counted at each copy.)
        package private(set) var few: (count: Int, UInt8, UInt8, UInt8) = (0, 0, 0, 0)

        /// Adds `byte`.
        mutating func insert(_ byte: UInt8) {
            if !contains(byte) {
                switch few.count {
                case 0: few = (1, byte, byte, byte)
                case 1: few = (2, few.1, byte, byte)
                case 2: few = (3, few.1, few.2, byte)
                default: few.count = 4
                }
            }
            let bit = UInt64(1) << UInt64(byte & 63)
            switch byte >> 6 {
            case 0: bits.0 |= bit
            case 1: bits.1 |= bit
            case 2: bits.2 |= bit
            default: bits.3 |= bit
            }
            if byte < 0xE0 { top = 0xC0 }
            isEmpty = false
        }

        /// True when `byte` is in the set.
        @inline(__always)
        package func contains(_ byte: UInt8) -> Bool {
            let bit = UInt64(1) << UInt64(byte & 63)
            switch byte >> 6 {
            case 0: return bits.0 & bit != 0
            case 1: return bits.1 & bit != 0
            case 2: return bits.2 & bit != 0
            default: return bits.3 & bit != 0
            }
        }

        /// Per lead byte 0xE0...0xEF, the second bytes (their low six bits) of the set's scalars of
        /// three bytes: kana (0xE3 0x81...0x83) share their lead byte with the CJK brackets (0xE3 0x80).
        private var seconds: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                              UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

        /// True when `scalar`'s UTF-8 starts as one of the set's scalars may: its lead byte, and for
        /// a scalar of three bytes its second byte too.
        @inline(__always)
        package func contains(leadOf scalar: Unicode.Scalar) -> Bool {
            let value = scalar.value
            if value >= 0x800 && value < 0x10000 {
                guard contains(UInt8(truncatingIfNeeded: 0xE0 | value >> 12)) else { return false }
                return withUnsafeBytes(of: seconds) { $0.load(fromByteOffset: Int(value >> 12) * 8, as: UInt64.self) } & (1 << UInt64((value >> 6) & 0x3F)) != 0
            }
            let lead = value < 0x80 ? value : value < 0x800 ? 0xC0 | value >> 6 : 0xF0 | value >> 18
            return contains(UInt8(truncatingIfNeeded: lead))
        }

        /// True when the bytes at `at` may start one of the set's scalars: its lead byte is in the set
        /// and, for a lead of three bytes followed by another byte, that second byte too.
        @inline(__always)
        package func startsAt(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> Bool {
            let lead = bytes[at]
            guard contains(lead) else { return false }
            guard lead >= 0xE0 && lead < 0xF0 && at + 1 < bytes.count else { return true }
            let mask = withUnsafeBytes(of: seconds) { $0.load(fromByteOffset: Int(lead & 0x0F) * 8, as: UInt64.self) }
            return mask & (1 << UInt64(bytes[at + 1] & 0x3F)) != 0
        }

        /// Adds the bytes of `other`.
        package mutating func formUnion(_ other: Leads) {
            for byte in 0...255 where other.contains(UInt8(byte)) { insert(UInt8(byte)) }
            withUnsafeMutableBytes(of: &seconds) { mine in
                withUnsafeBytes(of: other.seconds) { theirs in
                    for index in 0..<16 {
                        let both = mine.load(fromByteOffset: index * 8, as: UInt64.self) | theirs.load(fromByteOffset: index * 8, as: UInt64.self)
                        mine.storeBytes(of: both, toByteOffset: index * 8, as: UInt64.self)
                    }
                }
            }
        }

        /// The set of the lead bytes of `scalars`.
        init(_ scalars: [Unicode.Scalar]) {
            for scalar in scalars where scalar.value >= 0x80 {
                insert(String(scalar).utf8.first!)
                let value = scalar.value
                if value >= 0x800 && value < 0x10000 {
                    withUnsafeMutableBytes(of: &seconds) { masks in
                        let offset = Int(value >> 12) * 8
                        let mask = masks.load(fromByteOffset: offset, as: UInt64.self) | 1 << UInt64((value >> 6) & 0x3F)
                        masks.storeBytes(of: mask, toByteOffset: offset, as: UInt64.self)
                    }
                }
            }
        }
    }

    /// ``compatibilityFolds`` as a dictionary.
    package let compatibility: [UInt32: UInt32]
    /// ``confusableLetters`` as a dictionary: the ASCII scalar each may be taken for.
    package let confusable: [UInt32: UInt8]
    /// ``openBrackets``, ``closeBrackets``, ``doubledBrackets``.
    package let open: Set<UInt32>, close: Set<UInt32>, doubled: Set<UInt32>

    private init() {
        var compatibility: [UInt32: UInt32] = [:]
        for index in stride(from: 0, to: compatibilityFolds.count, by: 2) {
            compatibility[compatibilityFolds[index]] = compatibilityFolds[index + 1]
        }
        self.compatibility = compatibility
        var confusable: [UInt32: UInt8] = [:]
        for index in stride(from: 0, to: confusableLetters.count, by: 2) {
            confusable[confusableLetters[index]] = UInt8(confusableLetters[index + 1])
        }
        self.confusable = confusable
        open = Set(openBrackets)
        close = Set(closeBrackets)
        doubled = Set(doubledBrackets)
    }

    /// For each ASCII scalar, the scalars beyond ASCII that ``fold(_:)`` folds to it (for `[`:
    /// `﹇` and `［`; for `k`: the Kelvin sign among others).
    package static let folding: [[Unicode.Scalar]] = {
        var result = [[Unicode.Scalar]](repeating: [], count: 128)
        for value in shared.compatibility.keys.sorted() + [0x212A] {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let folded = fold(scalar)
            if folded.value < 0x80, !result[Int(folded.value)].contains(scalar) { result[Int(folded.value)].append(scalar) }
        }
        return result
    }()

    /// For each ASCII scalar, the lead bytes of ``folding``'s scalars for it.
    package static let starts: [Leads] = folding.map(Leads.init)

    /// The lead bytes of ``openBrackets``: where a near-marker that opens with a bracket may start too.
    package static let openLeads = Leads(openBrackets.compactMap(Unicode.Scalar.init))
}
