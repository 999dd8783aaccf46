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
///
/// A marker typed with look-alikes is a near-marker too (issue 21): a scalar that Unicode's
/// confusables take for the marker's letter, digit or slash (Cyrillic `а` in `[[privаte]]`,
/// ``LookAlikes/confusable``), or a bracket beyond ASCII for the marker's opening or closing
/// ASCII bracket (`【【private】】`, `〔〔/private〕〕`; one of ``doubledBrackets``, `⸨` or `⟦`, for one
/// or two of them), with or without blanks. What ``fold(_:)`` folds to the marker's scalars
/// (`［［ｐｒｉｖａｔｅ］］`) makes a marker, no near-marker, unless the scan is made `countingFolds`:
/// then it is one too, for a search of bytes that only finds markers written in ASCII
/// (``Redactor/MarkerSearch``). What each scalar is, is one look-up in ``ScalarPages``.
package struct NearMarkerScan: Sendable {
    private let markers: [[Unicode.Scalar]]
    /// Per marker: bit k when its first k scalars end at the last scalar.
    private var active: [UInt64]
    /// Per marker: the bits of ``active`` whose scalars had white space between them, or a look-alike among them.
    private var spaced: [UInt64]
    /// Per marker: the bits of ``active`` with a look-alike among their scalars (for the error's words).
    private var alike: [UInt64]
    /// Per marker: bit k where its k-th scalar is an ASCII opening bracket (general category Ps: `[`, `(`, `{`).
    private let opens: [UInt64]
    /// Per marker: bit k where its k-th scalar is an ASCII closing bracket (Pe).
    private let closes: [UInt64]
    /// Whether a marker written with scalars that fold to its own counts (``NearMarkerScan``).
    private let countingFolds: Bool
    /// Whether the last near-marker ``feed(_:)`` found had a look-alike in it (else only blanks).
    package private(set) var lastWasLookAlike = false
    /// Lead bytes of the scalars beyond ASCII that may start a near-marker when ``first`` does.
    private let firstLeads: LookAlikes.Leads
    /// Whether every marker opens with an ASCII opening bracket, which a bracket beyond ASCII may stand for.
    private let opensFirst: Bool
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
    package init(_ redactor: Redactor, countingFolds: Bool = false) {
        self.countingFolds = countingFolds
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
        alike = active
        func bits(_ marker: [Unicode.Scalar], _ category: Unicode.GeneralCategory) -> UInt64 {
            var result: UInt64 = 0
            for (k, scalar) in marker.enumerated() where scalar.value < 0x80 && scalar.properties.generalCategory == category {
                result |= 1 << UInt64(k)
            }
            return result
        }
        opens = markers.map { bits($0, .openPunctuation) }
        closes = markers.map { bits($0, .closePunctuation) }
        let firsts = Set(markers.map { $0[0].value })
        if firsts.count == 1, let value = firsts.first, value < 0x80, !(value >= 0x61 && value <= 0x7A) {
            first = UInt8(value)
            // What folds to it, and a bracket beyond ASCII when it is an opening bracket.
            var leads = LookAlikes.starts[Int(value)]
            opensFirst = opens.allSatisfy { $0 & 1 != 0 }
            if opensFirst { leads.formUnion(LookAlikes.openLeads) }
            firstLeads = leads
        } else {
            first = nil
            firstLeads = LookAlikes.Leads([])
            opensFirst = false
        }
    }

    /// Whether `scalar`, beyond ASCII, may start a near-marker while nothing is in progress: it
    /// folds to the markers' ``first`` scalar, or is a bracket beyond ASCII that stands for it.
    /// (Static, its fields passed: a method of the scan called from ``feed(_:)`` copied the scan,
    /// its arrays counted, at every such scalar in a debug build.)
    @inline(__always)
    private static func mayStart(_ scalar: Unicode.Scalar, first: UInt8, _ firstLeads: LookAlikes.Leads, _ opensFirst: Bool) -> Bool {
        guard firstLeads.contains(leadOf: scalar) else { return false }
        let entry = ScalarPages.shared.entry(scalar)
        return entry & ScalarPages.scalarBits == UInt32(first) || opensFirst && entry & ScalarPages.openBit != 0
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
        // Nothing in progress and not the first scalar (nor one beyond ASCII whose lead byte a look-alike of
        // it has): nothing to do (most scalars of a text).
        if let first, !inProgress, scalar.value != UInt32(first), scalar.value < 0x80 || !Self.mayStart(scalar, first: first, firstLeads, opensFirst) { return false }
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
        // Beyond ASCII, one look-up: the fold, whether invisible, and the look-alike bits.
        let entry = scalar.value < 0x80 ? fold(scalar).value | (isInvisible(scalar) ? ScalarPages.invisibleBit : 0)
            : ScalarPages.shared.entry(scalar)
        let invisible = entry & ScalarPages.invisibleBit != 0
        let space = !invisible && Self.isSpace(scalar)
        let skipped = space || invisible
        let folded = Unicode.Scalar(entry & ScalarPages.scalarBits).unsafelyUnwrapped
        let confusable = (entry >> ScalarPages.confusableShift) & 0x7F
        var hit = false
        for index in markers.indices {
            let marker = markers[index]
            let before = active[index], beforeSpaced = spaced[index], beforeAlike = alike[index]
            // Advanced by the scalar as one of the marker's own.
            var advanced: UInt64 = 0, advancedSpaced: UInt64 = 0, advancedAlike: UInt64 = 0
            if scalar.value < 0x80 {
                let mask = asciiMasks[index][Int(folded.value)]
                advanced = ((before | 1) << 1) & mask
                advancedSpaced = (beforeSpaced << 1) & mask
                advancedAlike = (beforeAlike << 1) & mask
            } else if !invisible {
                // Each beginning (bit 0: none yet) that this scalar may continue, as the marker's own
                // scalar (folded), or as a look-alike of it.
                var bits = before | 1
                while bits != 0 {
                    let k = bits.trailingZeroBitCount
                    bits &= bits - 1
                    guard k < marker.count else { continue }
                    let next: UInt64 = 1 << UInt64(k + 1)
                    var step: UInt64 = 0, lookAlike = false
                    if marker[k] == folded {
                        step = next
                        lookAlike = countingFolds
                    } else if confusable != 0 && marker[k].value == confusable {
                        step = next
                        lookAlike = true
                    } else if entry & ScalarPages.openBit != 0 && opens[index] & (1 << UInt64(k)) != 0 {
                        step = next
                        if entry & ScalarPages.doubledBit != 0 && opens[index] & next != 0 { step |= next << 1 }
                        lookAlike = true
                    } else if entry & ScalarPages.closeBit != 0 && closes[index] & (1 << UInt64(k)) != 0 {
                        step = next
                        if entry & ScalarPages.doubledBit != 0 && closes[index] & next != 0 { step |= next << 1 }
                        lookAlike = true
                    }
                    guard step != 0 else { continue }
                    advanced |= step
                    if lookAlike || beforeSpaced & (1 << UInt64(k)) != 0 { advancedSpaced |= step }
                    if lookAlike || beforeAlike & (1 << UInt64(k)) != 0 { advancedAlike |= step }
                }
            }
            if skipped {
                // Passed over: what was in progress stays so (only between the marker's scalars: bit 0 is never set).
                advanced |= before
                advancedSpaced |= space ? before : beforeSpaced
                advancedAlike |= beforeAlike
            }
            let full: UInt64 = 1 << UInt64(marker.count)
            if advancedSpaced & full != 0 {
                hit = true
                lastWasLookAlike = advancedAlike & full != 0
            }
            active[index] = advanced & ~full
            spaced[index] = advancedSpaced & ~full
            alike[index] = advancedAlike & ~full
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
        firstHit(in: scalars, redactor: redactor)?.end
    }

    /// Where the first near-marker in `scalars` ends (the offset of its last scalar), and whether a
    /// look-alike was in it (else only blanks); nil when there is none.
    package static func firstHit<C: Collection>(in scalars: C, redactor: Redactor) -> (end: C.Index, lookAlike: Bool)?
        where C.Element == Unicode.Scalar {
        var scan = NearMarkerScan(redactor)
        guard !scan.markers.isEmpty else { return nil }
        let utf8 = scalars as? UTF8Scalars   // asked once, not at every skip
        let (leads, opensFirst) = (scan.firstLeads, scan.opensFirst)
        var index = scalars.startIndex
        while index < scalars.endIndex {
            if let first = scan.first, !scan.inProgress {
                // Nothing in progress: only the markers' first scalar starts one.
                if let utf8, let at = index as? Int {
                    index = utf8.firstIndex(ofASCII: first, orLeadIn: leads, from: at) as! C.Index
                }
                // A scalar beyond ASCII that cannot start one (kana among brackets' lead bytes) is passed here.
                while index < scalars.endIndex, scalars[index].value != UInt32(first),
                      scalars[index].value < 0x80 || !mayStart(scalars[index], first: first, leads, opensFirst) {
                    index = scalars.index(after: index)
                    if utf8 != nil { break }
                }
                guard index < scalars.endIndex else { return nil }
                if scalars[index].value != UInt32(first), scalars[index].value < 0x80 || !mayStart(scalars[index], first: first, leads, opensFirst) { continue }
            }
            if scan.feed(scalars[index]) { return (index, scan.lastWasLookAlike) }
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
                index = UTF8Scalars(bytes.assumingMemoryBound(to: UInt8.self)).firstIndex(ofASCII: first, orLeadIn: firstLeads, from: index)
                guard index < count else { return false }
                // A lead byte: the scalar it starts, when whole here, passed unless it may start one.
                let lead = bytes[index]
                if lead >= 0xE0 && lead < 0xF0 && index + 2 < count && bytes[index + 1] & 0xC0 == 0x80 && bytes[index + 2] & 0xC0 == 0x80 {
                    let value = UInt32(lead & 0x0F) << 12 | UInt32(bytes[index + 1] & 0x3F) << 6 | UInt32(bytes[index + 2] & 0x3F)
                    if let scalar = Unicode.Scalar(value), value >= 0x800, !Self.mayStart(scalar, first: first, firstLeads, opensFirst) {
                        index += 3
                        continue
                    }
                }
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

/// ``NearMarkerScan`` over bytes read as UTF-16, in each byte order, as they come (issue 21: a
/// UTF-16 file attached as `application/octet-stream` holding `［［private］］`, `[[privаte]]` with a
/// Cyrillic `а` or `【【private】】` went out with opaque parts passed, where the same file in UTF-8
/// was censored or refused: the byte search reads UTF-16 for markers written in ASCII only).
/// Read where a viewer would guess UTF-16: after a byte-order mark at the start, and in every
/// stretch of 4 KiB with a zero in at least every eighth byte; a stretch that looks otherwise ends
/// whatever was in progress. Time linear in the bytes: one scalar fed per two bytes and order.
package struct UTF16NearMarkerScan: Sendable {
    /// Little-endian first, then big-endian.
    private var scans: [NearMarkerScan]
    /// A scan with nothing in progress, to start again from.
    private let fresh: NearMarkerScan
    /// A high surrogate waiting for its low one, per order.
    private var high: [UInt16?] = [nil, nil]
    /// The byte of a unit cut between two pieces.
    private var carry: UInt8?
    /// The first two bytes, to find a byte-order mark.
    private var head: [UInt8] = []
    private var byteOrderMark = false
    private static let stretch = 4096

    /// A scan for `redactor`'s near-markers (counting folded forms, as the byte search's scan does).
    package init(_ redactor: Redactor) {
        fresh = NearMarkerScan(redactor, countingFolds: true)
        scans = [fresh, fresh]
    }

    /// Takes the next bytes; true when a near-marker ends in them.
    package mutating func feed(_ piece: UnsafeRawBufferPointer) -> Bool {
        var start = 0
        while start < piece.count {
            let end = min(piece.count, start + Self.stretch)
            let stretch = UnsafeRawBufferPointer(rebasing: piece[start..<end])
            start = end
            if head.count < 2 {
                head += stretch.prefix(2 - head.count)
                byteOrderMark = head == [0xFF, 0xFE] || head == [0xFE, 0xFF]
            }
            var zeros = 0
            for byte in stretch where byte == 0 { zeros += 1 }
            guard byteOrderMark || zeros * 8 >= stretch.count else {
                // Not read as UTF-16 here: what was in progress ends; the units keep their alignment.
                scans = [fresh, fresh]
                high = [nil, nil]
                carry = ((carry == nil ? 0 : 1) + stretch.count) & 1 == 1 ? stretch.last : nil
                continue
            }
            for byte in stretch {
                guard let first = carry else { carry = byte; continue }
                carry = nil
                if take(UInt16(first) | UInt16(byte) << 8, order: 0) || take(UInt16(first) << 8 | UInt16(byte), order: 1) { return true }
            }
        }
        return false
    }

    private mutating func take(_ unit: UInt16, order: Int) -> Bool {
        if unit >= 0xD800 && unit < 0xDC00 {
            let lone = high[order] != nil
            high[order] = unit
            return lone && scans[order].feed("\u{FFFD}")
        }
        var scalar: Unicode.Scalar = "\u{FFFD}"
        if unit >= 0xDC00 && unit < 0xE000 {
            if let lead = high[order] {
                scalar = Unicode.Scalar(0x10000 + (UInt32(lead - 0xD800) << 10) + UInt32(unit - 0xDC00)) ?? "\u{FFFD}"
            }
        } else {
            if high[order] != nil && scans[order].feed("\u{FFFD}") { return true }
            scalar = Unicode.Scalar(unit) ?? "\u{FFFD}"
        }
        high[order] = nil
        return scans[order].feed(scalar)
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
