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
    public struct ReadingsFinding: Sendable {
        /// A finding: the first place a marker was seen, and the places not read with certainty.
        public init(marker: String?, uncertain: [String]) {
            self.marker = marker
            self.uncertain = uncertain
        }

        /// Where a marker shows in some reading (`part 1.2 (text/html)`,
        /// `Subject`); nil when in none.
        public let marker: String?
        /// Places that cannot be read with certainty; in a mail with marked
        /// spans each makes the mail refused.
        public let uncertain: [String]
    }

    /// Reads `message` every way a recipient's software may read it (every
    /// header field and parameter decoded every way, every body in every
    /// transfer encoding and charset its fields allow, every `message/*`
    /// part, HTML with its references and escapes decoded, flowed and folded
    /// lines joined, invisible characters inside markers passed over, and the
    /// message as written) and says where a marker shows and what cannot be
    /// read with certainty.
    public func readings(of message: MIMEMessage) -> ReadingsFinding {
        var marker: String?
        let uncertain = MessageReadings.read(message) { place, content -> Bool in
            switch content {
            case .text(let text, let media):
                if hasMarkersInAnyRendering(text, type: media.type, subtype: media.subtype, parameters: media.parameters) {
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
    public func remainingMarker(in message: MIMEMessage) -> String? {
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
        /// Where an escaped marker may start (``Redactor/escapeStarts(of:)``), by their first byte.
        private let startsByLead: [[[UInt8]]]
        /// Whether a byte leads any of them: looked up at every byte, without touching the arrays.
        private let isLead: [Bool]
        /// How a marker's second scalar may be written: as itself or escaped.
        private let seconds: [[UInt8]]
        /// Bytes kept from one window to the next: enough for a marker in UTF-16, and even.
        private let overlap: Int
        private static let window = 1 << 20

        package init(_ redactor: Redactor, encodings: Bool) {
            self.redactor = redactor
            self.encodings = encodings
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
            let starts = firsts.flatMap(Redactor.escapeStarts(of:))
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
        }

        package mutating func feed(_ piece: UnsafeRawBufferPointer) {
            guard !found else { return }
            buffer += piece
            guard needles != nil, buffer.count >= Self.window + overlap else { return }
            found = scan(buffer)
            // An even number of bytes goes, so UTF-16 keeps its alignment.
            buffer.removeFirst((buffer.count - overlap) & ~1)
        }

        package mutating func finish() -> Bool {
            if !found { found = scan(buffer) }
            return found
        }

        private func scan(_ bytes: [UInt8]) -> Bool {
            if let needles {
                if needles.contains(where: { needle in
                    Redactor.containsFolded(bytes, needle, stride: 1, offset: 0)
                        || encodings && (Redactor.containsFolded(bytes, needle, stride: 2, offset: 0)
                                         || Redactor.containsFolded(bytes, needle, stride: 2, offset: 1))
                }) { return true }
                return encodings && decodedShowsMarker(bytes)
            }
            if encodings && decodedShowsMarker(bytes) { return true }
            if redactor.hasMarkers(String(decoding: bytes, as: UTF8.self)) { return true }
            guard encodings else { return false }
            if redactor.hasMarkers(String(bytes.map { Character(Unicode.Scalar($0)) })) { return true }
            return Self.utf16Readings(bytes).contains(where: redactor.hasMarkers)
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
        /// control: only from there are the bytes decoded (read as Latin-1, or
        /// as UTF-8 when they hold a control), up to ``reach`` bytes on, or to
        /// the line's end after a control. So bytes with none of them (nearly
        /// every attachment) cost one pass, and every byte is decoded a bounded
        /// number of times. UTF-16 (many zero bytes) is narrowed to bytes and
        /// searched the same way.
        private func decodedShowsMarker(_ bytes: [UInt8]) -> Bool {
            var zeros = 0
            for byte in bytes where byte == 0 { zeros += 1 }
            if regionsShowMarker(bytes) { return true }
            guard zeros * 8 >= bytes.count, bytes.count >= 2 else { return false }
            for littleEndian in [true, false] {
                var narrowed: [UInt8] = []
                narrowed.reserveCapacity(bytes.count / 2)
                for index in stride(from: 0, to: bytes.count - 1, by: 2) {
                    let unit = littleEndian ? UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8 : UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])
                    if unit < 0x80 {
                        narrowed.append(UInt8(unit))
                    } else if (0x202A...0x202E).contains(unit) || (0x2066...0x2069).contains(unit) {
                        narrowed += Array(String(Unicode.Scalar(unit)!).utf8)
                    } else {
                        narrowed.append(0xFF)
                    }
                }
                if regionsShowMarker(narrowed) { return true }
            }
            return false
        }

        /// How far past a place where an escaped marker may start it is decoded:
        /// a marker of a dozen scalars, each in its longest escape (`\N{LEFT SQUARE BRACKET}`) and then some.
        static let reach = 512

        private func regionsShowMarker(_ bytes: [UInt8]) -> Bool {
            var regions: [Range<Int>] = []
            var bidi = false
            bytes.withUnsafeBufferPointer { buffer in
                let count = buffer.count
                func add(_ start: Int, _ end: Int) {
                    if let last = regions.last, last.upperBound >= start {
                        regions[regions.count - 1] = last.lowerBound..<max(last.upperBound, end)
                    } else {
                        regions.append(start..<end)
                    }
                }
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
                func secondSoonAfter(_ index: Int) -> Bool {
                    var at = index + 1
                    let end = min(count, index + 48)
                    while at < end {
                        if matches(seconds, at: at) { return true }
                        at += 1
                    }
                    return false
                }
                var index = 0
                while index < count {
                    let byte = buffer[index]
                    if isLead[Int(byte)] {
                        let forms = startsByLead[Int(byte)]
                        // A marker's first scalar escaped (or followed by an escape), and its
                        // second, escaped or not, soon after; decoded from a little before, where
                        // a literal first scalar (and invisibles) may stand.
                        if matches(forms, at: index), secondSoonAfter(index) {
                            add(max(0, index - 64), min(count, index + Self.reach))
                        }
                    } else if byte == 0xE2, index + 2 < count,
                              buffer[index + 1] == 0x80 && (0xAA...0xAE).contains(buffer[index + 2])
                                || buffer[index + 1] == 0x81 && (0xA6...0xA9).contains(buffer[index + 2]) {
                        bidi = true
                        var end = index + 3
                        while end < count && buffer[end] != 10 && end - index < 1 << 16 { end += 1 }
                        add(index, end)
                    }
                    index += 1
                }
            }
            for region in regions {
                let slice = Array(bytes[region])
                let text = bidi ? String(decoding: slice, as: UTF8.self) : String(String.UnicodeScalarView(slice.map { Unicode.Scalar($0) }))
                if redactor.hasMarkersInDecodings(text) { return true }
            }
            return false
        }
    }

    /// True when `needle` (lower-case ASCII) occurs in `bytes` with its
    /// characters `stride` bytes apart, starting at byte `offset` modulo the
    /// stride, ASCII letters in either case, and (for UTF-16) zero bytes in
    /// between. Invisible characters inside an occurrence are passed over, as
    /// ``Redactor/hasMarkers(_:)`` passes them over (the same ``isInvisible(_:)``):
    /// C0 and C1 controls, and every invisible character in UTF-8 (one byte at
    /// a time) or UTF-16 (one unit or surrogate pair at a time).
    fileprivate static func containsFolded(_ bytes: [UInt8], _ needle: [UInt8], stride: Int, offset: Int) -> Bool {
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
                    if byte < 0x80 { return isInvisible(Unicode.Scalar(byte)) ? 1 : 0 }
                    // A C1 control or soft hyphen as Latin-1 …
                    if byte < 0xA0 || byte == 0xAD {
                        return 1
                    }
                    // … or an invisible character in UTF-8.
                    let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 0
                    guard length > 0, at + length <= count else { return 0 }
                    var value = UInt32(byte) & (0xFF >> (length + 1))
                    for k in 1..<length {
                        let next = buffer[at + k]
                        guard next & 0xC0 == 0x80 else { return 0 }
                        value = value << 6 | UInt32(next & 0x3F)
                    }
                    return Unicode.Scalar(value).map(isInvisible) == true ? length : 0
                }
                // UTF-16: the unit whose low byte stands at `at`.
                let start = offset == 0 ? at : at - 1
                func unit(_ from: Int) -> UInt32? {
                    guard from >= 0, from + 1 < count else { return nil }
                    return offset == 0 ? UInt32(buffer[from]) | UInt32(buffer[from + 1]) << 8
                        : UInt32(buffer[from]) << 8 | UInt32(buffer[from + 1])
                }
                guard let high = unit(start) else { return 0 }
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
    public func hasMarkedSpans(_ message: MIMEMessage) throws -> Bool {
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
    public func apply(_ mode: Mode, to message: MIMEMessage, keepingUnpaired: Bool = false) throws {
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
                return flowed ? [Self.joinedFlowed(text, deleteSpace: true), Self.joinedFlowed(text, deleteSpace: false)]
                    : [Self.unfolded(text)]
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
