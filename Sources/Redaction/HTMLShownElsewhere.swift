import HTML
import Policy

/// What a reader of an HTML part may show out of the order the rebuild's model reads
/// it, or beyond it (issue 21): text composed by CSS (`content:` strings, `attr()`,
/// reordered or hidden by a class) and attribute text shown in place of an element
/// (`alt` of an image a reader blocks). The model drops CSS and shows no alt text
/// in its stream, so a marker joined there is one mailsec cannot read.
extension HTMLRebuild {
    /// The scalars of a styled part's material, counted for the scalars of the markers only:
    /// enough to tell whether the material holds a marker's pieces, in any order.
    struct MarkerMaterial {
        /// The slot of each folded marker scalar: ASCII by table, the rest by dictionary.
        private var asciiSlot = [Int8](repeating: -1, count: 128)
        private var otherSlot: [Unicode.Scalar: Int] = [:]
        /// Each slot's scalar (folded).
        private var scalars: [Unicode.Scalar] = []
        /// How often each slot's scalar stands in the material, markers found subtracted.
        private(set) var counts: [Int] = []
        /// For each marker, how many of each slot's scalar it needs: every punctuation scalar
        /// as often as the marker holds it, a letter or digit once (a style sheet can show one
        /// attribute's letter twice); a marker of letters only needs all its scalars, as often.
        private var needs: [[(slot: Int, count: Int)]] = []

        init(_ redactor: Redactor) {
            for marker in [redactor.open, redactor.close] {
                let markerScalars = folded(Array(marker.unicodeScalars))
                let lettersOnly = markerScalars.allSatisfy(Self.isLetter)
                var need: [Int: Int] = [:]
                for scalar in markerScalars {
                    let slot = slot(of: scalar) ?? add(scalar)
                    need[slot] = Self.isLetter(scalar) && !lettersOnly ? 1 : need[slot, default: 0] + 1
                }
                needs.append(need.map { (slot: $0.key, count: $0.value) })
            }
            counts = [Int](repeating: 0, count: scalars.count)
        }

        static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
            // ASCII and U+FFFD (what random bytes read as UTF-8 give, a whole part of it)
            // without a look-up of Unicode's properties, which cost more than the rest of
            // counting a piece: the same answers.
            let value = scalar.value
            if value < 0x80 { return (value | 0x20) >= 0x61 && (value | 0x20) <= 0x7A || value >= 0x30 && value <= 0x39 }
            if value == 0xFFFD { return false }
            return scalar.properties.isAlphabetic || scalar.properties.numericType != nil
        }

        private mutating func add(_ scalar: Unicode.Scalar) -> Int {
            let slot = scalars.count
            scalars.append(scalar)
            if scalar.value < 0x80 { asciiSlot[Int(scalar.value)] = Int8(slot) } else { otherSlot[scalar] = slot }
            return slot
        }

        @inline(__always)
        private func slot(of scalar: Unicode.Scalar) -> Int? {
            if scalar.value < 0x80 {
                let slot = asciiSlot[Int(scalar.value)]
                return slot < 0 ? nil : Int(slot)
            }
            return otherSlot.isEmpty ? nil : otherSlot[scalar]
        }

        /// Counts `piece` (a string literal of a style sheet, whose whole markers refuse the mail before).
        mutating func count(_ piece: some Sequence<Unicode.Scalar>) {
            for scalar in piece { if let slot = slot(of: fold(scalar)) { counts[slot] += 1 } }
        }

        /// Counts `piece` (a text node, an attribute value) less the whole markers in it: those
        /// a reading of the piece already finds and pairs (or refuses).
        ///
        /// A bracket pair within the piece around at least one letter or digit and none of the
        /// markers' punctuation (`[View online]`, `[1]`, `[50% off!]`) is a bracketed word and
        /// not counted: ordinary styled mail is full of them. Any bracket left over counts; a marker composed of pieces always leaves some (`[[private]]`
        /// split as `[` `[private]` `]` leaves the outer two, and a span needs both markers).
        mutating func count(piece: String, redactor: Redactor) {
            let pieceScalars = scalarArray(piece)
            count(pieceScalars)
            for range in redactor.markerRanges(pieceScalars) {
                for scalar in pieceScalars[range] { if let slot = slot(of: fold(scalar)) { counts[slot] -= 1 } }
            }
            // Bracketed words: the last opening bracket, then at least one letter or digit and none of
            // the markers' punctuation, and its closing bracket. Brackets inside whole markers are
            // subtracted above; a pair found there too would be subtracted twice, so skip them.
            let inMarker = redactor.markerRanges(pieceScalars)
            var open: (index: Int, closer: Unicode.Scalar)?
            var word = false
            var nextMarker = 0
            for (index, scalar) in pieceScalars.enumerated() {
                while nextMarker < inMarker.count && inMarker[nextMarker].upperBound <= index { nextMarker += 1 }
                if nextMarker < inMarker.count && inMarker[nextMarker].contains(index) { open = nil; continue }
                if isInvisible(scalar) { continue }
                if let closer = Self.closer(of: scalar) {
                    open = (index, closer)
                    word = false
                } else if let current = open, scalar == current.closer {
                    if word, let openSlot = slot(of: fold(pieceScalars[current.index])), let closeSlot = slot(of: fold(scalar)) {
                        counts[openSlot] -= 1
                        counts[closeSlot] -= 1
                    }
                    open = nil
                } else if Self.isLetter(scalar) {
                    word = true
                } else if slot(of: fold(scalar)) != nil {
                    // Another of the markers' punctuation scalars: no bracketed word.
                    open = nil
                }
            }
        }

        /// The closing bracket of an opening one; nil for any other scalar. A switch, not a
        /// dictionary: asked at every scalar of every piece, where hashing cost more than the rest.
        @inline(__always)
        private static func closer(of scalar: Unicode.Scalar) -> Unicode.Scalar? {
            switch scalar.value {
            case 0x5B: "]"
            case 0x28: ")"
            case 0x7B: "}"
            case 0x3C: ">"
            default: nil
            }
        }

        /// True when the material holds what some marker needs.
        var composesMarker: Bool {
            needs.contains { need in need.allSatisfy { counts[$0.slot] >= $0.count } }
        }
    }

    /// Text a reader may show in place of an element: `alt` of an image (shown when the
    /// reader blocks images) or image map area, `value` and `placeholder` of a form field.
    static func shownInPlace(_ element: HTMLDocument.Element) -> [String] {
        func value(_ name: String) -> String? { element.attributes.first { $0.name == name }?.value }
        switch element.name {
        case "img", "area": return value("alt").map { [$0] } ?? []
        case "input":
            let type = value("type")?.lowercased() ?? ""
            if type == "hidden" { return [] }
            if type == "image" { return value("alt").map { [$0] } ?? [] }
            return [value("value"), value("placeholder")].compactMap { $0 }
        default: return []
        }
    }

    /// True when `element` brings CSS or positions text itself: `style=`, a style sheet
    /// linked, or SVG (whose text elements place their text anywhere).
    static func styles(_ element: HTMLDocument.Element) -> Bool {
        if element.namespace == .svg { return true }
        for attribute in element.attributes {
            if attribute.name == "style" && attribute.value.unicodeScalars.contains(where: { !isBlank($0) }) { return true }
            if element.name == "link" && attribute.name == "rel"
                && attribute.value.lowercased().split(whereSeparator: { $0.unicodeScalars.allSatisfy(isBlank) }).contains("stylesheet") {
                return true
            }
        }
        return false
    }

    @inline(__always)
    static func isBlank(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" || scalar == "\u{C}"
    }

    /// Calls `body` with each string literal of the CSS `css`, escapes decoded (`\5b`,
    /// `\00005b `, `\[`; a backslash before a line end continues the string), comments
    /// passed over, as CSS Syntax Level 3 tokenizes it. Selectors' brackets
    /// (`a[x-apple-data-detectors]`), identifiers and numbers are not strings.
    ///
    /// Hand-written: no CSS library reaches Swift on this system (Debian's
    /// `libcss-parser0` is a CSS1 parser, without CSS3 escapes or `attr()`), and a string
    /// literal is all that is needed.
    static func cssStrings(_ css: String, _ body: ([Unicode.Scalar]) throws(PolicyError) -> Void) throws(PolicyError) {
        let scalars = scalarArray(css)
        let count = scalars.count
        var index = 0
        func isLineEnd(_ scalar: Unicode.Scalar) -> Bool { scalar == "\n" || scalar == "\r" || scalar == "\u{C}" }
        func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
            switch scalar.value {
            case 0x30...0x39: scalar.value - 0x30
            case 0x41...0x46: scalar.value - 0x37
            case 0x61...0x66: scalar.value - 0x57
            default: nil
            }
        }
        var string: [Unicode.Scalar] = []
        while index < count {
            let scalar = scalars[index]
            if scalar == "/" && index + 1 < count && scalars[index + 1] == "*" {
                index += 2
                while index < count && !(scalars[index] == "*" && index + 1 < count && scalars[index + 1] == "/") { index += 1 }
                index += 2
                continue
            }
            if scalar == "\\" {
                // An escape outside a string is part of an identifier: `\"` opens no string.
                index += index + 1 < count && !isLineEnd(scalars[index + 1]) ? 2 : 1
                continue
            }
            guard scalar == "\"" || scalar == "'" else { index += 1; continue }
            let quote = scalar
            index += 1
            string.removeAll(keepingCapacity: true)
            while index < count {
                let next = scalars[index]
                if next == quote { index += 1; break }
                // A line end ends a string (a bad string, which CSS drops; counted all the same).
                if isLineEnd(next) { break }
                index += 1
                guard next == "\\" else { string.append(next == "\u{0}" ? "\u{FFFD}" : next); continue }
                guard index < count else { break }
                let escaped = scalars[index]
                if isLineEnd(escaped) {
                    index += escaped == "\r" && index + 1 < count && scalars[index + 1] == "\n" ? 2 : 1
                    continue
                }
                guard var value = hexValue(escaped) else { string.append(escaped == "\u{0}" ? "\u{FFFD}" : escaped); index += 1; continue }
                index += 1
                var digits = 1
                while digits < 6, index < count, let more = hexValue(scalars[index]) {
                    value = value << 4 | more
                    digits += 1
                    index += 1
                }
                // One white space after a hex escape belongs to it (CR LF counts as one).
                if index < count, isBlank(scalars[index]) {
                    index += scalars[index] == "\r" && index + 1 < count && scalars[index + 1] == "\n" ? 2 : 1
                }
                string.append(value == 0 ? "\u{FFFD}" : Unicode.Scalar(value) ?? "\u{FFFD}")
            }
            try body(string)
        }
    }

    /// Refuses the part (``PolicyError/MarkerProblem/joinable``) when a reader may show a
    /// marker the model does not hold:
    /// - the text shown in place of an element (``shownInPlace(_:)``), put in the model's
    ///   text where the element stands, joins a marker of scalars from more than one piece;
    /// - or the part is styled and its material (``MarkerMaterial``: every text, every
    ///   attribute value, every string of its style sheets; the model's text without the
    ///   markers of the spans it found) holds a marker's pieces. With spans too: the postcard is rebuilt without
    ///   CSS, but the sender saw what the style sheet composed, a span around text the model
    ///   reads as outside any (issue 21: `content:` pieces making `[[private]]` … `[[/private]]`
    ///   around a secret, beside one ordinary span, went out).
    static func refuseJoinable(stream: [Unicode.Scalar], inPlace: [(position: Int, text: [Unicode.Scalar])],
                               styled: Bool, material: MarkerMaterial, spans: [Redactor.Span],
                               redactor: Redactor, part: String) throws(PolicyError) {
        let joinable = PolicyError(.unbalancedMarkers, marker: .init(part: part, line: 1, column: 1, problem: .joinable))
        if !inPlace.isEmpty {
            // The stream with each text put where its element stands, and where each scalar came from
            // (-1: the stream, k: the k-th text).
            var joined: [Unicode.Scalar] = [], source: [Int32] = []
            let total = stream.count + inPlace.reduce(0) { $0 + $1.text.count }
            joined.reserveCapacity(total)
            source.reserveCapacity(total)
            var next = 0
            for position in 0...stream.count {
                while next < inPlace.count && inPlace[next].position == position {
                    joined.append(contentsOf: inPlace[next].text)
                    source.append(contentsOf: repeatElement(Int32(next), count: inPlace[next].text.count))
                    next += 1
                }
                if position < stream.count {
                    joined.append(stream[position])
                    source.append(-1)
                }
            }
            for range in redactor.markerRanges(joined) {
                var from: Int32?
                for index in range where !isInvisible(joined[index]) {
                    if from == nil { from = source[index] } else if source[index] != from { throw joinable }
                }
            }
        }
        if styled && material.composesMarker { throw joinable }
    }
}
