/// Finds markers typed with white space inside them (`[[ private ]]`, `[[ /private ]]`,
/// `[ [private] ]`): not markers, so a sender who typed both of a pair that way saw a span
/// mailsec did not, and the mail went out with it (issue 21, a red team's round). Such a
/// near-marker is refused as an invalid marker wherever a span is searched for
/// (``Redactor/spans(_:part:)``, so body, header fields, file names and HTML alike), and a
/// reading that shows one counts as marked, so that the mail is read that far.
///
/// A near-marker is either marker, folded as ``find(_:in:from:)`` folds it, with blanks
/// (``isSpace(_:)``: spaces and tabs, no line ends) and invisible scalars passed over between
/// its scalars, and at least one blank among them; only markers that hold a letter or digit
/// are followed. `[[wiki links]]` and `[ private ]` are none. The marker's scalars are followed as
/// bits (bit k: its first k scalars end here), so the scan is one pass whatever the text.
package struct NearMarkerScan: Sendable {
    private let markers: [[Unicode.Scalar]]
    /// Per marker: bit k when its first k scalars end at the last scalar.
    private var active: [UInt64]
    /// Per marker: the bits of ``active`` whose scalars had white space between them.
    private var spaced: [UInt64]
    /// Each marker's first scalar, when every marker starts with the same ASCII scalar
    /// that is no letter: while nothing is in progress the scan skips to it.
    private let first: UInt8?
    /// The folded ASCII scalars of the markers, as bits (0–63, 64–127), when every marker is ASCII:
    /// a scalar outside them that is no blank ends whatever was in progress, without the bit loops.
    private let alphabet: (low: UInt64, high: UInt64)?
    /// Per marker, for each ASCII scalar (folded): bit k + 1 where the marker's k-th scalar is it, so
    /// that an ASCII scalar advances the marker's beginnings in one shift (the shift-and search).
    private let asciiMasks: [[UInt64]]

    /// A scan for `redactor`'s markers. Markers of 63 scalars or more are not followed
    /// (a configured marker that long is left to the exact search alone).
    package init(_ redactor: Redactor) {
        // Only markers that hold a letter or digit: in `<<` … `>>` a blank between two brackets
        // (`a > > b`) is ordinary text, where in `[[ private ]]` it is a word in brackets.
        markers = [redactor.open, redactor.close].map { folded(Array($0.unicodeScalars)) }.filter { marker in
            !marker.isEmpty && marker.count < 63 && marker.contains { $0.properties.isAlphabetic || $0.properties.numericType != nil }
        }
        var low: UInt64 = 0, high: UInt64 = 0, ascii = true
        for scalar in markers.joined() {
            if scalar.value >= 0x80 { ascii = false } else if scalar.value < 64 { low |= 1 << UInt64(scalar.value) } else { high |= 1 << UInt64(scalar.value - 64) }
        }
        alphabet = ascii ? (low, high) : nil
        asciiMasks = markers.map { marker in
            var masks = [UInt64](repeating: 0, count: 128)
            for (k, scalar) in marker.enumerated() where scalar.value < 0x80 { masks[Int(scalar.value)] |= 1 << UInt64(k + 1) }
            return masks
        }
        active = Array(repeating: 0, count: markers.count)
        spaced = active
        let firsts = Set(markers.map { $0[0].value })
        if firsts.count == 1, let value = firsts.first, value < 0x80, value != 0x6B,
           !(value >= 0x61 && value <= 0x7A) { first = UInt8(value) } else { first = nil }
    }

    /// True for white space within a line as the scan passes it over: blanks and tabs, the
    /// no-break, ideographic and other spaces (Unicode's `Zs`). Line ends are not: a marker cut
    /// by one (`[[private` at a line's end) is left to the span search, as before.
    @inline(__always)
    package static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x80 { return value == 0x20 || value == 0x09 }
        if value < 0x100 { return value == 0xA0 }
        return scalar.properties.generalCategory == .spaceSeparator
    }

    /// Takes the next scalar; true when a near-marker ends with it.
    @inline(__always)
    package mutating func feed(_ scalar: Unicode.Scalar) -> Bool {
        // Nothing in progress and not the first scalar: nothing to do (most scalars of a text).
        if let first, !inProgress, scalar.value != UInt32(first) { return false }
        // An ASCII scalar that is no marker's (folded) and no blank ends what was in progress.
        if let alphabet, scalar.value < 0x80, scalar.value != 0x20, scalar.value != 0x09, !isInvisible(scalar) {
            let value = fold(scalar).value
            let inAlphabet = value < 64 ? alphabet.low & (1 << UInt64(value)) != 0 : alphabet.high & (1 << UInt64(value - 64)) != 0
            if !inAlphabet {
                for index in active.indices { active[index] = 0; spaced[index] = 0 }
                return false
            }
        }
        // What the marker search passes over already (U+2028 and U+2029 among them) is no blank here.
        let invisible = isInvisible(scalar)
        let space = !invisible && Self.isSpace(scalar)
        let skipped = space || invisible
        let folded = fold(scalar)
        var hit = false
        for index in markers.indices {
            let marker = markers[index]
            let before = active[index], beforeSpaced = spaced[index]
            // Advanced by the scalar as one of the marker's own.
            var advanced: UInt64 = 0, advancedSpaced: UInt64 = 0
            if folded.value < 0x80 {
                let mask = asciiMasks[index][Int(folded.value)]
                advanced = ((before | 1) << 1) & mask
                advancedSpaced = (beforeSpaced << 1) & mask
            } else {
                if marker[0] == folded { advanced = 2 }
                var bits = before
                while bits != 0 {
                    let k = bits.trailingZeroBitCount
                    bits &= bits - 1
                    if k < marker.count && marker[k] == folded {
                        advanced |= 1 << UInt64(k + 1)
                        if beforeSpaced & (1 << UInt64(k)) != 0 { advancedSpaced |= 1 << UInt64(k + 1) }
                    }
                }
            }
            if skipped {
                // Passed over: what was in progress stays so (only between the marker's scalars: bit 0 is never set).
                advanced |= before
                advancedSpaced |= space ? before : beforeSpaced
            }
            let full: UInt64 = 1 << UInt64(marker.count)
            if advancedSpaced & full != 0 { hit = true }
            active[index] = advanced & ~full
            spaced[index] = advancedSpaced & ~full
        }
        return hit
    }

    /// True while some marker's beginning is in progress.
    package var inProgress: Bool {
        for bits in active where bits != 0 { return true }
        return false
    }

    /// Where the first near-marker in `scalars` ends (the offset of its last scalar), or nil.
    package static func firstEnd<C: Collection>(in scalars: C, redactor: Redactor) -> C.Index?
        where C.Element == Unicode.Scalar {
        var scan = NearMarkerScan(redactor)
        guard !scan.markers.isEmpty else { return nil }
        let utf8 = scalars as? UTF8Scalars   // asked once, not at every skip
        var index = scalars.startIndex
        while index < scalars.endIndex {
            if let first = scan.first, !scan.inProgress {
                // Nothing in progress: only the markers' first scalar starts one.
                if let utf8, let at = index as? Int {
                    index = utf8.firstIndex(ofASCII: first, from: at) as! C.Index
                } else {
                    while index < scalars.endIndex, scalars[index].value != UInt32(first) { index = scalars.index(after: index) }
                }
                guard index < scalars.endIndex else { return nil }
            }
            if scan.feed(scalars[index]) { return index }
            index = scalars.index(after: index)
        }
        return nil
    }

    /// The UTF-8 sequence in progress across ``feed(bytes:)`` calls: its value so far and how
    /// many continuation bytes it still needs.
    private var sequence: (value: UInt32, needed: Int) = (0, 0)

    /// Takes bytes read as UTF-8, in pieces as they come (a sequence may be cut between
    /// pieces): each scalar as ``feed(_:)`` takes it, a byte that is no valid UTF-8 as U+FFFD.
    /// True when a near-marker ends in them.
    package mutating func feed(bytes: UnsafeRawBufferPointer) -> Bool {
        guard !markers.isEmpty else { return false }
        var index = 0
        let count = bytes.count
        while index < count {
            if let first, !inProgress, sequence.needed == 0 {
                // Nothing in progress: only the markers' first scalar (ASCII) starts one, found
                // eight bytes at a time (``UTF8Scalars/firstIndex(ofASCII:from:)`` reads bytes only).
                index = UTF8Scalars(bytes.assumingMemoryBound(to: UInt8.self)).firstIndex(ofASCII: first, from: index)
                guard index < count else { return false }
            }
            let byte = bytes[index]
            index += 1
            var scalar: Unicode.Scalar?
            if byte & 0xC0 == 0x80 {
                if sequence.needed > 0 {
                    sequence.value = sequence.value << 6 | UInt32(byte & 0x3F)
                    sequence.needed -= 1
                    if sequence.needed == 0 { scalar = Unicode.Scalar(sequence.value) ?? "\u{FFFD}" }
                } else {
                    scalar = "\u{FFFD}"
                }
            } else {
                if sequence.needed > 0 {
                    // A sequence cut short.
                    sequence.needed = 0
                    if feed("\u{FFFD}") { return true }
                }
                switch byte {
                case ..<0x80: scalar = Unicode.Scalar(byte)
                case 0xC2...0xDF: sequence = (UInt32(byte & 0x1F), 1)
                case 0xE0...0xEF: sequence = (UInt32(byte & 0x0F), 2)
                case 0xF0...0xF4: sequence = (UInt32(byte & 0x07), 3)
                default: scalar = "\u{FFFD}"
                }
            }
            if let scalar, feed(scalar) { return true }
        }
        return false
    }
}

extension Redactor {
    /// True when `text` shows a near-marker (``NearMarkerScan``).
    public func hasNearMarker(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { NearMarkerScan.firstEnd(in: UTF8Scalars($0), redactor: self) != nil }
    }

    /// True when `scalars` show a near-marker (``NearMarkerScan``).
    package func hasNearMarker(scalars: [Unicode.Scalar]) -> Bool {
        NearMarkerScan.firstEnd(in: scalars, redactor: self) != nil
    }
}
