import MIME
import Policy

/// Marked spans across a whole message: every header field and parameter,
/// every part a reader shows as text (in any charset and transfer encoding),
/// every `message/*` part, and the same inside embedded messages; and the
/// readings that decide whether a mail has spans and whether a postcard is clean.
extension Redactor {
    /// Header fields that are never redacted: they describe structure, and
    /// the MIME layer writes them anew.
    static let structuralHeaders: Set<String> = ["content-type", "content-transfer-encoding", "mime-version"]

    /// A part's fields that the MIME layer rewrites itself (their parameters,
    /// file names among them, are censored on their own).
    static let partStructuralHeaders: Set<String> = structuralHeaders.union(["content-disposition"])

    /// What reading a message every way found (see ``MessageReadings``).
    package struct ReadingsFinding: Sendable {
        /// A finding: the first place a marker was seen, and the places not read with certainty.
        package init(marker: String?, uncertain: [String]) {
            self.marker = marker
            self.uncertain = uncertain
        }

        /// Where a marker shows in some reading (`part 1.2 (text/html)`,
        /// `Subject`); nil when in none.
        package let marker: String?
        /// Places that cannot be read with certainty; in a mail with marked
        /// spans each makes the mail refused.
        package let uncertain: [String]
    }

    /// Reads `message` every way a recipient's software may read it (every
    /// header field and parameter decoded every way, every body in every
    /// transfer encoding and charset its fields allow, every `message/*`
    /// part, HTML with its references and escapes decoded, flowed and folded
    /// lines joined, invisible characters inside markers passed over, and the
    /// message as written) and says where a marker shows and what cannot be
    /// read with certainty.
    package func readings(of message: MIMEMessage) -> ReadingsFinding {
        var marker: String?
        let uncertain = MessageReadings.read(message) { place, content -> Bool in
            switch content {
            case .text(let text, let media):
                if hasMarkersInAnyRendering(text, type: media.type, subtype: media.subtype, parameters: media.parameters) {
                    marker = place
                } else if let page = media.parameters[ContentType.openedAsPage],
                          HTMLRebuild.pageShowsMarker(text, redactor: self, xml: page == "xml") {
                    // A file a browser opens as a page: read as the rebuild reads an HTML part
                    // (a real parser's tree, and what CSS may compose), as it is never rebuilt.
                    marker = place
                }
            case .pieces(let asText, let feed):
                var search = MarkerSearch(self, encodings: asText)
                // What cannot be read cannot be shown to be clean.
                if !feed({ search.feed($0) }) { marker = place + " (not readable)" } else if search.finish() { marker = place }
            }
            return marker == nil   // one marker is enough
        }
        return ReadingsFinding(marker: marker, uncertain: uncertain)
    }

    /// Where a marker still stands in `message` in any of its readings
    /// (``readings(of:)``); nil when there is none. A censored postcard must
    /// give nil.
    package func remainingMarker(in message: MIMEMessage) -> String? {
        readings(of: message).marker
    }

    /// Looks for either marker in bytes that arrive in pieces. Markers of
    /// plain ASCII (without a `k`, which the Kelvin sign folds to) are looked
    /// for in the bytes themselves, piece by piece with an overlap, so memory
    /// stays small; any other marker needs the text whole, as
    /// ``Redactor/hasMarkers(_:)`` folds it.
    package struct MarkerSearch {
        private let redactor: Redactor
        private let encodings: Bool
        private let needles: [[UInt8]]?
        private var buffer: [UInt8] = []
        private var found = false
        /// Near-markers (``NearMarkerScan``) in the bytes as they come: one counts as a marker.
        private var near: NearMarkerScan
        /// The same in the bytes read as UTF-16, when the content is read in other encodings too.
        private var near16: UTF16NearMarkerScan
        /// Whether the bytes so far hold RTF's signature (``mentionsRTF(_:)``): from there on,
        /// RTF's reading, whose lines run on past bare line ends, is taken as its reader shows it.
        private var rtf = false
        /// Where an escaped marker may start (``Redactor/escapeStarts(of:)``), by their first byte.
        private let startsByLead: [[[UInt8]]]
        /// Whether a byte leads any of them: looked up at every byte, without touching the arrays.
        private let isLead: [Bool]
        /// How a marker's second scalar may be written: as itself or escaped.
        private let seconds: [[UInt8]]
        /// Whether a byte leads any of ``seconds``.
        private let isSecondLead: [Bool]
        /// Whether a byte is a marker's first scalar as itself (ASCII, either case).
        private let isFirst: [Bool]
        /// Both markers, folded, as ``endsInMarker(_:)`` matches them.
        private let foldedMarkers: [[Unicode.Scalar]]
        /// Whether ``examine(_:visual:)`` may follow both markers as bits: each
        /// shorter than 64 scalars, none of them invisible (an invisible one would
        /// be matched, not passed over).
        private let bitMarkers: Bool
        /// How many bytes the last scan kept for the next.
        private var kept = 0
        /// How many bytes the regions of the escape search decoded in all (each
        /// region's bytes counted at each decoding): work counted, for the tests
        /// that check it stays linear in the bytes fed.
        package private(set) var decodedBytes = 0
        /// How many scalars the readings of those regions held in all: the work of
        /// ``examine(_:visual:)``, counted for the tests that check it stays small.
        package private(set) var examinedScalars = 0
        /// Bytes kept from one window to the next: enough for a marker in UTF-16, and even.
        private let overlap: Int
        private static let window = 1 << 20

        package init(_ redactor: Redactor, encodings: Bool) {
            self.redactor = redactor
            self.encodings = encodings
            // Counting markers written with scalars that fold to the marker's own (`［［ｐｒｉｖａｔｅ］］`):
            // the search of the bytes themselves finds markers written in ASCII only.
            near = NearMarkerScan(redactor, countingFolds: true)
            near16 = UTF16NearMarkerScan(redactor)
            // A mail is searched in many pieces (every part, every reading of a hostile
            // mail's ambiguous parts): the tables of the standard markers are made once.
            let tables = redactor == .standard ? Self.standardTables : Tables(redactor)
            needles = tables.needles
            overlap = tables.overlap
            startsByLead = tables.startsByLead
            isLead = tables.isLead
            seconds = tables.seconds
            isSecondLead = tables.isSecondLead
            isFirst = tables.isFirst
            foldedMarkers = tables.foldedMarkers
            bitMarkers = tables.bitMarkers
        }

        private static let standardTables = Tables(.standard)

        /// ``entry(_:)``'s tables, held here so that no look-up pays for a global's first-use check.
        private let scalarPages = ScalarPages.shared
        private let latin1 = Self.latin1Entries
        /// ``ScalarPages`` entries of U+0000...U+00FF.
        private static let latin1Entries: [UInt32] = (0..<256).map { value in
            let scalar = Unicode.Scalar(UInt8(value))
            return fold(scalar).value | (isInvisible(scalar) ? ScalarPages.invisibleBit : 0)
        }

        /// What the search looks for, made from the markers alone.
        private struct Tables: Sendable {
            let needles: [[UInt8]]?
            let overlap: Int
            let startsByLead: [[[UInt8]]]
            let isLead: [Bool]
            let seconds: [[UInt8]]
            let isSecondLead: [Bool]
            let isFirst: [Bool]
            let foldedMarkers: [[Unicode.Scalar]]
            let bitMarkers: Bool

            init(_ redactor: Redactor) {
                let markers = [redactor.open, redactor.close].map { Array($0.lowercased().utf8) }
                let plain = markers.allSatisfy { $0.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "k") } }
                needles = plain ? markers : nil
                overlap = 2 * (markers.map(\.count).max() ?? 0) + 2
                var firsts: [Unicode.Scalar] = []
                for marker in [redactor.open, redactor.close] {
                    for first in [marker.lowercased(), marker.uppercased()].compactMap(\.unicodeScalars.first) where !firsts.contains(first) {
                        firsts.append(first)
                    }
                }
                var starts = firsts.flatMap(Redactor.escapeStarts(of:))
                // A marker's first two scalars as themselves: what follows them may be escaped
                // (`[[priv\u0061te]]`) or broken by what a viewer ignores (RTF's bare line ends).
                for marker in [redactor.open, redactor.close] {
                    let pair = Array(marker.lowercased().unicodeScalars.prefix(2))
                    if pair.count == 2, pair.allSatisfy(\.isASCII) { starts.append(Array(String(scalars: pair).utf8)) }
                }
                var byLead = [[[UInt8]]](repeating: [], count: 256)
                for start in starts { byLead[Int(start[0])].append(start) }
                startsByLead = byLead
                isLead = byLead.map { !$0.isEmpty }
                var seconds: [[UInt8]] = []
                for marker in [redactor.open, redactor.close] {
                    let scalars = Array(marker.lowercased().unicodeScalars)
                    guard scalars.count > 1 else { continue }
                    seconds += [Array(String(scalars[1]).utf8)] + Redactor.escapeStarts(of: scalars[1])
                }
                self.seconds = seconds
                var isSecondLead = [Bool](repeating: false, count: 256)
                for form in seconds where !form.isEmpty {
                    isSecondLead[Int(form[0])] = true
                    if form[0] >= 0x61 && form[0] <= 0x7A { isSecondLead[Int(form[0] - 32)] = true }
                }
                self.isSecondLead = isSecondLead
                var isFirst = [Bool](repeating: false, count: 256)
                for first in firsts where first.isASCII { isFirst[Int(first.value)] = true }
                self.isFirst = isFirst
                foldedMarkers = [redactor.open, redactor.close].map { folded(Array($0.unicodeScalars)) }
                bitMarkers = foldedMarkers.allSatisfy { !$0.isEmpty && $0.count < 63 && !$0.contains(where: isInvisible) }
            }
        }

        package mutating func feed(_ piece: UnsafeRawBufferPointer) {
            // A piece may be a whole attachment (GMime hands a decoded part over in one
            // write): taken a window at a time, so that no scan holds more than a window
            // and what it keeps (a 20 MB piece was scanned whole, its readings 300 MiB).
            if !found && near.feed(bytes: piece) { found = true }
            if !found && encodings && near16.feed(piece) { found = true }
            var rest = piece[...]
            repeat {
                let part = rest.prefix(Self.window)
                rest = rest.dropFirst(part.count)
                guard !found else { return }
                buffer += part
                // A marker still in progress at a window's end keeps its bytes for the next
                // window (``Scan/keepFrom``); the next scan waits for as many new bytes as were
                // kept, so bytes kept again and again cost in all at most as much as new ones.
                guard needles != nil, buffer.count - kept >= max(Self.window, kept) + overlap else { continue }
                rtf = rtf || Self.mentionsRTF(buffer)
                let scanned = scan(buffer)
                found = scanned.found
                decodedBytes += scanned.decoded
                examinedScalars += scanned.examined
                // An even number of bytes goes, so UTF-16 keeps its alignment.
                buffer.removeFirst(min(buffer.count - overlap, scanned.keepFrom) & ~1)
                kept = buffer.count
            } while !rest.isEmpty
        }

        package mutating func finish() -> Bool {
            if !found {
                rtf = rtf || Self.mentionsRTF(buffer)
                let scanned = scan(buffer)
                found = scanned.found
                decodedBytes += scanned.decoded
            examinedScalars += scanned.examined
            }
            return found
        }

        /// What a scan of a window found, and from where its bytes must be kept
        /// for the next: the start of a marker that may still be in progress at its end.
        private struct Scan {
            var found: Bool
            var keepFrom: Int
            /// How many bytes its regions decoded (``decodedBytes``).
            var decoded = 0
            /// How many scalars the readings of its regions held (``examinedScalars``).
            var examined = 0
        }

        private func scan(_ bytes: [UInt8]) -> Scan {
            // (``rtf`` is brought up to date by the caller, which may change it.)
            if let needles {
                if needles.contains(where: { needle in
                    Redactor.containsFolded(bytes, needle, stride: 1, offset: 0, lineEnds: encodings)
                        || encodings && (Redactor.containsFolded(bytes, needle, stride: 2, offset: 0, lineEnds: true)
                                         || Redactor.containsFolded(bytes, needle, stride: 2, offset: 1, lineEnds: true))
                }) { return Scan(found: true, keepFrom: bytes.count) }
                return encodings ? decodedShowsMarker(bytes) : Scan(found: false, keepFrom: bytes.count)
            }
            if encodings {
                let decoded = decodedShowsMarker(bytes)
                if decoded.found { return decoded }
            }
            if redactor.hasMarkers(String(decoding: bytes, as: UTF8.self)) { return Scan(found: true, keepFrom: bytes.count) }
            guard encodings else { return Scan(found: false, keepFrom: bytes.count) }
            // Bare line ends inside a marker, which RTF readers ignore.
            if redactor.hasMarkers(String(decoding: bytes.filter { $0 != 10 && $0 != 13 }, as: UTF8.self)) { return Scan(found: true, keepFrom: bytes.count) }
            if redactor.hasMarkers(String(bytes.map { Character(Unicode.Scalar($0)) })) { return Scan(found: true, keepFrom: bytes.count) }
            return Scan(found: Self.utf16Readings(bytes).contains(where: redactor.hasMarkers), keepFrom: bytes.count)
        }

        /// `bytes` read as UTF-16 in each byte order (none for fewer than two bytes).
        private static func utf16Readings(_ bytes: [UInt8]) -> [String] {
            guard bytes.count >= 2 else { return [] }
            return [true, false].map { littleEndian in
                let units = stride(from: 0, to: bytes.count - 1, by: 2).map { index in
                    littleEndian ? UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
                        : UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])
                }
                return String(decoding: units, as: UTF16.self)
            }
        }

        /// Looks for either marker through the escapes and bidirectional
        /// overrides a viewer of the content may resolve (``Redactor/decodings(_:markup:)``).
        /// Such a marker starts where one of its first scalar's escaped forms
        /// starts (``Redactor/escapeStarts(of:)``), or after a bidirectional
        /// control: only from there are the bytes decoded (``regionsShowMarker(_:)``).
        /// So bytes with none of them (nearly every attachment) cost one pass.
        /// UTF-16 (many zero bytes) is narrowed to bytes and searched the same way.
        private func decodedShowsMarker(_ bytes: [UInt8]) -> Scan {
            var zeros = 0
            for byte in bytes where byte == 0 { zeros += 1 }
            var result = regionsShowMarker(bytes, rtf: rtf)
            guard !result.found, zeros * 8 >= bytes.count, bytes.count >= 2 else { return result }
            for littleEndian in [true, false] {
                var narrowed: [UInt8] = []
                narrowed.reserveCapacity(bytes.count / 2)
                for index in stride(from: 0, to: bytes.count - 1, by: 2) {
                    let unit = littleEndian ? UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8 : UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])
                    if unit < 0x80 {
                        narrowed.append(UInt8(unit))
                    } else if Redactor.isBidiControl(UInt32(unit)) {
                        narrowed += Array(String(Unicode.Scalar(unit)!).utf8)
                    } else {
                        narrowed.append(0xFF)
                    }
                }
                // A unit narrows to one byte, a control to three: a place in the narrowed
                // bytes is at most twice as far into the bytes, at least two thirds.
                let narrowedScan = regionsShowMarker(narrowed, rtf: rtf || Self.mentionsRTF(narrowed))
                result.decoded += narrowedScan.decoded
                result.examined += narrowedScan.examined
                if narrowedScan.found { return Scan(found: true, keepFrom: bytes.count, decoded: result.decoded, examined: result.examined) }
                if narrowedScan.keepFrom < narrowed.count { result.keepFrom = min(result.keepFrom, narrowedScan.keepFrom / 3 * 2) }
            }
            return result
        }

        /// How many bytes, not counting what a viewer shows as nothing, may stand between
        /// the start of a marker's first scalar (escaped) and its second.
        static let budget = 48

        /// How far past where an escaped marker may start it is decoded at first.
        /// While a reading of the region ends inside what may still become a marker
        /// (``endsInMarker(_:)``), the region is doubled.
        static let reach = 128

        /// How many bytes the regions of one scan may decode in all, per byte
        /// scanned (plus 64 KiB): regions doubled and merged decode each byte a
        /// few times; input made to make them decode more is not read further
        /// and counts as holding a marker, so the search stays linear in time.
        static let workFactor = 16

        /// Decodes `bytes` from where an escaped marker may start, and from each
        /// bidirectional control to its line's end. A candidate start is a first
        /// scalar's escaped form (or the scalar followed by an escape or by
        /// something a viewer may show as nothing) with the marker's second scalar,
        /// escaped or not, at most ``budget`` bytes on, where what a viewer shows
        /// as nothing (``ignorableLength(_:at:)``: invisible characters raw or
        /// escaped, RTF control words and groups, line continuations, Markdown
        /// emphasis) does not count. One pass: the candidates in progress are
        /// carried forward together, each byte read once. A region is decoded
        /// from its start, first ``reach`` bytes, doubled while some reading ends
        /// inside what may still become a marker (taken to the window's end at
        /// once when that reading is under a bidirectional control, whose line
        /// may run that far); regions that overlap are
        /// merged, so each byte is decoded a bounded number of times. A region,
        /// a candidate or a control's line still open at the end of `bytes` is
        /// kept for the next window.
        private func regionsShowMarker(_ bytes: [UInt8], rtf: Bool) -> Scan {
            var starts: [Int] = []
            var lines: [Range<Int>] = []
            var keepFrom = bytes.count
            bytes.withUnsafeBufferPointer { buffer in
                let count = buffer.count
                // Plain loops, no closures or iterators: this runs at every byte of every attachment.
                func matches(_ forms: [[UInt8]], at index: Int) -> Bool {
                    var f = 0
                    while f < forms.count {
                        let start = forms[f]
                        f += 1
                        guard index + start.count <= count else { continue }
                        var k = 0
                        while k < start.count {
                            var actual = buffer[index + k]
                            if actual >= 0x41 && actual <= 0x5A { actual += 32 }
                            if actual != start[k] { break }
                            k += 1
                        }
                        if k == start.count { return true }
                    }
                    return false
                }
                /// A first scalar as itself, then an invisible character in UTF-8 (escapes
                /// after it are among ``startsByLead``; controls, which JSON and Python
                /// refuse raw in a string, are not looked for, so random bytes cost no more).
                func literalBeforeIgnorable(_ index: Int) -> Bool {
                    guard isFirst[Int(buffer[index])], index + 1 < count, buffer[index + 1] >= 0xC2 else { return false }
                    return Redactor.ignorableLength(buffer, at: index + 1) > 1
                }
                // Candidates in progress, oldest first, with the count of visible bytes before each.
                var pending: [(at: Int, weight: Int)] = []
                var head = 0
                var weight = 0
                var lineEnd = -1
                // Up to where a run a reader hides stands (``Redactor/hiddenRunLength(_:at:)``): no weight,
                // though every byte of it is still read for starts and controls.
                var quietUntil = 0
                var index = 0
                while index < count {
                    let byte = buffer[index]
                    if head < pending.count {
                        while head < pending.count && weight - pending[head].weight > Self.budget { head += 1 }
                        if head < pending.count && isSecondLead[Int(byte)] && matches(seconds, at: index) {
                            starts.append(pending[head].at)
                            head = pending.count
                        }
                        if head == pending.count { pending.removeAll(keepingCapacity: true); head = 0 }
                    }
                    if isLead[Int(byte)] && (matches(startsByLead[Int(byte)], at: index) || literalBeforeIgnorable(index)) {
                        // UTF-7 holds the whole marker in one run: no second to wait for.
                        if byte == UInt8(ascii: "+") {
                            starts.append(index)
                        } else if pending.last?.weight != weight {
                            pending.append((index, weight))
                        }
                    } else if byte == 0xE2, index + 2 < count,
                              buffer[index + 1] == 0x80 && (0xAA...0xAE).contains(buffer[index + 2])
                                || buffer[index + 1] == 0x81 && (0xA6...0xA9).contains(buffer[index + 2]) {
                        // To the line's end, however far: a line already found is not searched again.
                        if index >= lineEnd {
                            var end = index + 3
                            while end < count && buffer[end] != 10 { end += 1 }
                            lineEnd = end
                            lines.append(index..<end)
                            if end == count { keepFrom = min(keepFrom, index) }
                        }
                    } else if index >= lineEnd, Self.escapesControl(buffer, at: index) {
                        // A control written as an escape (RTF's `\u8238?`, `&#x202E;`, `\u202e`):
                        // its line from the escape's start, as for the control itself.
                        var from = index
                        while from > lineEnd && from > 0 && index - from < 40 && Self.mayBeInEscape(buffer[from - 1]) { from -= 1 }
                        var end = index + 4
                        while end < count && buffer[end] != 10 { end += 1 }
                        lineEnd = end
                        lines.append(from..<end)
                        if end == count { keepFrom = min(keepFrom, from) }
                    }
                    if head < pending.count {
                        if index < quietUntil {
                            index += 1
                        } else if let run = Redactor.hiddenRunLength(buffer, at: index) {
                            quietUntil = index + run
                            index += 1
                        } else {
                            let skip = Redactor.ignorableLength(buffer, at: index)
                            if skip > 0 { index += skip } else { weight += 1; index += 1 }
                        }
                    } else {
                        index += 1
                    }
                }
                if head < pending.count { keepFrom = min(keepFrom, pending[head].at) }
            }
            // Each region decoded from its start, doubled while a reading may still hold a marker in progress.
            starts.sort()
            var next = 0, line = 0, decoded = 0, examined = 0
            var joinedToEnd = false
            while next < starts.count || line < lines.count {
                var fromLine = line < lines.count && (next == starts.count || lines[line].lowerBound <= starts[next])
                let start: Int
                var end: Int
                if fromLine {
                    (start, end) = (lines[line].lowerBound, lines[line].upperBound)
                    line += 1
                } else {
                    (start, end) = (max(0, starts[next] - 8), min(bytes.count, starts[next] + Self.reach))
                    next += 1
                }
                while true {
                    // A bound on the work, whatever the input: past it the bytes count as
                    // holding a marker (they could not be read with certainty in linear time).
                    decoded += end - start
                    if decoded > Self.workFactor * bytes.count + Self.reach * 512 { return Scan(found: true, keepFrom: bytes.count, decoded: decoded) }
                    // Whatever starts inside the region is decoded with it.
                    while next < starts.count && starts[next] < end { end = max(end, min(bytes.count, starts[next] + Self.reach)); next += 1 }
                    while line < lines.count && lines[line].lowerBound < end { end = max(end, lines[line].upperBound); line += 1; fromLine = true }
                    let slice = bytes[start..<end]
                    // As Latin-1 (each byte a scalar, no text made), and as UTF-8 too where it
                    // holds an invisible character or a control in UTF-8.
                    var texts = [slice.map { Unicode.Scalar($0) }]
                    if fromLine || slice.withUnsafeBufferPointer({ buffer in
                        buffer.indices.contains { buffer[$0] >= 0xC2 && Redactor.ignorableLength(buffer, at: $0) > 1 }
                    }) {
                        texts.append(Array(String(decoding: slice, as: UTF8.self).unicodeScalars))
                    }
                    // Live: a reading (not a visual order) ends inside what may still become a marker.
                    var live = false, visualOrders = false
                    for text in texts {
                        let decoding = redactor.decodedScalarReadings(text)
                        visualOrders = visualOrders || decoding.visualFrom < decoding.readings.count
                        for index in -1..<decoding.readings.count {
                            let reading = index < 0 ? text : decoding.readings[index]
                            let visual = index >= decoding.visualFrom
                            let seen = examine(reading, visual: visual)
                            examined += reading.count
                            if seen.found { return Scan(found: true, keepFrom: bytes.count, decoded: decoded, examined: examined) }
                            live = live || seen.live && !visual
                        }
                    }
                    // A visual order is its whole line's: what follows a run reversed shows
                    // before it, not after, so how the region's order ends says nothing; it is
                    // read to its line's end, once (doubled from the start again and again, each
                    // doubling decoded every reading and visual order of all the region so far).
                    // A line ends at a bare line end (not one a backslash continues): past it the
                    // next line is ordered on its own. RTF's reading shows bare line ends as
                    // nothing, so in RTF (``rtf``) its line runs on to a paragraph's end: that
                    // reading alone, with its visual orders, is read to the window's end and kept
                    // for the next (every reading of the window at every control was what a random
                    // 100 MB attachment took most of its 70 s and 3.7 GiB on).
                    // (In RTF every visual order's line may run on: a region need not hold a backslash.)
                    if rtf && visualOrders && !joinedToEnd {
                        // Once to the window's end: every later region lies inside that line.
                        joinedToEnd = true
                        let joined = lineJoinedShowsMarker(bytes, from: start)
                        decoded += bytes.count - start
                        examined += joined.examined
                        if joined.found || decoded > Self.workFactor * bytes.count + Self.reach * 512 {
                            return Scan(found: true, keepFrom: bytes.count, decoded: decoded, examined: examined)
                        }
                        keepFrom = min(keepFrom, start)
                    }
                    let lineOpen = visualOrders && !Self.endsLine(bytes, at: end)
                    guard live || lineOpen else { break }
                    if end == bytes.count {
                        keepFrom = min(keepFrom, start)
                        break
                    }
                    var grown = end
                    if live { grown = min(bytes.count, start + 2 * (end - start)) }
                    if lineOpen { grown = max(grown, Self.lineEnd(bytes, from: end)) }
                    end = grown
                }
            }
            return Scan(found: false, keepFrom: keepFrom, decoded: decoded, examined: examined)
        }

        /// Whether the bytes at `index` are a bidirectional control's number as an escape
        /// writes it: U+202A-202E, U+2066-2069 in hex (`\u202E`, `&#x202e;`, CSS `\202E`),
        /// 8234-8238, 8294-8297 in decimal (`&#8238;`, RTF's `\u8238?`), or the UTF-8 bytes
        /// escaped (`%E2%80%AE`, `=E2=80=AE`). Generous: any such digits count, so a number
        /// in a text costs a line's reading, and random bytes hold one every few gigabytes.
        @inline(__always)
        private static func escapesControl(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
            let byte = buffer[index]
            guard byte == UInt8(ascii: "2") || byte == UInt8(ascii: "8") || byte | 0x20 == UInt8(ascii: "e"),
                  index + 3 < buffer.count else { return false }
            let (b1, b2, b3) = (buffer[index + 1], buffer[index + 2], buffer[index + 3] | 0x20)
            switch (byte, b1, b2) {
            case (UInt8(ascii: "2"), UInt8(ascii: "0"), UInt8(ascii: "2")): return (UInt8(ascii: "a")...UInt8(ascii: "e")).contains(b3)
            case (UInt8(ascii: "2"), UInt8(ascii: "0"), UInt8(ascii: "6")): return (UInt8(ascii: "6")...UInt8(ascii: "9")).contains(b3)
            case (UInt8(ascii: "8"), UInt8(ascii: "2"), UInt8(ascii: "3")): return (UInt8(ascii: "4")...UInt8(ascii: "8")).contains(b3)
            case (UInt8(ascii: "8"), UInt8(ascii: "2"), UInt8(ascii: "9")): return (UInt8(ascii: "4")...UInt8(ascii: "7")).contains(b3)
            default:
                // e2 %80 %aa: the lead byte's escape, then its two continuation bytes'.
                guard byte | 0x20 == UInt8(ascii: "e"), b1 == UInt8(ascii: "2"), index + 8 < buffer.count,
                      b2 == UInt8(ascii: "%") || b2 == UInt8(ascii: "="), buffer[index + 3] == UInt8(ascii: "8"),
                      buffer[index + 5] == b2, buffer[index + 6] | 0x20 == UInt8(ascii: "a") else { return false }
                let last = buffer[index + 7] | 0x20
                switch buffer[index + 4] {
                case UInt8(ascii: "0"): return (UInt8(ascii: "a")...UInt8(ascii: "e")).contains(last)
                case UInt8(ascii: "1"): return (UInt8(ascii: "6")...UInt8(ascii: "9")).contains(last)
                default: return false
                }
            }
        }

        /// Whether `byte` may stand in an escape before its number: `\u`, `&#x`, `\U0000`, `\x{`, `%`, `=`.
        @inline(__always)
        private static func mayBeInEscape(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "#"), UInt8(ascii: "\\"), UInt8(ascii: "&"), UInt8(ascii: "{"), UInt8(ascii: "%"), UInt8(ascii: "="):
                return true
            default: return false
            }
        }

        /// Whether `bytes[index]` ends a line for every reading but RTF's: a bare line
        /// end not continued by a backslash (C, CSS, Python) or `=` before it. The
        /// window's end does not: the line may run on in the next.
        private static func endsLine(_ bytes: [UInt8], at index: Int) -> Bool {
            guard index < bytes.count else { return false }
            guard bytes[index] == 10 || bytes[index] == 13 else { return false }
            var before = index - 1
            if bytes[index] == 10 && before >= 0 && bytes[before] == 13 { before -= 1 }
            return before < 0 || bytes[before] != UInt8(ascii: "\\") && bytes[before] != UInt8(ascii: "=")
        }

        /// Where the line that `index` stands in ends (``endsLine(_:at:)``): that line end's place, or the window's end.
        private static func lineEnd(_ bytes: [UInt8], from index: Int) -> Int {
            var at = index
            while at < bytes.count && !endsLine(bytes, at: at) { at += 1 }
            return at
        }

        /// Whether `bytes` hold `\rtf` or `\urtf` (any case): the signature every RTF
        /// document opens with (`{\rtf1`), which RTF readers look for. Without it no
        /// reader takes the bytes as RTF, and RTF's long lines need not be read: random
        /// bytes (a compressed or encrypted file) hold a right-to-left control every
        /// 1.8 MB or so, and RTF's line from each ran to the end of the attachment.
        private static func mentionsRTF(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBufferPointer { buffer in
                var index = 0
                let count = buffer.count
                while index + 3 < count {
                    if buffer[index] == UInt8(ascii: "\\") {
                        var at = index + 1
                        if buffer[at] | 0x20 == UInt8(ascii: "u") { at += 1 }
                        if at + 2 < count, buffer[at] | 0x20 == UInt8(ascii: "r"), buffer[at + 1] | 0x20 == UInt8(ascii: "t"),
                           buffer[at + 2] | 0x20 == UInt8(ascii: "f") {
                            return true
                        }
                    }
                    index += 1
                }
                return false
            }
        }

        /// RTF's reading of `bytes` from `start` to the window's end and its visual
        /// orders (``Redactor/lineJoinedVisualReadings(_:)``), read as Latin-1 and as
        /// UTF-8: whether one shows a marker.
        private func lineJoinedShowsMarker(_ bytes: [UInt8], from start: Int) -> (found: Bool, examined: Int) {
            let slice = bytes[start...]
            var examined = 0
            for text in [slice.map { Unicode.Scalar($0) }, Array(String(decoding: slice, as: UTF8.self).unicodeScalars)] {
                for reading in Redactor.lineJoinedVisualReadings(text) {
                    let seen = examine(reading, visual: true)
                    examined += reading.count
                    if seen.found { return (true, examined) }
                }
            }
            return (false, examined)
        }

        /// What one reading of a region shows, in one pass and without a copy: whether
        /// it holds a marker (as ``Redactor/hasMarkers(_:)`` finds one: folded,
        /// invisibles inside passed over), and whether it is `live`: it ends inside
        /// what may still become a marker, so the region must grow. Live means a
        /// non-empty beginning of either marker, then only invisibles and what an
        /// escape cut at the region's end leaves: nothing, or a run of at most
        /// ``cutEscape`` such characters (zeros aside: `&#0000…` may be as long as
        /// it likes) that starts as an escape starts (``startsCutEscape(_:)``). A
        /// reading shows an escape it resolves as what it stands for, so anything
        /// else visible after a marker's beginning ends that marker in that reading.
        /// Under a bidirectional control (`visual`) the end of a visual reading is
        /// not the region's: there any run of such characters keeps it live.
        private func examine(_ reading: [Unicode.Scalar], visual: Bool) -> (found: Bool, live: Bool) {
            guard bitMarkers else {
                let text = String(scalars: reading)
                return (redactor.hasMarkers(text), endsInMarker(text))
            }
            return reading.withUnsafeBufferPointer { buffer in
                let count = buffer.count
                // The tail: the longest end of the reading of invisibles and what a cut escape leaves.
                var tail = count
                while tail > 0, isInvisible(buffer[tail - 1]) || Self.mayBeCutEscape(buffer[tail - 1]) { tail -= 1 }
                // For each place in the tail, whether what stands after it may be a cut escape.
                var mayFollow: [Bool] = []
                if count > 0 {
                    let from = max(0, tail - 1)
                    mayFollow = [Bool](repeating: false, count: count - from)
                    var visible = 0, first: Unicode.Scalar?
                    var at = count - 1
                    while at >= from {
                        mayFollow[at - from] = visual || first == nil || Self.startsCutEscape(first!) && visible <= Self.cutEscape
                        let scalar = buffer[at]
                        if !isInvisible(scalar) {
                            first = scalar
                            if scalar != "0" { visible += 1 }
                        }
                        at -= 1
                    }
                }
                var live = false
                // Both markers followed in one pass, each scalar folded and looked at once
                // (``Self/entry(_:)``): this runs at every scalar of every reading of a region.
                let (open, close) = (foldedMarkers[0], foldedMarkers[1])
                let (openFull, closeFull): (UInt64, UInt64) = (1 << UInt64(open.count), 1 << UInt64(close.count))
                // Bit k: the marker's first k scalars end here.
                var openActive: UInt64 = 0, closeActive: UInt64 = 0
                for index in 0..<count {
                    let entry = entry(buffer[index])
                    if entry & ScalarPages.invisibleBit != 0 { continue }
                    let folded = Unicode.Scalar(entry & ScalarPages.scalarBits)!
                    openActive = Self.advance(openActive, open, folded)
                    closeActive = Self.advance(closeActive, close, folded)
                    if openActive & openFull != 0 || closeActive & closeFull != 0 { return (true, true) }
                    if !live, openActive | closeActive != 0, index >= tail - 1, mayFollow[index - max(0, tail - 1)] { live = true }
                }
                return (false, live)
            }
        }

        /// The marker's beginnings (bit k: its first k scalars) that end at `folded`,
        /// given those that ended at the visible scalar before it.
        @inline(__always)
        private static func advance(_ active: UInt64, _ marker: [Unicode.Scalar], _ folded: Unicode.Scalar) -> UInt64 {
            var advanced: UInt64 = marker[0] == folded ? 2 : 0
            var bits = active
            while bits != 0 {
                let k = bits.trailingZeroBitCount
                bits &= bits - 1
                if marker[k] == folded { advanced |= 1 << UInt64(k + 1) }
            }
            return advanced
        }

        /// ``fold(_:)`` and ``isInvisible(_:)`` of `scalar` in one look-up, as ``ScalarPages``
        /// gives them: Latin-1 from a table of its own, the rest from the pages.
        @inline(__always)
        private func entry(_ scalar: Unicode.Scalar) -> UInt32 {
            scalar.value < 0x100 ? latin1[Int(scalar.value)] : scalarPages.entry(scalar)
        }

        /// How many characters (zeros aside) an escape cut at a region's end may leave
        /// in a reading: `\N{` and a name of up to 80, `&` and a name of up to 32.
        static let cutEscape = 100

        /// Whether an escape cut short, as a reading that does not resolve it shows
        /// it, may start with `scalar`: an escape's first character (`\`, `&`, `%`,
        /// `=`, UTF-7's `+`, RTF's `\'` as `'`), or the replacement character of a
        /// UTF-8 sequence or `%E2` cut short.
        private static func startsCutEscape(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar {
            case "\\", "&", "%", "=", "+", "'", "\u{FFFD}": true
            default: false
            }
        }

        /// True when `reading` ends inside what may still become a marker: a
        /// non-empty beginning of either marker (folded, invisibles passed over),
        /// then only invisibles and what an escape cut at the region's end leaves
        /// (ASCII letters, digits, spaces and escape punctuation, however many).
        private func endsInMarker(_ reading: String) -> Bool {
            let scalars = Array(reading.unicodeScalars)
            var tail = scalars.count
            while tail > 0, isInvisible(scalars[tail - 1]) || Self.mayBeCutEscape(scalars[tail - 1]) { tail -= 1 }
            for marker in foldedMarkers {
                // The lengths of the marker's beginnings that end at the current scalar.
                var active: [Int] = []
                var index = 0
                while index < scalars.count {
                    let scalar = scalars[index]
                    index += 1
                    if isInvisible(scalar) {
                        if index > tail && !active.isEmpty { return true }
                        continue
                    }
                    let folded = fold(scalar)
                    var advanced: [Int] = []
                    for k in active where k < marker.count && marker[k] == folded { advanced.append(k + 1) }
                    if marker[0] == folded { advanced.append(1) }
                    active = advanced
                    if index >= tail && !active.isEmpty { return true }
                }
            }
            return false
        }

        /// Characters an escape cut short may leave in a reading: `\N{LEFT SQUARE`, `&#0000`, `\u00`, `{\u91`,
        /// and the replacement character of a UTF-8 sequence cut short (an invisible character's first bytes).
        private static func mayBeCutEscape(_ scalar: Unicode.Scalar) -> Bool {
            guard scalar.isASCII else { return scalar.value == 0xFFFD }
            let value = UInt8(scalar.value)
            switch value {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
            case UInt8(ascii: " "), UInt8(ascii: "\\"), UInt8(ascii: "&"), UInt8(ascii: "#"), UInt8(ascii: ";"), UInt8(ascii: "%"),
                 UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "'"),
                 UInt8(ascii: "?"), UInt8(ascii: "_"), UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: "`"):
                return true
            default: return false
            }
        }
    }

    /// How many bytes the non-ASCII byte at `index` and those after it take when
    /// they are invisible: a C1 control or soft hyphen as Latin-1, or an
    /// invisible character in UTF-8; 0 when they are not.
    fileprivate static func invisibleLength(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        let byte = buffer[index]
        if byte < 0xA0 || byte == 0xAD { return 1 }
        let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 0
        guard length > 0, index + length <= buffer.count else { return 0 }
        var value = UInt32(byte) & (0xFF >> (length + 1))
        for k in 1..<length {
            let next = buffer[index + k]
            guard next & 0xC0 == 0x80 else { return 0 }
            value = value << 6 | UInt32(next & 0x3F)
        }
        return Unicode.Scalar(value).map(isInvisible) == true ? length : 0
    }

    /// How many bytes a run that starts at `index` takes when a reader of some format
    /// hides it whole, however long (nil when none starts there): an HTML tag (to its
    /// `>` outside quotes), comment, `<!…>` or `<?…>` (Markdown's inline HTML, an HTML
    /// value of a calendar); an RTF group `{\*…}` (an ignorable destination, to its
    /// matching brace) or hidden text from `\v` (to `\v0`, `\plain` or a brace). One
    /// left open runs to the end. The marker search reads the run's bytes all the same;
    /// the run only adds nothing to the distance between a marker's first two scalars.
    fileprivate static func hiddenRunLength(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let count = buffer.count
        let byte = buffer[index]
        guard index + 2 < count else { return nil }
        let next = buffer[index + 1]
        func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
        switch byte {
        case UInt8(ascii: "<"):
            if next == UInt8(ascii: "!") && buffer[index + 2] == UInt8(ascii: "-") {
                // A comment, to `-->`.
                var at = index + 4
                while at + 2 < count && !(buffer[at] == UInt8(ascii: "-") && buffer[at + 1] == UInt8(ascii: "-") && buffer[at + 2] == UInt8(ascii: ">")) { at += 1 }
                return min(count, at + 3) - index
            }
            guard isLetter(next) || next == UInt8(ascii: "/") || next == UInt8(ascii: "!") || next == UInt8(ascii: "?") else { return nil }
            var at = index + 1
            var quote: UInt8 = 0
            while at < count {
                let b = buffer[at]
                if quote != 0 {
                    if b == quote { quote = 0 }
                } else if b == UInt8(ascii: ">") {
                    break
                } else if b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") {
                    quote = b
                }
                at += 1
            }
            return min(count, at + 1) - index
        case UInt8(ascii: "{"):
            guard next == UInt8(ascii: "\\"), buffer[index + 2] == UInt8(ascii: "*") else { return nil }
            var at = index, depth = 0
            while at < count {
                if buffer[at] == UInt8(ascii: "\\") { at += 2; continue }
                if buffer[at] == UInt8(ascii: "{") { depth += 1 } else if buffer[at] == UInt8(ascii: "}") { depth -= 1; if depth == 0 { break } }
                at += 1
            }
            return min(count, at + 1) - index
        case UInt8(ascii: "\\"):
            // `\v`, not `\v0` nor a longer word (`\viewkind`).
            guard next == UInt8(ascii: "v"), !isLetter(buffer[index + 2]), buffer[index + 2] != UInt8(ascii: "0") else { return nil }
            var at = index + 2
            while at < count {
                let b = buffer[at]
                if b == UInt8(ascii: "{") || b == UInt8(ascii: "}") { break }
                if b == UInt8(ascii: "\\") && at + 2 < count {
                    if buffer[at + 1] == UInt8(ascii: "v") && buffer[at + 2] == UInt8(ascii: "0") { break }
                    if buffer[at + 1] == UInt8(ascii: "p") && at + 5 < count && buffer[at + 2] == UInt8(ascii: "l")
                        && buffer[at + 3] == UInt8(ascii: "a") && buffer[at + 4] == UInt8(ascii: "i") && buffer[at + 5] == UInt8(ascii: "n") { break }
                    at += 2
                    continue
                }
                at += 1
            }
            return at - index
        default:
            return nil
        }
    }

    /// How many bytes at `index` a viewer of `buffer` may show as nothing (0 when
    /// it shows something): a byte of a non-ASCII character (which may be an
    /// invisible one, in UTF-8 or Latin-1), a control, an escape of an invisible
    /// character (`\u200b`, `\x{ad}`, `\0`, `\'ad`, CSS `\200b `, `&#8203;`,
    /// `&#xad`, `%E2`, `=E2`), a named reference, a `\N{…}`, an RTF control word
    /// or group brace, a line continuation (`\` at a line's end), UTF-7, Markdown
    /// emphasis. Taking too much for nothing only makes the search decode more.
    fileprivate static func ignorableLength(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        let count = buffer.count
        let byte = buffer[index]
        if byte == 0x7F || byte < 0x20 && byte != 9 { return 1 }
        if byte >= 0x80 { return invisibleLength(buffer, at: index) }
        func hex(_ at: Int) -> UInt32? {
            guard at < count else { return nil }
            let b = buffer[at]
            switch b {
            case 0x30...0x39: return UInt32(b - 0x30)
            case 0x41...0x46: return UInt32(b - 0x41 + 10)
            case 0x61...0x66: return UInt32(b - 0x61 + 10)
            default: return nil
            }
        }
        func isLetter(_ at: Int) -> Bool { at < count && (buffer[at] | 0x20) >= 0x61 && (buffer[at] | 0x20) <= 0x7A }
        func isDigit(_ at: Int) -> Bool { at < count && buffer[at] >= 0x30 && buffer[at] <= 0x39 }
        /// Up to `limit` hex digits from `at`: their value and where they end.
        func hexRun(_ at: Int, limit: Int) -> (UInt32, Int) {
            var end = at, value: UInt32 = 0
            while end - at < limit, let digit = hex(end) { value = value &<< 4 | digit; end += 1 }
            return (value, end)
        }
        func invisible(_ value: UInt32) -> Bool { Unicode.Scalar(value).map(isInvisible) ?? true }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "*"), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "`"):
            return 1
        case UInt8(ascii: "%"), UInt8(ascii: "="):
            guard let high = hex(index + 1), let low = hex(index + 2) else { return 0 }
            let value = high << 4 | low
            return value >= 0x80 || value < 0x20 || value == 0x7F ? 3 : 0
        case UInt8(ascii: "+"):
            // UTF-7: the run of base64 letters and its closing `-`.
            var end = index + 1
            while end < count, isLetter(end) || isDigit(end) || buffer[end] == UInt8(ascii: "+") || buffer[end] == UInt8(ascii: "/") { end += 1 }
            if end < count && buffer[end] == UInt8(ascii: "-") { end += 1 }
            return end - index >= 3 ? end - index : 0
        case UInt8(ascii: "&"):
            guard index + 1 < count else { return 0 }
            if buffer[index + 1] == UInt8(ascii: "#") {
                var end = index + 2, value: UInt32 = 0
                if end < count && buffer[end] | 0x20 == UInt8(ascii: "x") {
                    end += 1
                    let start = end
                    while let digit = hex(end) { value = min(value &<< 4 | digit, 0x110000); end += 1 }
                    guard end > start else { return 0 }
                } else {
                    let start = end
                    while isDigit(end) { value = min(value &* 10 &+ UInt32(buffer[end] - 0x30), 0x110000); end += 1 }
                    guard end > start else { return 0 }
                }
                if end < count && buffer[end] == UInt8(ascii: ";") { end += 1 }
                return invisible(value) ? end - index : 0
            }
            // A named reference: some stand for invisible characters (`&shy;`, `&zwnj;`, `&NoBreak;`).
            var end = index + 1
            while end - index <= 32, isLetter(end) || isDigit(end) { end += 1 }
            guard end > index + 1, end < count, buffer[end] == UInt8(ascii: ";") else { return 0 }
            return end + 1 - index
        case UInt8(ascii: "\\"):
            guard index + 1 < count else { return 0 }
            let next = buffer[index + 1]
            switch next {
            case 10: return 2
            case 13: return index + 2 < count && buffer[index + 2] == 10 ? 3 : 2
            case UInt8(ascii: "N"), UInt8(ascii: "n"):
                guard index + 2 < count, buffer[index + 2] == UInt8(ascii: "{") else { break }
                var end = index + 3
                while end < count, end - index < 96, buffer[end] != UInt8(ascii: "}") { end += 1 }
                return end < count && buffer[end] == UInt8(ascii: "}") ? end + 1 - index : 0
            case UInt8(ascii: "u"), UInt8(ascii: "U"), UInt8(ascii: "x"), UInt8(ascii: "X"):
                let braced = index + 2 < count && buffer[index + 2] == UInt8(ascii: "{")
                let (value, end) = hexRun(index + (braced ? 3 : 2), limit: braced ? 8 : next == UInt8(ascii: "U") ? 8 : next | 0x20 == UInt8(ascii: "x") ? 2 : 4)
                if braced, end < count, buffer[end] == UInt8(ascii: "}") { return invisible(value) ? end + 1 - index : 0 }
                if end > index + 2, !braced, invisible(value) { return end - index }
                if end > index + 2, !braced, next == UInt8(ascii: "u") || next == UInt8(ascii: "U") || next | 0x20 == UInt8(ascii: "x") {
                    // A visible character as C writes it; as an RTF control word `\u` reads a decimal number.
                    if !isDigit(index + 2) { return 0 }
                }
            case UInt8(ascii: "'"):
                guard let high = hex(index + 2), let low = hex(index + 3) else { return 0 }
                let value = high << 4 | low
                return value >= 0x80 || value < 0x20 || value == 0x7F ? 4 : 0
            default: break
            }
            if isLetter(index + 1) {
                // An RTF control word, its number and the space that ends it (`\u8203?` with its fallback).
                var end = index + 1
                while end - index <= 32, isLetter(end) { end += 1 }
                if end < count && buffer[end] == UInt8(ascii: "-") { end += 1 }
                var number: UInt32 = 0
                while isDigit(end) { number = min(number &* 10 &+ UInt32(buffer[end] - 0x30), 0x110000); end += 1 }
                let isU = end - index >= 3 && buffer[index + 1] == UInt8(ascii: "u") && isDigit(index + 2)
                if isU && !invisible(number) && number < 0x10000 { return 0 }
                if end < count && buffer[end] == UInt8(ascii: " ") { end += 1 }
                if isU && end < count && buffer[end] == UInt8(ascii: "?") { end += 1 }
                return end - index
            }
            // Octal (C, Python) or hexadecimal (CSS) digits: invisible in either reading.
            var octalEnd = index + 1, octal: UInt32 = 0
            while octalEnd - index <= 3, octalEnd < count, buffer[octalEnd] >= 0x30 && buffer[octalEnd] <= 0x37 {
                octal = octal << 3 | UInt32(buffer[octalEnd] - 0x30)
                octalEnd += 1
            }
            var (css, cssEnd) = hexRun(index + 1, limit: 6)
            if cssEnd < count && (buffer[cssEnd] == 0x20 || buffer[cssEnd] == 9 || buffer[cssEnd] == 10) { cssEnd += 1 }
            if cssEnd == index + 1 { css = 0x41 }
            if octalEnd > index + 1 && invisible(octal) { return max(octalEnd, cssEnd > index + 1 && invisible(css) ? cssEnd : 0) - index }
            if cssEnd > index + 1 && invisible(css) { return cssEnd - index }
            return 0
        default:
            return 0
        }
    }

    /// True when `needle` (lower-case ASCII) occurs in `bytes` with its
    /// characters `stride` bytes apart, starting at byte `offset` modulo the
    /// stride, ASCII letters in either case, and (for UTF-16) zero bytes in
    /// between. Invisible characters inside an occurrence are passed over, as
    /// ``Redactor/hasMarkers(_:)`` passes them over (the same ``isInvisible(_:)``):
    /// C0 and C1 controls, and every invisible character in UTF-8 (one byte at
    /// a time) or UTF-16 (one unit or surrogate pair at a time); with `lineEnds`
    /// also bare CR and LF, which RTF readers ignore in the text.
    fileprivate static func containsFolded(_ bytes: [UInt8], _ needle: [UInt8], stride: Int, offset: Int, lineEnds: Bool) -> Bool {
        guard let first = needle.first, bytes.count >= (needle.count - 1) * stride + 1 else { return false }
        let upperFirst = first >= 0x61 && first <= 0x7A ? first - 32 : first
        return bytes.withUnsafeBufferPointer { buffer in
            let count = buffer.count
            /// The ASCII byte of the character at `at` (its low byte in UTF-16), if it is ASCII.
            func ascii(_ at: Int) -> UInt8? {
                guard at >= 0, at < count else { return nil }
                if stride == 1 { return buffer[at] < 0x80 ? buffer[at] : nil }
                let partner = offset == 0 ? at + 1 : at - 1
                guard partner >= 0, partner < count, buffer[partner] == 0, buffer[at] < 0x80 else { return nil }
                return buffer[at]
            }
            /// How many bytes the invisible character at `at` takes; 0 when it is not invisible.
            func invisible(_ at: Int) -> Int {
                guard at >= 0, at < count else { return 0 }
                if stride == 1 {
                    let byte = buffer[at]
                    if lineEnds && (byte == 10 || byte == 13) { return 1 }
                    if byte < 0x80 { return isInvisible(Unicode.Scalar(byte)) ? 1 : 0 }
                    return invisibleLength(buffer, at: at)
                }
                // UTF-16: the unit whose low byte stands at `at`.
                let start = offset == 0 ? at : at - 1
                func unit(_ from: Int) -> UInt32? {
                    guard from >= 0, from + 1 < count else { return nil }
                    return offset == 0 ? UInt32(buffer[from]) | UInt32(buffer[from + 1]) << 8
                        : UInt32(buffer[from]) << 8 | UInt32(buffer[from + 1])
                }
                guard let high = unit(start) else { return 0 }
                if lineEnds && (high == 10 || high == 13) { return 2 }
                if (0xD800..<0xDC00).contains(high) {
                    guard let low = unit(start + 2), (0xDC00..<0xE000).contains(low) else { return 0 }
                    return Unicode.Scalar(0x10000 + (high - 0xD800) << 10 + (low - 0xDC00)).map(isInvisible) == true ? 4 : 0
                }
                return Unicode.Scalar(high).map(isInvisible) == true ? 2 : 0
            }
            var index = offset
            // The last place a match can start: the needle's last letter, and for
            // little-endian UTF-16 the zero byte after it, must fit.
            let last = count - (needle.count - 1) * stride - (stride == 2 && offset == 0 ? 2 : 1)
            while index <= last {
                // A first byte without a case ('[' of the standard markers) is found eight
                // bytes at a time (``UTF8Scalars/firstIndex(ofASCII:from:)``): the byte loop
                // below was 9% of redacting a text with spans (issue 24 row 5), which holds
                // none but at the markers. A hit of the other parity is passed.
                if first == upperFirst {
                    let at = UTF8Scalars(buffer).firstIndex(ofASCII: first, from: index)
                    guard at <= last else { return false }
                    if (at - index) % stride != 0 { index = at + 1; continue }
                    index = at
                }
                // The first letter is looked for inline (no call per byte); only a hit is read closely.
                let raw = buffer[index]
                guard raw == first || raw == upperFirst else { index += stride; continue }
                let byte = ascii(index)
                if byte == first || byte == upperFirst {
                    var at = index + stride, k = 1
                    while k < needle.count, at < count {
                        if var actual = ascii(at) {
                            if actual >= 0x41 && actual <= 0x5A { actual += 32 }
                            if actual == needle[k] { k += 1; at += stride; continue }
                        }
                        let skip = invisible(at)
                        guard skip > 0 else { break }
                        at += skip
                    }
                    if k == needle.count { return true }
                }
                index += stride
            }
            return false
        }
    }

    /// True when the message has marked spans anywhere. Throws when markers do
    /// not pair up, naming the part (`Subject`, `part 1.2 (text/html)`).
    package func hasMarkedSpans(_ message: MIMEMessage) throws -> Bool {
        var found = false
        try visit(message, prefix: "") { text, name, isHTML in
            if isHTML ? hasMarkersHTML(text) : hasMarkers(text) {
                if isHTML { _ = try redactHTML(text, mode: .censor, part: name) } else { try validate(text, part: name) }
                found = true
            }
            return nil
        }
        return found
    }

    /// Applies `mode` to every marked span of `message`, in place.
    /// With `keepingUnpaired`, a piece whose markers do not pair up is left as
    /// it is instead of stopping the whole: for a letter of a mail whose
    /// markers pair up in the model the rebuild reads, while the raw text of
    /// a part the rebuild does not read as text (text/richtext with its
    /// commands inside a marker) does not.
    package func apply(_ mode: Mode, to message: MIMEMessage, keepingUnpaired: Bool = false) throws {
        try visit(message, prefix: "") { text, name, isHTML in
            guard isHTML ? hasMarkersHTML(text) : hasMarkers(text) else { return nil }
            do {
                return isHTML ? try redactHTML(text, mode: mode, part: name) : try redact(text, mode: mode, part: name)
            } catch let error as PolicyError {
                if keepingUnpaired { return nil }
                throw error
            }
        }
    }

    /// Calls `body` with each piece of text that may carry spans; a non-nil
    /// result replaces the text. Where readers differ, the reading that
    /// shows a marker is the one given (and, censored, written back).
    /// The walk covers the parts of embedded messages too; only their header
    /// fields need a visit of their own.
    private func visit(_ message: MIMEMessage, prefix: String,
                       _ body: (String, String, Bool) throws -> String?) throws {
        try visitHeaders(message, prefix: prefix, body)
        guard let root = message.body else { return }
        for (path, entity) in root.walk() {
            let name = prefix + "part " + (path.isEmpty ? "1" : path.map { String($0 + 1) }.joined(separator: "."))
                + " (\(entity.contentType))"
            if let embedded = entity.embeddedMessage {
                try visitHeaders(embedded, prefix: name + " ", body)
            }
            // The part's own header fields (Content-Description, X- fields …).
            for header in entity.headers where !Self.partStructuralHeaders.contains(header.name.lowercased()) {
                if let replaced = try body(markedReading(header), name + " " + header.name, false) {
                    entity.setHeader(header.name, replaced)
                }
            }
            // Every parameter of Content-Type and Content-Disposition: file
            // names (`filename` and `filename*` each), `name`, any other.
            try entity.rewriteParameters { parameter, readings in
                try body(readings.first(where: hasMarkers) ?? readings[0], name + " " + parameter, false)
            }
            if let prologue = entity.prologue, let replaced = try body(prologue, name + " preamble", false) {
                entity.prologue = replaced
            }
            if let epilogue = entity.epilogue, let replaced = try body(epilogue, name + " epilogue", false) {
                entity.epilogue = replaced
            }
            // A digest's child without Content-Type is a message (RFC 2046 §5.1.5).
            let inDigest = !path.isEmpty && root.entity(at: Array(path.dropLast()))?.contentType.is("multipart", "digest") == true
                && !entity.headers.contains { $0.name.lowercased() == "content-type" }
            try visitContent(entity, name: name, asMessage: inDigest, body)
        }
    }

    /// The value of a header field in the reading that shows markers that
    /// pair up: as GMime decoded it, else the first lenient reading that does
    /// (GMime drops an encoded-word that follows one ending in `=` padding
    /// on the next line, so a span cut between them would not pair up). With
    /// none, the first reading with a marker, whose error then stands.
    func markedReading(_ header: Header) -> String {
        if hasMarkers(header.value), (try? validate(header.value, part: "")) != nil { return header.value }
        let marked = ([header.value] + FieldReadings.readings(header.rawValue).readings.map(\.text)).filter(hasMarkers)
        return marked.first { (try? validate($0, part: "")) != nil } ?? marked.first ?? header.value
    }

    /// The content of a leaf that a reader shows as text: `text/*` as GMime
    /// decodes it, else (or when that shows no marker) in its declared
    /// charset in each byte order. A `message/*` leaf (partial,
    /// external-body, unknown kinds) is read as a message and written back
    /// censored.
    private func visitContent(_ entity: MIMEEntity, name: String, asMessage: Bool,
                              _ body: (String, String, Bool) throws -> String?) throws {
        guard entity.kind == .leaf else { return }
        let type = entity.contentType
        if type.type == "message" || type.is("text", "rfc822-headers") || asMessage {
            guard let bytes = entity.content, let embedded = try? MIMEMessage.parse(bytes) else { return }
            var changed = false
            try visit(embedded, prefix: name + " ") { text, place, html in
                let replaced = try body(text, place, html)
                if replaced != nil { changed = true }
                return replaced
            }
            if changed { try entity.replaceContent(embedded.serialize(), charset: nil) }
            return
        }
        guard MessageReadings.isTextLike(type) else { return }
        let markup = Self.isMarkup(type: type.type, subtype: type.subtype)
        func marked(_ text: String) -> Bool { markup ? hasMarkersHTML(text) : hasMarkers(text) }
        /// Markers that pair up: a reading that can be censored.
        func censorable(_ text: String) -> Bool {
            marked(text) && (markup ? (try? redactHTML(text, mode: .censor)) != nil : (try? validate(text, part: "")) != nil)
        }
        func write(_ replaced: String?, rewritten: Bool) throws {
            guard let replaced else { return }
            if type.type == "text" && !rewritten, (try? entity.replaceText(replaced)) != nil { return }
            try entity.replaceContent(Array(replaced.utf8), charset: type.parameters["charset"] != nil || type.type == "text" ? "utf-8" : nil)
        }
        let others = otherReadings(entity, type: type, markup: markup)
        let text = type.type == "text" ? entity.text : nil
        if let text, others.isEmpty {
            // Nearly every part: GMime's text is the only reading.
            try write(try body(text, name, markup), rewritten: false)
            return
        }
        if let text, marked(text) {
            // The usual case: GMime's text shows the markers. Only when they
            // do not pair up there is another reading (the declared charset,
            // the transfer encoding read leniently, flowed lines joined …)
            // whose markers do looked for; without one, the error stands.
            do { try write(try body(text, name, markup), rewritten: false) } catch let error as PolicyError {
                guard let other = others.first(where: censorable) else { throw error }
                try write(try body(other, name, markup), rewritten: true)
            }
            return
        }
        // One pass over the other readings: the first that can be censored, else the first with a marker.
        var firstMarked: String?
        var chosen: String?
        for other in others where marked(other) {
            if censorable(other) { chosen = other; break }
            if firstMarked == nil { firstMarked = other }
        }
        if let other = chosen ?? firstMarked {
            try write(try body(other, name, markup), rewritten: true)
        } else if let text {
            try write(try body(text, name, markup), rewritten: false)
        }
    }

    /// The readings of a leaf other than GMime's text, computed as they are
    /// asked for, and only those that can differ from it: another charset
    /// (a part that is not `text/*`, a byte order not stated, a byte order
    /// mark), the transfer encoding where lenient readers differ, flowed
    /// lines joined (format=flowed), folded lines unfolded (calendars).
    private func otherReadings(_ entity: MIMEEntity, type: ContentType, markup: Bool) -> [String] {
        let declared = type.parameters["charset"].map(Charsets.candidates) ?? []
        let undeclared = type.parameters["charset"] == nil
        func decodings(_ bytes: [UInt8]) -> [String] {
            (declared + Charsets.sniffed(bytes) + ["UTF-8"] + (undeclared ? Charsets.guessed(bytes) : []))
                .compactMap { Charsets.decode(bytes, charset: $0) }
        }
        let limit = MessageReadings.wholeTextLimit
        let isText = type.type == "text"
        let encoding = entity.headers.last { $0.name.lowercased() == "content-transfer-encoding" }?.rawValue ?? ""
        let stages: [() -> [String]] = [
            {
                // GMime decodes a stated charset as iconv does, so only what it cannot
                // (HZ), what it does not try (both byte orders, a byte order mark, a
                // guess from the content) is another reading.
                guard !isText || declared.count > 1 || declared.contains(where: { !Charsets.isIconvCharset($0) })
                        || !Charsets.sniffed(entity.contentPrefix(4)).isEmpty
                        || undeclared && entity.content.map({ !Charsets.guessed($0).isEmpty }) == true,
                      let bytes = entity.content, bytes.count <= limit else { return [] }
                return decodings(bytes)
            },
            {
                let name = encoding.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
                guard let raw = entity.rawContent(limit: limit), let readings = TransferDecoding.readings(raw, encoding: name),
                      readings.count > 1 || name == "base64" && TransferDecoding.hasStrayPadding(raw)
                        || raw != readings[0] && !["base64", "quoted-printable"].contains(name) else { return [] }
                return readings.flatMap(decodings)
            },
            {
                let flowed = type.parameters["format"]?.lowercased() == "flowed"
                let calendar = ["calendar", "vcard", "directory", "x-vcard", "x-vcalendar", "ics"].contains(type.subtype)
                guard !markup, flowed || calendar,
                      let text = entity.text ?? entity.content.map({ String(decoding: $0, as: UTF8.self) }) else { return [] }
                guard flowed else { return [Self.unfolded(text)] }
                // Quoted lines as RFC 3676 reads them, and as a reader blind to quote marks does.
                return [Self.unflowed(text, deleteSpace: true), Self.unflowed(text, deleteSpace: false)]
                    + (Self.hasQuotedLine(text) ? [Self.joinedFlowed(text, deleteSpace: true), Self.joinedFlowed(text, deleteSpace: false),
                                                   Self.unflowed(text, deleteSpace: true, spacedQuotes: true),
                                                   Self.unflowed(text, deleteSpace: false, spacedQuotes: true)] : [])
            },
        ]
        return stages.flatMap { $0() }
    }

    private func visitHeaders(_ message: MIMEMessage, prefix: String,
                              _ body: (String, String, Bool) throws -> String?) throws {
        for header in message.headers where !Self.structuralHeaders.contains(header.name.lowercased()) {
            if let replaced = try body(markedReading(header), prefix + header.name, false) {
                if header.name.lowercased() == "subject" { message.setSubject(replaced) } else { message.setHeader(header.name, replaced) }
            }
        }
    }
}
