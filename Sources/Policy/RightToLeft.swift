/// Right-to-left text as the marker checks judge it (issue 21, a hostile review's F3): in a
/// right-to-left paragraph a reader shows runs of left-to-right text from right to left, so
/// `א [[private]] ב [[/private]] ג SECRET ד [[private]] ה [[/private]]` shows
/// `[[private]] ד SECRET ג [[/private]]` to one who reads the line from the left, while the
/// span written holds `ב`. Rather than model what each reader shows, such a line is refused
/// (``PolicyError/MarkerProblem/rightToLeft``) where the order of runs can pair an opening and a
/// closing marker that are not one span (``firstReordered(_:markers:allRightToLeft:)``).
///
/// Hand-written, and coarse on purpose: the standard library has no bidirectional classes, and
/// Policy links no C library (ICU's `u_charDirection` would be exact). A scalar counts as
/// right-to-left by block: Hebrew, Arabic, Syriac, Thaana, N'Ko, Samaritan, Mandaic and their
/// supplements and presentation forms, the right-to-left blocks of the supplementary planes,
/// and RIGHT-TO-LEFT MARK and ARABIC LETTER MARK. So combining marks and Arabic digits of those
/// blocks count too: more is refused, never less.
package enum RightToLeft {
    /// True for a scalar of a right-to-left block, RLM (U+200F) or ALM (U+061C).
    @inline(__always)
    package static func isRTL(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x0590 { return false }
        if value <= 0x08FF { return true }                       // Hebrew … Arabic Extended-A
        if value == 0x200F { return true }                       // RIGHT-TO-LEFT MARK
        if value >= 0xFB1D && value <= 0xFDFF { return true }    // Hebrew and Arabic presentation forms A
        if value >= 0xFE70 && value <= 0xFEFF { return value != 0xFEFF }  // Arabic presentation forms B
        if value >= 0x10800 && value <= 0x10FFF { return true }  // Cypriot … Old Uyghur, Hanifi Rohingya, Yezidi
        if value >= 0x1E800 && value <= 0x1EFFF { return true }  // Mende Kikakui, Adlam, Arabic mathematical
        return false
    }

    /// True for a scalar that decides a paragraph's direction when it comes first (rule P2 of
    /// the bidirectional algorithm: the first strong letter): a right-to-left one, or a letter
    /// or LRM, which is left-to-right.
    @inline(__always)
    static func isStrong(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x80 { return (scalar.value | 0x20) >= 0x61 && (scalar.value | 0x20) <= 0x7A }
        return isRTL(scalar) || scalar.value == 0x200E || scalar.properties.isAlphabetic
    }

    /// A marker's place: where it starts and ends, and whether it opens a span.
    package struct Marker {
        package let start: Int, end: Int, opens: Bool
    }

    /// The markers of `spans`, in order.
    package static func markers(_ spans: [Redactor.Span]) -> [Marker] {
        var markers: [Marker] = []
        markers.reserveCapacity(spans.count * 2)
        for span in spans {
            markers.append(Marker(start: span.openStart, end: span.openEnd, opens: true))
            markers.append(Marker(start: span.closeStart, end: span.closeEnd, opens: false))
        }
        return markers
    }

    /// The first marker of a right-to-left paragraph where a reader who reads the line from the left
    /// sees an opening and a closing marker pair up that are not one span written. In such a paragraph
    /// runs of left-to-right text are shown from right to left, so `א [[private]] ב [[/private]] ג SECRET
    /// ד [[private]] ה [[/private]]` shows `[[private]] ד SECRET ג [[/private]]`. Modelled coarsely: a
    /// right-to-left letter ends a run, the runs are read in the other order and the markers of a run in
    /// their own; each opening marker so read that is followed by a closing one must be followed by its
    /// own. One span on a line, or spans that no right-to-left text parts, read as they are written.
    ///
    /// A paragraph ends at a line end or U+2029; its direction is its first strong letter's (rule P2 of
    /// the bidirectional algorithm, as readers show plain text, header fields and file names), or
    /// right-to-left when `allRightToLeft` (an HTML part that sets a direction, whose paragraphs the
    /// text stream does not show: taken as one). Reads the text up to the last marker, and a paragraph's
    /// start up to its first strong letter.
    package static func firstReordered<C: Collection>(_ scalars: C, markers: [Marker], allRightToLeft: Bool = false) -> Int?
        where C.Element == Unicode.Scalar, C.Index == Int {
        func isLineEnd(_ value: UInt32) -> Bool { !allRightToLeft && (value == 0x0A || value == 0x0D || value == 0x2029) }
        // The markers of the paragraph read so far: (run, index in `markers`); runs count the
        // right-to-left letters before the marker on its line.
        var line: [(run: Int, marker: Int)] = []
        var runs = 0, rightToLeft = false
        func judge() -> Int? {
            defer { line.removeAll(keepingCapacity: true) }
            guard rightToLeft, line.count > 1 else { return nil }
            // Read from the left: the last run first, each run's markers in order.
            let shown = line.sorted { $0.run != $1.run ? $0.run > $1.run : $0.marker < $1.marker }
            for (position, entry) in shown.enumerated() where markers[entry.marker].opens && position + 1 < shown.count {
                let next = shown[position + 1].marker
                if markers[next].opens {
                    // Two opening markers in a row: which one a closing marker pairs with is the reader's guess.
                    return markers[entry.marker].start
                }
                if next != entry.marker + 1 { return markers[entry.marker].start }
            }
            return nil
        }
        var index = scalars.startIndex, lineStart = scalars.startIndex, judgedLine: Int? = nil
        for (number, marker) in markers.enumerated() {
            while index < marker.start {
                let scalar = scalars[index]
                scalars.formIndex(after: &index)
                if isLineEnd(scalar.value) {
                    if let found = judge() { return found }
                    lineStart = index
                    runs = 0
                } else if isRTL(scalar) {
                    runs += 1
                }
            }
            if judgedLine != lineStart {
                // A new paragraph: its first strong letter, from its start (it may stand after the marker).
                judgedLine = lineStart
                rightToLeft = allRightToLeft
                var at = lineStart
                while !allRightToLeft && at < scalars.endIndex {
                    let scalar = scalars[at]
                    if isLineEnd(scalar.value) { break }
                    if isStrong(scalar) { rightToLeft = isRTL(scalar); break }
                    scalars.formIndex(after: &at)
                }
            }
            line.append((runs, number))
        }
        return judge()
    }
}
