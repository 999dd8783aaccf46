import Synchronization

/// Finds marked spans and redacts them, in plain text and in HTML.
///
/// Markers match case-insensitively, so `[[Private]]` counts too: a typo in
/// the marker must not leak the span.
public struct Redactor: Sendable, Hashable {
    /// The marker that opens a span.
    public let open: String
    /// The marker that closes a span.
    public let close: String
    /// What a censored span becomes; the same whatever the span's length.
    public let placeholder: String

    /// The default markers `[[private]]` … `[[/private]]` and placeholder `█████`.
    public static let standard = try! Redactor(open: "[[private]]", close: "[[/private]]", placeholder: "█████")

    /// Markers and placeholder; throws ``PolicyError/Code/invalidMarkers`` for an empty marker, markers that are equal or hold one another
    /// as the spans are searched for (in any case, scalar by scalar, invisible scalars passed over), or a marker that
    /// looks like an HTML tag (`<` before a letter, `/`, `!` or `?`): in an HTML part written by hand it would be a
    /// tag, not text, and its span would be read by mailsec and not by a browser (a red team's round, issue 21).
    public init(open: String, close: String, placeholder: String = "█████") throws(PolicyError) {
        func looksLikeTag(_ marker: String) -> Bool {
            let scalars = Array(marker.unicodeScalars)
            return scalars.indices.dropLast().contains { index in
                let next = scalars[index + 1]
                return scalars[index] == "<"
                    && (("a"..."z").contains(next) || ("A"..."Z").contains(next) || next == "/" || next == "!" || next == "?")
            }
        }
        guard !open.isEmpty, !close.isEmpty, open.lowercased() != close.lowercased(), !looksLikeTag(open), !looksLikeTag(close),
              // As the spans are searched for: by scalars, folded, not by characters.
              !contains(folded(Array(close.unicodeScalars)), in: open.unicodeScalars),
              !contains(folded(Array(open.unicodeScalars)), in: close.unicodeScalars)
        else { throw PolicyError(.invalidMarkers) }
        self.open = open
        self.close = close
        self.placeholder = placeholder
    }

    /// What to do with the spans.
    public enum Mode: Sendable {
        /// Keep the span text, drop the markers (letters).
        case reveal
        /// Replace each span, markers included, by the placeholder (postcards).
        case censor
        /// Replace each span, markers included, by its numbered place `[#n]`
        /// from the catalog, which keeps the span text (partially encrypted postcards).
        case number(SpanCatalog)
        /// Replace each span as `censor` does, and note its text in the catalog: how
        /// a caller learns whether the censored text had spans (the postcard rebuild
        /// that also answers whether a mail has marked spans).
        case censorNoting(SpanCatalog)

        /// True when the span's text goes (censor, number).
        package var removesSpan: Bool {
            if case .reveal = self { return false }
            return true
        }

        /// What stands in for a removed span whose text is `content`.
        package func replacement(for content: String, placeholder: String) -> String {
            switch self {
            case .reveal: return content
            case .censor: return placeholder
            case .number(let catalog): return catalog.place(for: content)
            case .censorNoting(let catalog):
                _ = catalog.number(for: content)
                return placeholder
            }
        }
    }

    // MARK: Plain text

    /// True when `text` contains a marker (balanced or not).
    public func hasMarkers(_ text: String) -> Bool {
        // Read in place: no copy of the text as scalars, folded or not.
        contains(folded(Array(open.unicodeScalars)), in: text.unicodeScalars)
            || contains(folded(Array(close.unicodeScalars)), in: text.unicodeScalars)
    }

    /// Checks that the markers in `text` pair up; `part` names the text in errors.
    public func validate(_ text: String, part: String) throws(PolicyError) {
        var text = text
        let checked = text.withUTF8 { bytes in
            Result { () throws(PolicyError) in _ = try spansIn(UTF8Scalars(bytes), part: part) }
        }
        try checked.get()
    }

    /// Applies `mode` to plain text. Throws when markers do not pair up.
    ///
    /// The text is searched in its own UTF-8 (``UTF8Scalars``), its spans found at
    /// byte offsets: as an array of scalars it took four bytes a byte, made for the
    /// search and again for the copy (issue 24 row 5: 400 MB for a text of 100 MB,
    /// and a third of the time).
    public func redact(_ text: String, mode: Mode, part: String = "text") throws(PolicyError) -> String {
        var text = text
        let redacted = text.withUTF8 { bytes in
            Result { () throws(PolicyError) -> String? in
                let found = try spansIn(UTF8Scalars(bytes), part: part)
                guard !found.isEmpty else { return nil }
                // Built as UTF-8 in an array: appending a slice to a
                // String.UnicodeScalarView copies the whole string each time
                // (quadratic; found by scripts/bench).
                var out: [UInt8] = []
                out.reserveCapacity(bytes.count)
                var position = 0
                for span in found {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[position..<span.openStart]))
                    let content = String(decoding: UnsafeBufferPointer(rebasing: bytes[span.openEnd..<span.closeStart]), as: UTF8.self)
                    out.append(contentsOf: mode.replacement(for: content, placeholder: placeholder).utf8)
                    position = span.closeEnd
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[position...]))
                return String(decoding: out, as: UTF8.self)
            }
        }
        return try redacted.get() ?? text
    }

    /// A span in a collection of scalars (at an array's offsets, or ``UTF8Scalars``' byte offsets): [openStart, openEnd) is the opening marker,
    /// [closeStart, closeEnd) the closing one.
    package struct Span: Sendable {
        package let openStart: Int, openEnd: Int, closeStart: Int, closeEnd: Int
    }

    /// Finds the spans in `scalars`, in order, checking that markers pair up.
    /// The one search for markers: every reading of a text (the HTML rebuild's
    /// text stream too) is searched with it.
    package func spans(_ scalars: [Unicode.Scalar], part: String) throws(PolicyError) -> [Span] {
        try spansIn(scalars, part: part)
    }

    /// ``spans(_:part:)`` in any collection of scalars indexed by offsets (an array's
    /// offsets, or ``UTF8Scalars``' byte offsets): the spans' places are its indices.
    private func spansIn<C: Collection>(_ scalars: C, part: String) throws(PolicyError) -> [Span]
        where C.Element == Unicode.Scalar, C.Index == Int {
        let openScalars = folded(Array(open.unicodeScalars))
        let closeScalars = folded(Array(close.unicodeScalars))
        var result: [Span] = []
        var index = 0
        var pendingOpen: (start: Int, end: Int)?
        // Each marker's next place, looked for again only once the search has passed
        // it: looked for anew at every step, each search ran on to the following span
        // (an open's past its close), so the text was read twice over (issue 24, item 4).
        // Where a marker is found does not depend on where the search began.
        var nextOpen = find(openScalars, in: scalars, from: 0)
        var nextClose = find(closeScalars, in: scalars, from: 0)
        while index < scalars.endIndex {
            if let found = nextOpen, found.lowerBound < index { nextOpen = find(openScalars, in: scalars, from: index) }
            if let found = nextClose, found.lowerBound < index { nextClose = find(closeScalars, in: scalars, from: index) }
            switch (nextOpen, nextClose) {
            case (nil, nil):
                index = scalars.endIndex
            case let (openAt?, closeAt) where closeAt == nil || openAt.lowerBound < closeAt!.lowerBound:
                if pendingOpen != nil { throw markerError(part, scalars, openAt.lowerBound, .nested) }
                pendingOpen = (openAt.lowerBound, openAt.upperBound)
                index = openAt.upperBound
            case let (_, closeAt?):
                guard let opened = pendingOpen else { throw markerError(part, scalars, closeAt.lowerBound, .unopened) }
                result.append(Span(openStart: opened.start, openEnd: opened.end,
                                   closeStart: closeAt.lowerBound, closeEnd: closeAt.upperBound))
                pendingOpen = nil
                index = closeAt.upperBound
            default:
                index = scalars.endIndex
            }
        }
        if let opened = pendingOpen { throw markerError(part, scalars, opened.start, .unclosed) }
        if let near = NearMarkerScan.firstHit(in: scalars, redactor: self) {
            throw markerError(part, scalars, near.end, near.lookAlike ? .lookAlikeMarker : .nearMarker)
        }
        if result.count > 1, let marker = RightToLeft.firstReordered(scalars, markers: RightToLeft.markers(result)) {
            throw markerError(part, scalars, marker, .rightToLeft)
        }
        if !result.isEmpty, let marker = markerBesideBidiControl(scalars, result) {
            throw markerError(part, scalars, marker, .bidiControls)
        }
        return result
    }

    /// The first marker of `spans` that stands on a line (up to a line end or U+2029) holding an
    /// explicit bidirectional control (embeddings, overrides, isolates: U+202A–202E, U+2066–2069).
    /// Such a line is shown in another order than it is written — `[[private]] RLI LRI [[/private]]
    /// PDI LRI secret PDI PDI` shows the secret between the markers, written after them — so
    /// which text a span covers depends on the reader: the mail is refused rather than censored
    /// one way (a red team's round, issue 21). One pass over the text.
    private func markerBesideBidiControl<C: Collection>(_ scalars: C, _ spans: [Span]) -> Int?
        where C.Element == Unicode.Scalar, C.Index == Int {
        var markers: [Int] = []
        markers.reserveCapacity(spans.count * 2)
        for span in spans { markers += [span.openStart, span.closeStart] }
        var next = 0            // the first marker not yet judged
        var lineHasControl = false
        var index = scalars.startIndex
        while index < scalars.endIndex {
            let value = scalars[index].value
            if Redactor.isBidiControl(value) { lineHasControl = true }
            let lineEnds = value == 0x0A || value == 0x0D || value == 0x2029
            scalars.formIndex(after: &index)
            if lineEnds || index == scalars.endIndex {
                // Every marker that starts before here stood on this line (or an earlier one, judged already).
                while next < markers.count && markers[next] < index {
                    if lineHasControl { return markers[next] }
                    next += 1
                }
                lineHasControl = false
                if next == markers.count { return nil }
            }
        }
        return nil
    }

    /// Where either marker stands in `scalars`, in order, whether or not they pair up: the
    /// search of ``spans(_:part:)`` without its check, for a reading whose markers are counted,
    /// not censored (which of them another reading adds).
    package func markerRanges(_ scalars: [Unicode.Scalar]) -> [Range<Int>] {
        let openScalars = folded(Array(open.unicodeScalars))
        let closeScalars = folded(Array(close.unicodeScalars))
        var result: [Range<Int>] = []
        var index = 0
        var nextOpen = find(openScalars, in: scalars, from: 0)
        var nextClose = find(closeScalars, in: scalars, from: 0)
        while index < scalars.count {
            if let found = nextOpen, found.lowerBound < index { nextOpen = find(openScalars, in: scalars, from: index) }
            if let found = nextClose, found.lowerBound < index { nextClose = find(closeScalars, in: scalars, from: index) }
            let found: Range<Int>
            switch (nextOpen, nextClose) {
            case (nil, nil): return result
            case let (openAt?, nil): found = openAt
            case let (nil, closeAt?): found = closeAt
            case let (openAt?, closeAt?): found = openAt.lowerBound < closeAt.lowerBound ? openAt : closeAt
            }
            result.append(found)
            index = found.upperBound
        }
        return result
    }

    private func markerError<C: Collection>(_ part: String, _ scalars: C, _ offset: Int,
                                            _ problem: PolicyError.MarkerProblem) -> PolicyError
        where C.Element == Unicode.Scalar, C.Index == Int {
        var line = 1, column = 1
        for scalar in scalars[..<offset] {
            if scalar == "\n" { line += 1; column = 1 } else { column += 1 }
        }
        return PolicyError(.unbalancedMarkers, marker: .init(part: part, line: line, column: column, problem: problem))
    }
}

/// A String's UTF-8 read as its scalars in place, indexed by byte offset: how a plain
/// text is searched for spans (``Redactor/validate(_:part:)``, ``Redactor/redact(_:mode:part:)``)
/// without a copy of it as scalars. The bytes must be valid UTF-8, as a String's are.
package struct UTF8Scalars: Collection {
    /// The UTF-8, valid.
    package let bytes: UnsafeBufferPointer<UInt8>

    /// Reads `bytes`, which must be valid UTF-8 (a String's).
    package init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// 0.
    package var startIndex: Int { 0 }
    /// The byte count.
    package var endIndex: Int { bytes.count }

    /// Where the scalar after the one at `i` starts: its lead byte says how long it is.
    @inline(__always)
    package func index(after i: Int) -> Int {
        let byte = bytes[i]
        return i + (byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2)
    }

    /// The scalar that starts at byte offset `i`.
    @inline(__always)
    package subscript(i: Int) -> Unicode.Scalar {
        let byte = bytes[i]
        if byte < 0x80 { return Unicode.Scalar(byte) }
        let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
        var value = UInt32(byte) & (0xFF >> (length + 1))
        for k in 1..<length { value = value << 6 | UInt32(bytes[i + k] & 0x3F) }
        return Unicode.Scalar(value).unsafelyUnwrapped
    }

    /// Where the ASCII byte `byte` next stands at or after `from` (the end when nowhere):
    /// an ASCII byte is a whole scalar in UTF-8, never part of another. Eight bytes are
    /// read at a time (Policy imports no C library for memchr). Reads bytes only: valid
    /// UTF-8 or not (the raw marker search uses it too).
    @inline(__always)
    package func firstIndex(ofASCII byte: UInt8, from: Int) -> Int {
        var at = from
        let count = bytes.count
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101, pattern = ones &* UInt64(byte)
            while at + 8 <= count {
                let word = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: at, as: UInt64.self) ^ pattern
                // Some byte of the word is zero: `byte` stands among these eight.
                if (word &- ones) & ~word & (ones &* 0x80) != 0 { break }
                at += 8
            }
        }
        while at < count, bytes[at] != byte { at += 1 }
        return at
    }
}

extension UTF8Scalars {
    /// Where the ASCII byte `byte` or a byte that `leads` marks (the lead bytes of the scalars
    /// beyond ASCII that may stand for it: ``LookAlikes/starts``) next stands at or after `from`
    /// (the end when nowhere). Eight bytes are read at a time while none of them is `byte` or a
    /// lead byte of a scalar of three or four bytes (``LookAlikes`` holds no scalar of two that
    /// folds to punctuation or is a bracket), so Latin, Greek and Cyrillic text is passed as fast
    /// as ASCII. Reads bytes only: valid UTF-8 or not.
    @inline(__always)
    package func firstIndex(ofASCII byte: UInt8, orLeadIn leads: LookAlikes.Leads, from: Int) -> Int {
        guard !leads.isEmpty else { return firstIndex(ofASCII: byte, from: from) }
        var at = from
        let count = bytes.count
        let few = leads.few
        if few.count <= 3 {
            // Up to four bytes looked for exactly (the unused patterns repeat the last lead).
            let ones: UInt64 = 0x0101_0101_0101_0101, high = ones &* 0x80
            let a = ones &* UInt64(byte), b = ones &* UInt64(few.1), c = ones &* UInt64(few.2), d = ones &* UInt64(few.3)
            if let base = bytes.baseAddress {
                while at + 8 <= count {
                    let raw = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: at, as: UInt64.self)
                    let (wa, wb, wc, wd) = (raw ^ a, raw ^ b, raw ^ c, raw ^ d)
                    let zero = ((wa &- ones) & ~wa) | ((wb &- ones) & ~wb) | ((wc &- ones) & ~wc) | ((wd &- ones) & ~wd)
                    if zero & high != 0 { break }
                    at += 8
                }
            }
            while at < count, bytes[at] != byte, !leads.startsAt(bytes, at) { at += 1 }
            return at
        }
        while true {
            if let base = bytes.baseAddress {
                let ones: UInt64 = 0x0101_0101_0101_0101, pattern = ones &* UInt64(byte), high = ones &* 0x80
                while at + 8 <= count {
                    let raw = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: at, as: UInt64.self)
                    let word = raw ^ pattern
                    // A byte at or above the least lead byte's class: its top two or three bits all set.
                    let lead = (raw & (ones &* leads.top)) ^ (ones &* leads.top)
                    if (word &- ones) & ~word & high != 0 || (lead &- ones) & ~lead & high != 0 { break }
                    at += 8
                }
            }
            while at < count, bytes[at] != byte, !leads.startsAt(bytes, at) {
                at += 1
                // Back to eight at a time once a run of other bytes is passed.
                if at & 7 == 0 && at + 8 <= count { break }
            }
            if at >= count || bytes[at] == byte || leads.startsAt(bytes, at) { return Swift.min(at, count) }
        }
    }
}

/// `text`'s scalars in an array, as `Array(text.unicodeScalars)` gives them, in one
/// pass over its UTF-8: that counts the scalars first and then copies them one by one
/// through an iterator (15% of redacting 100 MB of text, issue 24 item 4).
package func scalarArray(_ text: String) -> [Unicode.Scalar] {
    var text = text
    return text.withUTF8 { bytes in
        // Written in place, not appended: an append checks capacity and uniqueness at
        // every scalar (15 instructions a byte, 6% of redacting a text with spans).
        [Unicode.Scalar](unsafeUninitializedCapacity: bytes.count) { out, written in
            var index = 0, at = 0
            let count = bytes.count
            while index < count {
                let byte = bytes[index]
                if byte < 0x80 {
                    out[at] = Unicode.Scalar(byte)
                    at += 1
                    index += 1
                    continue
                }
                // A String's UTF-8 is valid: its lead byte says how long a sequence is.
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
                var value = UInt32(byte) & (0xFF >> (length + 1))
                for k in 1..<length { value = value << 6 | UInt32(bytes[index + k] & 0x3F) }
                out[at] = Unicode.Scalar(value).unsafelyUnwrapped
                at += 1
                index += length
            }
            written = at
        }
    }
}

/// Each scalar lower-cased where that gives one scalar, so that offsets stay
/// those of the original text.
package func folded(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar] {
    scalars.map(fold)
}

/// One scalar folded: its NFKC form where that is one scalar (full-width `［`, mathematical `𝐩`,
/// circled `ⓟ`: ``compatibilityFolds``, generated from Unicode's data), and İ and ı to `i`, then
/// lower-cased where that gives one scalar. One scalar to one, so offsets stay the text's.
@inline(__always)
package func fold(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
    // ASCII, nearly all of mail, without a look-up of Unicode properties.
    if scalar.value < 0x80 {
        return scalar.value >= 0x41 && scalar.value <= 0x5A ? Unicode.Scalar(scalar.value + 32)! : scalar
    }
    // Latin-1 too (what bytes read as ISO-8859-1 give, a whole attachment of
    // them): its capitals are U+00C0...U+00DE but the multiplication sign.
    if scalar.value < 0x100 {
        if scalar.value >= 0xC0 { return scalar.value <= 0xDE && scalar.value != 0xD7 ? Unicode.Scalar(scalar.value + 32)! : scalar }
        // The Latin-1 scalars of ``compatibilityFolds``: the no-break space, ª, º, ², ³, ¹ and µ.
        switch scalar.value {
        case 0xA0: return " "
        case 0xAA: return "a"
        case 0xBA: return "o"
        case 0xB2: return "2"
        case 0xB3: return "3"
        case 0xB9: return "1"
        case 0xB5: return "\u{3BC}"
        default: return scalar
        }
    }
    // Above Latin-1 (the replacement character of every byte that is not UTF-8, what
    // UTF-7 and escapes make of random bytes): the page's table, made once.
    return Unicode.Scalar(ScalarPages.shared.entry(scalar) & ScalarPages.scalarBits)!
}

/// One scalar lower-cased where that gives one scalar, without ``fold(_:)``'s look-alikes: what
/// fold was before issue 21's look-alikes, for matching what is no marker (`<!--`, `</script`,
/// `data:`), where a full-width `！` or `ｄ` is not what a browser takes for the ASCII one.
package func lowercasedScalar(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
    if scalar.value < 0x80 { return scalar.value >= 0x41 && scalar.value <= 0x5A ? Unicode.Scalar(scalar.value + 32)! : scalar }
    guard scalar.properties.changesWhenLowercased else { return scalar }
    let lower = scalar.properties.lowercaseMapping.unicodeScalars
    return lower.count == 1 ? lower.first! : scalar
}

/// ``fold(_:)`` from Unicode's properties and ``compatibilityFolds``, for a scalar above
/// Latin-1: what the tables of ``ScalarPages`` hold.
package func foldedByProperties(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
    lowercasedScalar(LookAlikes.shared.compatibility[scalar.value].flatMap(Unicode.Scalar.init) ?? scalar)
}

/// True for scalars a reader shows as nothing (soft hyphen, zero-width
/// space and joiners, bidirectional marks, byte order mark …, and the C0
/// and C1 controls but tab, line feed and carriage return, which a browser
/// or a reader that drops controls shows as nothing too): inside a marker
/// they do not stop it from being one.
@inline(__always)
package func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    if value < 0xA0 { return value < 0x20 ? value != 0x09 && value != 0x0A && value != 0x0D : value >= 0x7F }
    // The rest of Latin-1 without a look-up of Unicode properties: only the soft hyphen.
    if value < 0x100 { return value == 0xAD }
    return ScalarPages.shared.entry(scalar) & ScalarPages.invisibleBit != 0
}

/// ``isInvisible(_:)`` from Unicode's properties, for a scalar above Latin-1: what
/// the tables of ``ScalarPages`` hold.
package func isInvisibleByProperties(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    // U+2028/2029 (line and paragraph separators) and U+FFF9–FFFC (interlinear
    // annotation marks, object replacement) are not default-ignorable, yet a
    // browser draws them as nothing inside a line: a hostile review hid
    // markers with them.
    if (0xFFF9...0xFFFC).contains(value) || value == 0x2028 || value == 0x2029 { return true }
    return value == 0xAD || scalar.properties.isDefaultIgnorableCodePoint
}

/// Where `needle` (folded) first occurs in `haystack` at or after `from`,
/// each scalar of the haystack folded as it is compared; invisible scalars
/// (``isInvisible(_:)``) inside the occurrence are passed over, so the range
/// may be longer than the needle.
func find<C: Collection>(_ needle: [Unicode.Scalar], in haystack: C, from: C.Index) -> Range<C.Index>?
    where C.Element == Unicode.Scalar {
    guard let first = needle.first else { return nil }
    // A needle starting with ASCII that no scalar beyond ASCII folds to
    // cannot start at a non-ASCII scalar: no Unicode look-up for those.
    let starts = first.value < 0x80 ? LookAlikes.starts[Int(first.value)] : nil
    let asciiFirst = starts?.isEmpty == true
    // Nor, when it is no letter ('[' of the standard markers), at any scalar but itself
    // and those that fold to it (full-width `［`): only capitals fold to ASCII letters
    // from within it. So the search skips to it, or to the lead byte of one that folds
    // to it, in a tight loop (the fold and the checks below cost 19% of redacting a text
    // with spans, issue 24 row 5).
    let exactFirst = starts != nil && !(first.value >= 0x61 && first.value <= 0x7A)
    var index = from
    while index < haystack.endIndex {
        if exactFirst, let starts {
            // In UTF-8 the scalar is its byte, found eight bytes at a time (the cast is resolved when specialized).
            if let utf8 = haystack as? UTF8Scalars, let at = index as? Int {
                index = utf8.firstIndex(ofASCII: UInt8(first.value), orLeadIn: starts, from: at) as! C.Index
            } else {
                while index < haystack.endIndex, haystack[index] != first,
                      haystack[index].value < 0x80 || fold(haystack[index]) != first { index = haystack.index(after: index) }
            }
            guard index < haystack.endIndex else { break }
        }
        let scalar = haystack[index]
        if !(asciiFirst && scalar.value >= 0x80) && fold(scalar) == first {
            var probe = haystack.index(after: index), k = 1
            while k < needle.count, probe < haystack.endIndex {
                let next = haystack[probe]
                if fold(next) == needle[k] {
                    k += 1
                } else if !isInvisible(next) {
                    break
                }
                probe = haystack.index(after: probe)
            }
            if k == needle.count { return index..<probe }
        }
        index = haystack.index(after: index)
    }
    return nil
}

/// True when any of `needles` (folded) occurs in `haystack`, as ``find(_:in:from:)`` finds
/// each: the readings of a region are searched for both markers, and two searches read every
/// reading twice (a twelfth of reading a random-byte HTML part). When every needle starts with
/// ASCII that is no letter (`[` of the standard markers), only that scalar itself starts one
/// (``find(_:in:from:)`` says why), so one pass looks for those scalars, eight at a time, and
/// tries each needle there; other needles are searched for one by one, as before.
func containsAny(_ needles: [[Unicode.Scalar]], in haystack: [Unicode.Scalar]) -> Bool {
    func exactFirst(_ needle: [Unicode.Scalar]) -> Bool {
        guard let first = needle.first else { return false }
        return first.value < 0x80 && !(first.value >= 0x61 && first.value <= 0x7A)
    }
    guard !needles.isEmpty, needles.allSatisfy(exactFirst) else {
        return needles.contains { find($0, in: haystack, from: haystack.startIndex) != nil }
    }
    // The needles' first scalars and those that fold to them (``LookAlikes/folding``).
    var firsts: [UInt32] = []
    for needle in needles {
        for value in [needle[0].value] + LookAlikes.folding[Int(needle[0].value)].map(\.value) where !firsts.contains(value) {
            firsts.append(value)
        }
    }
    return haystack.withUnsafeBufferPointer { scalars in
        scalars.withMemoryRebound(to: UInt32.self) { values in
            let count = values.count
            var index = 0
            while index < count {
                if firsts.count == 1 {
                    index = firstIndex(of: firsts[0], in: values, from: index)
                } else if firsts.count <= 4 {
                    index = firstIndex(ofAny: firsts, in: values, from: index)
                } else {
                    while index < count, !firsts.contains(values[index]) { index += 1 }
                }
                guard index < count else { return false }
                // What ``find(_:in:from:)`` does once a needle's first scalar matched.
                let folded = fold(scalars[index])
                for needle in needles where needle[0] == folded {
                    var probe = index + 1, k = 1
                    while k < needle.count, probe < count {
                        let next = scalars[probe]
                        if fold(next) == needle[k] {
                            k += 1
                        } else if !isInvisible(next) {
                            break
                        }
                        probe += 1
                    }
                    if k == needle.count { return true }
                }
                index += 1
            }
            return false
        }
    }
}

/// Where `value` next stands in `values` at or after `from` (their count when nowhere), eight
/// values compared at a time.
@inline(__always)
func firstIndex(of value: UInt32, in values: UnsafeBufferPointer<UInt32>, from: Int) -> Int {
    var index = from
    let count = values.count
    if let base = values.baseAddress {
        let wanted = SIMD8<UInt32>(repeating: value)
        while index + 8 <= count {
            let chunk = UnsafeRawPointer(base + index).loadUnaligned(as: SIMD8<UInt32>.self)
            if any(chunk .== wanted) { break }
            index += 8
        }
    }
    while index < count, values[index] != value { index += 1 }
    return index
}

/// Where any of `wanted` (one to four values) next stands in `values` at or after `from` (their
/// count when nowhere), eight values compared at a time: ``firstIndex(of:in:from:)`` for a marker's
/// first scalar and those that fold to it (`[`, `﹇`, `［`).
@inline(__always)
func firstIndex(ofAny wanted: [UInt32], in values: UnsafeBufferPointer<UInt32>, from: Int) -> Int {
    var index = from
    let count = values.count
    if let base = values.baseAddress {
        let a = SIMD8<UInt32>(repeating: wanted[0]), b = SIMD8<UInt32>(repeating: wanted[min(1, wanted.count - 1)])
        let c = SIMD8<UInt32>(repeating: wanted[min(2, wanted.count - 1)]), d = SIMD8<UInt32>(repeating: wanted[min(3, wanted.count - 1)])
        while index + 8 <= count {
            let chunk = UnsafeRawPointer(base + index).loadUnaligned(as: SIMD8<UInt32>.self)
            if any((chunk .== a) .| (chunk .== b) .| (chunk .== c) .| (chunk .== d)) { break }
            index += 8
        }
    }
    while index < count, !wanted.contains(values[index]) { index += 1 }
    return index
}

/// True when `needle` (folded) occurs in `text`, read scalar by scalar in place,
/// in its own UTF-8 (``UTF8Scalars``: a needle's first scalar is found eight bytes
/// at a time there, where String's scalar view decodes every scalar; the HTML
/// readings of a 1 MB part spent a seventh of their time in this search).
func contains(_ needle: [Unicode.Scalar], in text: String.UnicodeScalarView) -> Bool {
    var text = String(text)
    return text.withUTF8 { bytes in
        let scalars = UTF8Scalars(bytes)
        return find(needle, in: scalars, from: scalars.startIndex) != nil
    }
}

/// ``fold(_:)`` and ``isInvisible(_:)`` above Latin-1, a page of 256 scalars at a
/// time, each page made from Unicode's properties the first time a scalar of it is
/// asked for. The marker search asks for both at every scalar of every reading of a
/// region, and random bytes read as UTF-8, UTF-7 or escapes give scalars of every
/// page (U+FFFD above all): each property look-up cost more than the rest of the
/// search of that scalar (issue 24, bench case 3). Made lazily, as a table of the
/// whole Basic Multilingual Plane would cost every process ~13 ms at start; shared by
/// every thread (the resident filter's workers): a page is published whole with one
/// atomic exchange, and a thread that loses the race frees its own copy.
package final class ScalarPages: @unchecked Sendable {
    /// The tables of the process.
    package static let shared = ScalarPages()

    /// An entry's bits that hold the folded scalar.
    package static let scalarBits: UInt32 = 0x1F_FFFF
    /// The entry's bit that says the scalar is invisible.
    package static let invisibleBit: UInt32 = 1 << 31
    /// Where an entry holds the ASCII scalar ``LookAlikes/confusable`` takes the scalar for
    /// (seven bits, 0 for none): ``NearMarkerScan`` reads it.
    package static let confusableShift: UInt32 = 21
    /// The entry's bit for a bracket of ``openBrackets``.
    package static let openBit: UInt32 = 1 << 28
    /// The entry's bit for a bracket of ``closeBrackets``.
    package static let closeBit: UInt32 = 1 << 29
    /// The entry's bit for a bracket of ``doubledBrackets``.
    package static let doubledBit: UInt32 = 1 << 30

    /// The look-alike bits of `value`'s entry (``confusableShift``, ``openBit``, ``closeBit``, ``doubledBit``).
    private static func lookAlikeBits(_ value: UInt32) -> UInt32 {
        let tables = LookAlikes.shared
        var bits = UInt32(tables.confusable[value] ?? 0) << confusableShift
        if tables.open.contains(value) { bits |= openBit }
        if tables.close.contains(value) { bits |= closeBit }
        if tables.doubled.contains(value) { bits |= doubledBit }
        return bits
    }
    private static let pageCount = 0x11_0000 >> 8

    /// Each page's address as an integer, 0 until it is made. Never freed: the
    /// shared tables live as long as the process (a page is 1 KiB).
    private let pages: UnsafeMutablePointer<Atomic<Int>>
    /// How many pages this table has made (a thread that lost a race counts too):
    /// work counted, for the tests.
    private let made = Atomic<Int>(0)

    /// Empty tables; ``shared`` is the one the search uses (tests make their own).
    package init() {
        pages = .allocate(capacity: Self.pageCount)
        for index in 0..<Self.pageCount { (pages + index).initialize(to: Atomic(0)) }
    }

    /// How many pages have been made.
    package var pagesMade: Int { made.load(ordering: .relaxed) }

    /// The entry of `scalar`: its ``fold(_:)`` in ``scalarBits``, ``invisibleBit`` when ``isInvisible(_:)``,
    /// and its look-alike bits (``confusableShift``, ``openBit``, ``closeBit``, ``doubledBit``).
    @inline(__always)
    package func entry(_ scalar: Unicode.Scalar) -> UInt32 {
        let value = scalar.value
        var page = pages[Int(value >> 8)].load(ordering: .acquiring)
        if page == 0 { page = make(Int(value >> 8)) }
        return UnsafePointer<UInt32>(bitPattern: page).unsafelyUnwrapped[Int(value & 0xFF)]
    }

    @inline(never)
    private func make(_ index: Int) -> Int {
        let page = UnsafeMutablePointer<UInt32>.allocate(capacity: 256)
        for low in 0..<256 {
            let value = UInt32(index << 8 | low)
            // Surrogates are no scalars: never asked for.
            guard let scalar = Unicode.Scalar(value) else { (page + low).initialize(to: value); continue }
            let folded = value < 0x100 ? fold(scalar) : foldedByProperties(scalar)
            let invisible = value < 0x100 ? isInvisible(scalar) : isInvisibleByProperties(scalar)
            (page + low).initialize(to: folded.value | (invisible ? Self.invisibleBit : 0) | Self.lookAlikeBits(value))
        }
        made.add(1, ordering: .relaxed)
        let address = Int(bitPattern: page)
        let (exchanged, current) = pages[index].compareExchange(expected: 0, desired: address,
                                                                 successOrdering: .releasing, failureOrdering: .acquiring)
        if exchanged { return address }
        page.deallocate()
        return current
    }
}
