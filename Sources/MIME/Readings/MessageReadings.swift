internal import CGMime
internal import CMailsecShims
import Foundation

/// One reading of a piece of a message.
package enum ReadingContent {
    /// A header field's value, a preamble or epilogue, or a body decoded one
    /// way (transfer encoding and charset), to be rendered as `media`
    /// (`text/plain` for header fields).
    case text(String, media: ContentType)
    /// Content read in pieces, never whole (a large attachment, the message
    /// as written): the bytes as they are, for a search that reads them in
    /// several encodings. The closure feeds the pieces and returns false
    /// when the content cannot be read.
    /// `asText`: the bytes are content a reader may show as text in any
    /// encoding (else the message as written, read as it stands).
    case pieces(asText: Bool, (_ body: (UnsafeRawBufferPointer) -> Void) -> Bool)
}

/// Every reading a lenient reader may take of a message: every header field
/// of every part and of every embedded message (raw, RFC 2047 decoded every
/// way, each RFC 2231 parameter put together), every body in every transfer
/// encoding and charset that its header fields allow (a duplicate
/// Content-Type or Content-Transfer-Encoding gives a reading for each),
/// every `message/*` part and `multipart/digest` child read as a message,
/// preambles, epilogues, and the message as written.
///
/// Places that cannot be read with certainty are collected: a charset iconv
/// does not know, a transfer encoding no reader can be relied on to decode,
/// content GMime cannot decode, and fields that readers resolve differently
/// (two different Content-Type or Content-Transfer-Encoding fields).
package struct MessageReadings {
    /// Places (`part 1.2 (text/plain) Content-Type charset`) that cannot be read with certainty.
    package private(set) var uncertain: [String] = []
    /// ``uncertain`` as a set: a hostile mail notes many places, and a look-up in the list would make that quadratic.
    private var noted: Set<String> = []
    private let visit: (String, ReadingContent) -> Bool
    /// False once the visitor has seen enough: then only what decides
    /// certainty is still read (fields, structure, nested messages).
    private var reading = true
    private var depth = 0
    /// Parts read other ways too that have been read (their bytes as
    /// written and digest context, hashed), with the least depth they were
    /// read at: read at that depth, a part was read as far as it can be
    /// read at any greater one (where less of it is within the depth limit).
    private var readAlready: [Int: Int] = [:]
    /// What the mail's compressed files may still cost beyond their own sizes (``Inflation/mailAllowance``).
    private var inflationAllowance = Inflation.mailAllowance
    /// What the pages inside a mail's compressed files may hold together to be read as
    /// HTML (``pageAllowance``); beyond it the file is not read with certainty.
    private var pagesLeft = MessageReadings.pageAllowance
    private static let maxDepth = 24
    /// Text parts up to this size are read whole in every transfer encoding
    /// and charset; larger ones are searched in pieces as their bytes.
    package static let wholeTextLimit = 256 << 20

    private init(_ visit: @escaping (String, ReadingContent) -> Bool) { self.visit = visit }

    /// Calls `visit` with each reading of `message` and its place, until it
    /// returns false (it has seen enough); returns the places that cannot be
    /// read with certainty, all of them whatever `visit` returned.
    @discardableResult
    package static func read(_ message: MIMEMessage, _ visit: (String, ReadingContent) -> Bool) -> [String] {
        withoutActuallyEscaping(visit) { visit in
            var walker = MessageReadings(visit)
            walker.message(message, prefix: "")
            // The message as written, searched; and looked at for a bare CR on the way.
            var lineEnds = BareCRScan(), scanned = false
            walker.emit("the message", .pieces(asText: false) { body in
                lineEnds = BareCRScan()
                scanned = (try? message.write { piece in lineEnds.feed(piece); body(piece) }) != nil
                return scanned
            })
            if !scanned {
                lineEnds = BareCRScan()
                _ = try? message.write { lineEnds.feed($0) }
            }
            if lineEnds.found { walker.lineEndsAtCR(message) }
            return walker.uncertain
        }
    }

    /// Every reading of `message`, for callers that want them all.
    @discardableResult
    package static func readAll(_ message: MIMEMessage, _ visit: (String, ReadingContent) -> Void) -> [String] {
        read(message) { place, content -> Bool in
            visit(place, content)
            return true
        }
    }

    private mutating func emit(_ place: String, _ content: ReadingContent) {
        if reading { reading = visit(place, content) }
    }

    /// Each text (with the media it is rendered as) given to the visitor, hashed.
    private var given: Set<Int> = []

    /// ``emit(_:_:)`` for a reading held whole: given once, however many ways lead to it.
    /// A hostile mail leads to the same text many ways (a field read again in each
    /// reading of its part, a part parsed anew with each of its Content-Type fields),
    /// and the visitor's search of it is the dearest step; an identical reading
    /// searched again finds nothing new. Keyed per process, as ``readAlready``:
    /// a sender cannot make two readings collide.
    private mutating func emitOnce(_ place: String, _ text: String, media: ContentType) {
        guard reading else { return }
        var hasher = Hasher()
        // Its bytes, not the String: Strings that are canonically equivalent hash alike,
        // and the search reads scalars, which may differ.
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(text.utf8.count)
        hasher.combine(media)
        guard given.insert(hasher.finalize()).inserted else { return }
        reading = visit(place, .text(text, media: media))
    }

    /// ``emitOnce(_:_:media:)`` for bytes searched as they stand.
    private mutating func emitOnce(_ place: String, bytes: [UInt8]) {
        guard reading else { return }
        var hasher = Hasher()
        // In one piece, as the text's bytes are: an array's combine hashes byte by byte
        // (3% of redacting a 1 MB text, issue 24 row 5).
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(bytes.count)
        hasher.combine(0 as UInt8)   // apart from a text with the same bytes
        guard given.insert(hasher.finalize()).inserted else { return }
        reading = visit(place, .pieces(asText: false) { body in bytes.withUnsafeBytes(body); return true })
    }

    private static let plain = ContentType(type: "text", subtype: "plain", parameters: [:])

    private mutating func note(_ place: String) {
        if noted.insert(place).inserted { uncertain.append(place) }
    }

    /// What a field's raw value reads as (``FieldReadings/readings(_:)``), and the
    /// parameters it gives twice with different values, by raw value (and whether
    /// the field's parameters are looked at): a part read several ways (parsed anew
    /// with each of its Content-Type fields, decoded) carries the same fields in each.
    private var fieldReadings: [String: (readings: [FieldReadings.Reading], unsure: [String], twice: [String])] = [:]

    private mutating func fields(_ headers: [Header], prefix: String) {
        for header in headers {
            let place = prefix + header.name
            emitOnce(place, header.value, media: Self.plain)
            let raw = header.rawValue
            let parametered = ["content-type", "content-disposition"].contains(header.name.lowercased())
            let key = (parametered ? "p" : "f") + raw
            let read: (readings: [FieldReadings.Reading], unsure: [String], twice: [String])
            if let known = fieldReadings[key] {
                read = known
            } else {
                let (readings, unsure) = FieldReadings.readings(raw)
                // A parameter given twice with different values (two boundaries,
                // two charsets): readers differ in which one wins.
                var twice: [String] = []
                if parametered {
                    var values: [String: String] = [:]
                    for (name, value) in FieldReadings.rawParameters(FieldReadings.unfolded(raw)) {
                        let key = name.lowercased()
                        if let earlier = values[key], earlier.lowercased() != value.lowercased() { twice.append(key) }
                        values[key] = value
                    }
                }
                read = (readings, unsure, twice)
                fieldReadings[key] = read
            }
            for each in read.readings { emitOnce(place + each.suffix, each.text, media: Self.plain) }
            for suffix in read.unsure { note(place + suffix) }
            for key in read.twice { note(place + " " + key + " (given twice)") }
        }
    }

    private mutating func message(_ message: MIMEMessage, prefix: String) {
        guard depth < Self.maxDepth else { note(prefix + "(nested too deep)"); return }
        depth += 1
        // An embedded message's parts are shown on their own, not among its siblings'.
        let outer = inPartsShownInOrder
        inPartsShownInOrder = false
        defer { depth -= 1; inPartsShownInOrder = outer }
        fields(message.headers, prefix: prefix)
        if let body = message.body { entity(body, path: [], prefix: prefix, inDigest: false) }
    }

    private mutating func entity(_ entity: MIMEEntity, path: [Int], prefix: String, inDigest: Bool) {
        let type = entity.contentType
        let name = prefix + "part " + (path.isEmpty ? "1" : path.map { String($0 + 1) }.joined(separator: ".")) + " (\(type))"
        let headers = entity.headers
        let encodedNonLeaf = entity.kind != .leaf ? headers.last(where: { $0.name.lowercased() == "content-transfer-encoding" })
            .flatMap { TransferDecoding.isIdentity(FieldReadings.unfolded($0.rawValue)) ? nil : $0 } : nil
        let (types, encodings) = (Self.meanings(headers, "content-type"), Self.meanings(headers, "content-transfer-encoding"))
        // A part read other ways too (parsed anew with other fields, or
        // decoded) holds the same parts in each way: each is read once. Else
        // every level of such parts nested in one another multiplies the
        // readings of all below it (exponential in the depth).
        var written: [UInt8] = []
        if types.count > 1 || encodings.count > 1 || encodedNonLeaf != nil {
            written = entity.serialize()
            var hasher = Hasher()   // keyed per process: a sender cannot make two parts collide
            hasher.combine(written)
            hasher.combine(inDigest)
            // The same part again, also one level deeper (a multipart's decoded reading holds its
            // children as they are): read once, else each level of such parts repeats all below it.
            let key = hasher.finalize()
            if let seen = readAlready[key], seen <= depth { return }
            readAlready[key] = depth
        }
        fields(headers, prefix: name + " ")
        let decodings = ambiguous(entity, types: types, encodings: encodings, written: written, name: name, inDigest: inDigest)
        // Two Content-Disposition fields: a reader that takes the first may show inline a part
        // GMime takes for an attachment (``ShowingReader``), and so join its text with its neighbours'.
        if Self.meanings(headers, "content-disposition").count > 1 { note(name + " (two Content-Disposition fields)") }
        switch entity.kind {
        case .multipart:
            otherBoundaries(entity, headers: headers, name: name, inDigest: inDigest)
            for text in [entity.prologue, entity.epilogue].compactMap({ $0 }) {
                emitOnce(name + " preamble or epilogue", text, media: Self.plain)
                hiddenParts(text, name: name, inDigest: inDigest)
            }
            let digest = type.is("multipart", "digest")
            // Within a multipart that shows its parts in order, a nested one of that kind shows
            // its parts among its siblings': joined there, from the outermost.
            let showsInOrder = Self.showsPartsInOrder(type), outer = inPartsShownInOrder
            inPartsShownInOrder = showsInOrder
            for (index, child) in entity.children.enumerated() {
                self.entity(child, path: path + [index], prefix: prefix, inDigest: digest)
            }
            inPartsShownInOrder = outer
            if showsInOrder && !outer {
                inlineTextsJoined(entity.children, name: name)
            }
        case .message:
            if let embedded = entity.embeddedMessage { message(embedded, prefix: name + " ") }
        case .leaf:
            leaf(entity, type: type, headers: headers, name: name, inDigest: inDigest)
        }
        // Decoded after the parts as they stand are read: a decoding that leaves a part as it
        // was finds it read already at this depth (read first one level deeper, it would be
        // read again here, and so at every level above).
        for (encoding, typeField) in decodings {
            decoded(written, encoding: encoding, typeField: typeField, name: name, inDigest: inDigest)
        }
        if let encoding = encodedNonLeaf {
            // Encoded multiparts and messages are not allowed (RFC 2045 §6.4); some readers decode them anyway.
            note(name + " (transfer encoding on a \(entity.kind == .multipart ? "multipart" : "message"))")
            let typeField = headers.last { $0.name.lowercased() == "content-type" }.map { FieldReadings.unfolded($0.rawValue) } ?? ""
            decoded(written, encoding: FieldReadings.unfolded(encoding.rawValue), typeField: typeField, name: name, inDigest: inDigest)
        }
    }

    /// True while the children of a multipart that shows its parts in order (``showsPartsInOrder(_:)``)
    /// are read: a nested one of that kind has its inline text parts joined with its siblings' there.
    private var inPartsShownInOrder = false

    /// True for a multipart a reader shows part after part: any but alternative, related, digest and encrypted.
    static func showsPartsInOrder(_ type: ContentType) -> Bool {
        type.type == "multipart" && !["alternative", "related", "digest", "encrypted"].contains(type.subtype.lowercased())
    }

    /// How a reader chooses what it shows where a mail leaves the choice to it (issue 21, a hostile
    /// review's join-disp0, join-2ct-*, join-alt-middle and join-related-middle): the first or the
    /// last of a field given twice with different meanings (Python's `email` and many clients take
    /// the first, GMime the last), and which part of a multipart/alternative it shows (the last it
    /// can show, or the plain text a client set to prefer it shows). A multipart/related shows its
    /// root. Each reader is consistent in its choices; the runs of every reader are read.
    struct ShowingReader: Hashable {
        /// Takes the first of a Content-Type, Content-Transfer-Encoding or Content-Disposition given twice.
        var firstFields: Bool
        /// Shows an alternative's first text/plain part, where it has one.
        var plainAlternative: Bool

        static let all = [false, true].flatMap { first in [false, true].map { ShowingReader(firstFields: first, plainAlternative: $0) } }
    }

    /// `entity` as `reader` reads it: parsed anew with its first Content-Type and
    /// Content-Transfer-Encoding fields where it has two that mean different things (a reader
    /// that takes the first); else `entity` itself, as GMime reads it (the last).
    static func asRead(_ entity: MIMEEntity, by reader: ShowingReader) -> MIMEEntity {
        let headers = entity.headers
        let types = meanings(headers, "content-type"), encodings = meanings(headers, "content-transfer-encoding")
        guard reader.firstFields, types.count > 1 || encodings.count > 1 else { return entity }
        let written = entity.serialize()
        guard let start = bodyStart(written) else { return entity }
        return parsed(written[start...], contentType: types.first ?? "", encoding: encodings.first ?? "") ?? entity
    }

    /// `body` parsed anew under only the Content-Type and Content-Transfer-Encoding given (empty: none).
    static func parsed(_ body: ArraySlice<UInt8>, contentType: String, encoding: String) -> MIMEEntity? {
        var head = ""
        if !contentType.isEmpty { head += "Content-Type: " + contentType + "\n" }
        if !encoding.isEmpty { head += "Content-Transfer-Encoding: " + encoding + "\n" }
        return (try? MIMEEntity.parse(Array((head + "\n").utf8) + body))?.entity
    }

    /// Whether `reader` shows `entity` (a leaf as it reads it) where it stands: a text
    /// part whose Content-Disposition (the first or the last, as the reader takes them)
    /// is not `attachment`.
    static func shownInline(_ entity: MIMEEntity, headers: [Header], by reader: ShowingReader) -> Bool {
        guard entity.kind == .leaf, entity.contentType.type == "text" else { return false }
        let dispositions = headers.filter { $0.name.lowercased() == "content-disposition" }
        guard let field = reader.firstFields ? dispositions.first : dispositions.last else { return true }
        let value = FieldReadings.withoutComments(FieldReadings.unfolded(field.rawValue))
        return value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
            .trimmingBlanks.lowercased() != "attachment"
    }

    /// What a mail's parts leave to a reader's choice (``shownInOrder(_:by:depth:choices:)``): where
    /// nothing is, every ``ShowingReader`` shows what GMime's does.
    struct Choices {
        /// A part with a field given twice whose values mean different things.
        var fields = false
        /// An alternative whose plain part is not the last it can show.
        var alternative = false
    }

    /// What `reader` shows of `children`, in order, each an inline text part as it reads it, or nil
    /// for anything else (which ends a run of text): a nested multipart that shows its parts in
    /// order stands as its parts, an alternative as the part the reader chooses, a related part as
    /// its root (the part `start` names, else the first), to the readings' depth. `choices` gathers what
    /// the parts leave to a reader's choice, for the caller to ask the readers that choose otherwise.
    static func shownInOrder(_ children: [MIMEEntity], by reader: ShowingReader, depth: Int = 0, choices: inout Choices) -> [MIMEEntity?] {
        children.flatMap { original -> [MIMEEntity?] in
            let headers = original.headers
            if !choices.fields {
                choices.fields = ["content-type", "content-transfer-encoding", "content-disposition"].contains { meanings(headers, $0).count > 1 }
            }
            let child = asRead(original, by: reader)
            switch child.kind {
            case .leaf:
                return [shownInline(child, headers: headers, by: reader) ? child : nil]
            case .multipart where depth < maxDepth:
                let type = child.contentType, inner = child.children
                if showsPartsInOrder(type) { return shownInOrder(inner, by: reader, depth: depth + 1, choices: &choices) }
                let chosen: MIMEEntity?
                switch type.subtype.lowercased() {
                case "alternative":
                    // The last part a reader can show (text or a multipart), or the plain one.
                    let types = inner.map { alternative in
                        if !choices.fields { choices.fields = meanings(alternative.headers, "content-type").count > 1 }
                        return asRead(alternative, by: reader).contentType
                    }
                    let plain = types.firstIndex { $0.type == "text" && $0.subtype.lowercased() == "plain" }
                    let last = types.lastIndex { $0.type == "text" || $0.type == "multipart" }
                    if plain != nil && plain != last { choices.alternative = true }
                    chosen = ((reader.plainAlternative ? plain : nil) ?? last).map { inner[$0] }
                case "related":
                    let start = type.parameters["start"].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "<> \t")) }
                    chosen = inner.first { child in
                        start != nil && child.headers.last { $0.name.lowercased() == "content-id" }
                            .map { FieldReadings.unfolded($0.rawValue).trimmingCharacters(in: CharacterSet(charactersIn: "<> \t")) } == start
                    } ?? inner.first
                default:
                    chosen = nil
                }
                return chosen.map { shownInOrder([$0], by: reader, depth: depth + 1, choices: &choices) } ?? [nil]
            default:
                return [nil]
            }
        }
    }

    /// Consecutive inline text parts of a multipart that shows its parts one after the other
    /// (mixed, and any but alternative, related, digest and encrypted), read as one text:
    /// Apple Mail and Thunderbird show them so, with nothing between (issue 21, the fifth red
    /// team's inline-parts-*.eml: 'hello [[priv' | 'ate]]SECRET[[/priv' | 'ate]] bye', no marker in
    /// any part, a span in the text shown). Each run of two or more, as each ``ShowingReader``
    /// shows them (``shownInOrder(_:by:depth:)``: the parts of nested mixed parts, the chosen
    /// alternative, a related part's root, fields given twice read the first way or the last),
    /// their texts joined, is read as text/plain, flowed too when a part may be. An HTML part
    /// joins by its text (``Inflation/Markup``: tags and comments out, references decoded; more
    /// than a browser shows, never less). A marker seen only so is not censored: the rebuilt
    /// postcard keeps the parts as they were, its check reads them joined again and refuses the
    /// mail (65). Runs beyond ``wholeTextLimit`` are not joined.
    private mutating func inlineTextsJoined(_ children: [MIMEEntity], name: String) {
        guard reading, children.count > 1 || children.first?.kind == .multipart else { return }
        var choices = Choices()
        for reader in ShowingReader.all {
            // Only the readers whose choices the parts leave open: the others show what GMime's does.
            // The same run again (two readers that choose alike): emitOnce reads its text once.
            guard (!reader.firstFields || choices.fields) && (!reader.plainAlternative || choices.alternative) else { continue }
            let pieces = Self.shownInOrder(children, by: reader, choices: &choices)
            var start = 0
            while start < pieces.count {
                guard pieces[start] != nil else { start += 1; continue }
                var end = start + 1
                while end < pieces.count && pieces[end] != nil { end += 1 }
                defer { start = end }
                guard end - start > 1 else { continue }
                var joined = "", flowed = false, complete = true
                for case let child? in pieces[start..<end] {
                    guard var text = child.text, joined.utf8.count + text.utf8.count <= Self.wholeTextLimit else { complete = false; break }
                    if ContentType.isMarkupName(child.contentType.subtype) {
                        var markup = Inflation.Markup()
                        text.withUTF8 { markup.feed(UnsafeRawBufferPointer($0)) }
                        text = String(decoding: markup.text, as: UTF8.self)
                    }
                    joined += text
                    let fields = child.headers.filter { $0.name.lowercased() == "content-type" }.map { FieldReadings.unfolded($0.rawValue) }
                    flowed = flowed || child.contentType.parameters["format"]?.lowercased() == "flowed" || Self.flowedReadings(fields).mayFlow
                }
                guard complete else { continue }
                let media = ContentType(type: "text", subtype: "plain", parameters: flowed ? ["format": "flowed"] : [:])
                emitOnce(name + " inline text parts \(start + 1) to \(end) read as one", joined, media: media)
            }
        }
    }

    /// The different values of the fields named `field` (lower-case), each
    /// as first written. Values that mean the same differ in case, white
    /// space and comments; the identity encodings (7bit, 8bit, binary) all
    /// mean one thing (a forwarded mail often carries two of them).
    static func meanings(_ headers: [Header], _ field: String) -> [String] {
        let named = headers.filter { $0.name.lowercased() == field }
        // One field has one meaning: its value is all there is to say (most parts).
        // Trimmed as Foundation's `.whitespaces` trims, without it: a hostile mail's every part
        // (and every reading of it) comes here, and Foundation's trim cost 18,000 instructions a call.
        if named.count < 2 { return named.map { FieldReadings.unfolded($0.rawValue).trimmingBlanks } }
        var seen: [String] = [], meanings: [String] = []
        for header in named {
            let value = FieldReadings.unfolded(header.rawValue).trimmingBlanks
            let meaning = field == "content-transfer-encoding"
                ? (TransferDecoding.isIdentity(value) ? "" : TransferDecoding.token(value))
                : FieldReadings.withoutComments(value).lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
            if !meanings.contains(meaning) { meanings.append(meaning); seen.append(value) }
        }
        return seen
    }

    /// Two different Content-Type or Content-Transfer-Encoding fields
    /// (`types`, `encodings`: their values): readers differ in which wins,
    /// so the part (`written`) is read with each (parsed anew with only
    /// that one), and it counts as not readable with certainty. Returns the
    /// transfer encodings (with the Content-Type) that the caller decodes the
    /// part in after reading its children, when it is not parsed anew.
    private mutating func ambiguous(_ entity: MIMEEntity, types: [String], encodings: [String], written: [UInt8],
                                    name: String, inDigest: Bool) -> [(encoding: String, typeField: String)] {
        guard types.count > 1 || encodings.count > 1 else { return [] }
        note(name + (types.count > 1 ? " (two Content-Type fields)" : " (two Content-Transfer-Encoding fields)"))
        // A multipart whose every Content-Type reads its parts alike (the same parameters, so
        // the same boundary; a hostile mail gives mixed and alternative at every level), parsed
        // anew with any of them, holds the very parts GMime found: its children, read by the
        // caller. Only a transfer encoding, which some readers decode a multipart in, reads
        // otherwise: decoded here, each way, and the body not parsed again for each (a part
        // parsed anew holds all below it, which each level of such parts parsed again).
        if entity.kind == .multipart, let first = types.first, let same = Self.multipartReading(first),
           types.allSatisfy({ Self.multipartReading($0) == same }) {
            let encoded = encodings.filter { !TransferDecoding.isIdentity($0) }
            if !encoded.isEmpty { note(name + " (transfer encoding on a multipart)") }
            // Written as the part's own decoding writes it (its last Content-Type field), so that
            // the two decode one encoding once.
            let typeField = entity.headers.last { $0.name.lowercased() == "content-type" }.map { FieldReadings.unfolded($0.rawValue) } ?? first
            return encoded.map { ($0, typeField) }
        }
        guard let blank = Self.bodyStart(written) else { return [] }
        let body = written[blank...]
        var multiparts: Set<String> = []
        for (typeIndex, contentType) in (types.isEmpty ? [""] : types).prefix(4).enumerated() {
            // Two multipart subtypes with the same parameters hold the same parts, read alike
            // (a hostile mail gives mixed and alternative at every level): read once.
            if let same = Self.multipartReading(contentType), !multiparts.insert(same).inserted { continue }
            for encoding in (encodings.isEmpty ? [""] : encodings).prefix(4) {
                guard let alternative = Self.parsed(body, contentType: contentType, encoding: encoding) else { continue }
                self.entity(alternative, path: [], prefix: name + " read as Content-Type #\(typeIndex + 1) ", inDigest: inDigest)
            }
        }
        return []
    }

    /// A multipart or message (`written`) with a transfer encoding, decoded each way
    /// `encoding` allows, as a reader that decodes it takes it: parsed anew as
    /// `typeField` says and read (each decoded part once).
    private mutating func decoded(_ written: [UInt8], encoding: String, typeField: String, name: String, inDigest: Bool) {
        guard let start = Self.bodyStart(written), depth < Self.maxDepth else { return }
        for decoded in TransferDecoding.readings(Array(written[start...]), encoding: encoding) ?? [] {
            // The same decoded part again (each reading of an ambiguous part that
            // keeps this Content-Type and encoding decodes it alike): read once.
            readAnew(Array("Content-Type: \(typeField)\n\n".utf8) + decoded, tag: "decoded",
                     prefix: name + " decoded ", inDigest: inDigest)
        }
    }

    /// Reads `bytes`, a part written anew (decoded, or split at another boundary), as
    /// parsed from them, one level deeper; unless the same bytes (`tag` and `inDigest`
    /// alike) were read already at that depth or above: each is read once.
    private mutating func readAnew(_ bytes: [UInt8], tag: String?, prefix: String, inDigest: Bool) {
        var hasher = Hasher()   // keyed per process, as readAlready's other keys
        hasher.combine(bytes)
        hasher.combine(inDigest)
        if let tag { hasher.combine(tag) }
        let key = hasher.finalize()
        if let seen = readAlready[key], seen <= depth + 1 { return }
        readAlready[key] = depth + 1
        guard let (alternative, _) = try? MIMEEntity.parse(bytes) else { return }
        depth += 1
        entity(alternative, path: [], prefix: prefix, inDigest: inDigest)
        depth -= 1
    }

    /// A multipart whose boundary other readers take otherwise (the red team
    /// of 26 November): `boundary` given twice, in RFC 2231 form beside the
    /// plain one (`boundary*=utf-8''cc`, `boundary*0=cc`, any case), or
    /// unquoted with a space (`boundary=cc aa`, which one reader cuts at the
    /// space). GMime takes one; a reader that takes another sees other parts,
    /// which may hold a marker no reading of GMime's parts shows. Each
    /// boundary that stands on a line of the body splits it again, and those
    /// parts are read too; the multipart counts as not readable with certainty.
    private mutating func otherBoundaries(_ entity: MIMEEntity, headers: [Header], name: String, inDigest: Bool) {
        guard depth < Self.maxDepth else { return }
        var candidates: [String] = []
        for field in headers where field.name.lowercased() == "content-type" {
            for candidate in Self.boundaryCandidates(FieldReadings.unfolded(field.rawValue)) where !candidates.contains(candidate) {
                candidates.append(candidate)
            }
        }
        // Which one GMime split at is not told (its parser takes the first, its
        // parameter table the last): with more than one, each is read.
        guard candidates.count > 1 else { return }
        let written = entity.serialize()
        guard let start = Self.bodyStart(written) else { return }
        let body = Array(written[start...])
        for (index, boundary) in candidates.prefix(4).enumerated() where Self.hasDelimiterLine(body, boundary) {
            note(name + " (boundary read more than one way)")
            readAnew(Array("Content-Type: multipart/mixed; boundary=\"\(boundary)\"\n\n".utf8) + body, tag: nil,
                     prefix: name + " split at boundary #\(index + 1) ", inDigest: inDigest)
        }
    }

    /// Every value a reader may take as the boundary of a Content-Type value:
    /// each `boundary` parameter (any case), RFC 2231's extended form without
    /// its charset and language and percent-decoded, its continuations joined,
    /// and an unquoted value with blanks cut at the first one.
    static func boundaryCandidates(_ value: String) -> [String] {
        var candidates: [String] = []
        var sections: [(Int, String)] = []
        func add(_ candidate: String) {
            let trimmed = candidate.trimmingBlanks
            if !trimmed.isEmpty, !trimmed.contains("\""), !candidates.contains(trimmed) { candidates.append(trimmed) }
        }
        for (rawName, rawValue) in FieldReadings.rawParameters(value) {
            let name = rawName.lowercased()
            guard name == "boundary" || name.hasPrefix("boundary*") else { continue }
            var value = rawValue
            if name.hasSuffix("*") {
                // charset'language'percent-encoded (only the first section has the prefix)
                let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                if pieces.count == 3 { value = String(pieces[2]) }
                value = String(decoding: PercentEncoding.decoded(Array(value.utf8)), as: UTF8.self)
            }
            add(value)
            if let blank = value.firstIndex(where: { $0 == " " || $0 == "\t" }) { add(String(value[..<blank])) }
            let section = name.dropFirst("boundary*".count).filter(\.isNumber)
            if name != "boundary", name != "boundary*", let number = Int(section) { sections.append((number, value)) }
        }
        if sections.count > 1 { add(sections.sorted { $0.0 < $1.0 }.map(\.1).joined()) }
        return candidates
    }

    /// True when a line of `body` starts with `--` and `boundary`.
    static func hasDelimiterLine(_ body: [UInt8], _ boundary: String) -> Bool {
        let delimiter = Array(("--" + boundary).utf8)
        var index = 0
        while index + delimiter.count <= body.count {
            if body[index..<(index + delimiter.count)].elementsEqual(delimiter) { return true }
            guard let newline = body[index...].firstIndex(of: 10) else { return false }
            index = newline + 1
        }
        return false
    }

    /// What a Content-Type value reads as when it names a multipart: any subtype but
    /// `digest` (whose parts are messages unless they say otherwise) reads its parts
    /// alike, so the subtype is left out; nil for any other type.
    static func multipartReading(_ contentType: String) -> String? {
        let value = FieldReadings.withoutComments(contentType)
        let cut = value.firstIndex(of: ";")
        let media = (cut.map { value[..<$0] } ?? value[...]).lowercased().filter { $0 != " " && $0 != "\t" }
        guard media.hasPrefix("multipart/"), media != "multipart/digest" else { return nil }
        // The parameters as written: a boundary's case is its own.
        return cut.map { String(value[$0...]) } ?? ""
    }

    /// A bare CR (not before LF) ends a line for some readers (Python's
    /// `email`) and not for GMime, which takes what follows as more of the
    /// same line: header fields, a blank line and a body may all stand in one
    /// field's value. Every path that reads a mail comes here, so each treats
    /// it alike: the message is read again with each bare CR as a line end,
    /// and it counts as not readable with certainty.
    private mutating func lineEndsAtCR(_ message: MIMEMessage) {
        note("the message (bare CR line ends)")
        guard reading else { return }
        let written = message.serialize()
        var lines: [UInt8] = []
        lines.reserveCapacity(written.count)
        for (index, byte) in written.enumerated() {
            lines.append(byte == 13 && (index + 1 == written.count || written[index + 1] != 10) ? 10 : byte)
        }
        guard let alternative = try? MIMEMessage.parse(lines, options: .unlimited) else { return }
        self.message(alternative, prefix: "the message read with CR line ends ")
    }

    /// A preamble or epilogue with a line like a boundary (`--x`): a reader
    /// that took another boundary (the field gave two, say) sees parts there.
    /// They are read as such, and the place counts as not readable with certainty.
    private mutating func hiddenParts(_ text: String, name: String, inDigest: Bool) {
        guard depth < Self.maxDepth,
              let line = Self.firstBoundaryLike(text) else { return }
        var boundary = line.dropFirst(2).trimmingCharacters(in: .whitespacesAndNewlines)
        if boundary.hasSuffix("--") { boundary.removeLast(2) }
        guard !boundary.isEmpty, !boundary.contains("\"") else { return }
        note(name + " (parts in a preamble or epilogue)")
        let bytes = Array("Content-Type: multipart/mixed; boundary=\"\(boundary)\"\n\n\(text)".utf8)
        guard let (alternative, _) = try? MIMEEntity.parse(bytes) else { return }
        depth += 1
        entity(alternative, path: [], prefix: name + " preamble or epilogue read as parts ", inDigest: inDigest)
        depth -= 1
    }

    /// The first line of `text` that starts `--` and holds more, cut as
    /// `split(separator: "\n")` cuts (a CR LF is one Character, not a line end),
    /// found by bytes: a hostile mail's decoded garbage comes here whole for
    /// every part, and splitting it all into lines cost a tenth of its reading.
    static func firstBoundaryLike(_ text: String) -> Substring? {
        let bytes = text.utf8
        var lineStart = bytes.startIndex, index = bytes.startIndex
        var previous: UInt8 = 0
        while true {
            let atEnd = index == bytes.endIndex
            let byte = atEnd ? 0 : bytes[index]
            // An LF after anything but CR is a Character of its own, and so a grapheme boundary on both sides.
            if atEnd || (byte == 10 && previous != 13) {
                let line = text[lineStart..<index]
                if line.utf8.starts(with: [45, 45]), line.hasPrefix("--"), line.count > 2 { return line }
                if atEnd { return nil }
                lineStart = bytes.index(after: index)
            }
            previous = byte
            index = bytes.index(after: index)
        }
    }

    /// Where the body starts in a written entity: after the first empty line.
    static func bodyStart(_ bytes: [UInt8]) -> Int? {
        var index = 0
        var lineStart = true
        while index < bytes.count {
            if lineStart && bytes[index] == 10 { return index + 1 }
            if lineStart && bytes[index] == 13 && index + 1 < bytes.count && bytes[index + 1] == 10 { return index + 2 }
            lineStart = bytes[index] == 10
            index += 1
        }
        return nil
    }

    /// True for content a reader shows as text: `text/*`, anything that
    /// names a charset (but `binary`, which says it is none), markup, JSON,
    /// scripts, calendars, and `message/*`.
    package static func isTextLike(_ type: ContentType) -> Bool {
        type.type == "text" || type.type == "message" || type.parameters["charset"].map { !Charsets.saysBinary($0) } == true
            || ["xml", "html", "json", "javascript", "ecmascript", "ics", "calendar", "csv", "x-sh"].contains { type.subtype.contains($0) }
    }

    private mutating func leaf(_ entity: MIMEEntity, type: ContentType, headers: [Header], name: String, inDigest: Bool) {
        // The decoded content, read in pieces in several encodings (also what
        // a large part is left at). Its first bytes say whether it is a compressed file.
        var signs = Inflation.Signs()
        var opening = MarkupOpening()
        emit(name, .pieces(asText: true) { body in
            entity.forEachContentPiece { piece in
                signs.feed(piece)
                opening.feed(piece)
                body(piece)
            }
        })
        // A zip (an office file), gzip or PDF file: its compressed streams as the program
        // that opens it shows them. One that cannot be read within its budget is not clean.
        // Inflated once without a search first: a bomb costs zlib's time only, not the search's.
        // The mail's compressed files share one allowance (``Inflation/mailAllowance``).
        if signs.mayHold, let content = entity.content {
            let before = inflationAllowance
            // Pages inside (an `.html` entry), read as HTML is read, as a browser opening them shows them.
            // Read as HTML, a page costs far more than its bytes (a 375 KB zip of a 26 MB page:
            // 17 s and 1.3 GB, a hostile review): the mail's pages share one allowance, and a
            // file whose pages go beyond it is not clean, as a file beyond its inflation budget.
            // Counted as each page comes: once beyond, no page is held (they were all held first,
            // their total looked at after).
            var pages: [[UInt8]] = [], total = 0, beyond = false
            let left = pagesLeft
            // A gzipped page (`.svgz`, `.html.gz`), which a browser inflates and shows, is read so too.
            let gzippedPage = Inflation.isGzippedPageName(entity.filename ?? "")
            let readable = Inflation.inflate(content, allowance: &inflationAllowance, pageLimit: left, membersArePages: gzippedPage,
                                             page: { page in
                total += page.count
                guard total <= left else { beyond = true; pages = []; return false }
                pages.append(page)
                return true
            }) { _ in } != .unreadable
            emit(name + " (inflated)", .pieces(asText: true) { body in
                var allowance = before
                return readable && Inflation.inflate(content, allowance: &allowance, body) != .unreadable
            })
            if beyond {
                pagesLeft = 0
                emit(name + " (pages beyond \(Self.pageAllowance >> 20) MiB)", .pieces(asText: true) { _ in false })
            } else {
                pagesLeft -= total
                for page in pages where reading {
                    let html = ContentType(type: "text", subtype: "html",
                                           parameters: [ContentType.openedAsPage: Self.isXMLPage(name: "", head: page) ? "xml" : "1"])
                    emitOnce(name + " (inflated page)", String(decoding: page, as: UTF8.self), media: html)
                }
            }
        }
        let encodingField = headers.last { $0.name.lowercased() == "content-transfer-encoding" }
        let encoding = encodingField.map { FieldReadings.unfolded($0.rawValue).trimmingCharacters(in: .whitespaces) } ?? ""
        let isMessage = type.type == "message" || type.is("text", "rfc822-headers")
            || (inDigest && !headers.contains { $0.name.lowercased() == "content-type" })
        // A file a browser opens as a page (named `.html`, `.svg` …, or starting with a tag),
        // whatever its declared type: its bytes alone are its source's lines, but a browser
        // joins text across a tag or a comment, line ends inside them too, and reverses it
        // under `<bdo dir=rtl>` (issue 21: `[[pri<b(line end)></b>vate]]` in an
        // octet-stream `.html` went out unchanged). Read as HTML, as a text part named so is.
        // As the file system saves it: `page.html.` opens as `page.html` on Windows.
        let filename = Inflation.savedName(entity.filename ?? "")
        // A saved web page or message (`.mht`, `.mhtml`, `.eml`, or declared a web archive without a
        // name), which its browser or mail program opens as the message it holds.
        let savedPage = Inflation.isSavedMessageName(filename) || type.is("application", "x-mimearchive")
        let opensAsPage = !Self.isTextLike(type) && !isMessage
            && (Self.pageNames.contains(where: filename.hasSuffix) || opening.isTag)
        let textLike = Self.isTextLike(type) || isMessage || opensAsPage || savedPage
        // What decides certainty comes from the fields alone.
        let known = TransferDecoding.readings([], encoding: encoding) != nil
        if !known || TransferDecoding.isOddlySpelled(encoding) { note(name + " (transfer encoding \(encoding.prefix(40)))") }
        var charsets = ["UTF-8"]
        if let declared = type.parameters["charset"] {
            let candidates = Charsets.candidates(declared)
            if candidates.isEmpty && textLike { note(name + " (charset \(declared.prefix(40)))") }
            charsets = candidates.isEmpty ? Charsets.fallbacks : candidates
            if !candidates.contains(where: { ["UTF-8", "UTF8", "ASCII"].contains($0.uppercased()) }) { charsets.append("UTF-8") }
        }
        // A file named as markup is rendered as markup when opened.
        var media = (opensAsPage || [".htm", ".html", ".xhtml", ".svg", ".xml"].contains(where: filename.hasSuffix))
            && !ContentType.isMarkupName(type.subtype) ? ContentType(type: "text", subtype: "html", parameters: type.parameters) : type
        // A text-like file named as a page, or declared SVG or XML, is opened as a page too,
        // as a text/html part is checked by its rebuild, an XHTML one too: the same check (a hostile
        // review: text/plain or JSON named .html, octet-stream with a charset, text/xml,
        // image/svg+xml holding CSS that composes a marker went out unchanged).
        let declaredPage = !type.is("text", "html") && !isMessage
            && (Self.pageNames.contains(where: filename.hasSuffix) || ["xml", "svg+xml", "xslt+xml"].contains(type.subtype))
        if opensAsPage || declaredPage {
            let kind = Self.isXMLPage(name: filename, head: opening.head) ? "xml" : "1"
            media = ContentType(type: "text", subtype: "html", parameters: media.parameters.merging([ContentType.openedAsPage: kind]) { $1 })
        }
        // format=flowed and DelSp as readers may take them (issue 21): a part any reader may take
        // for flowed is read flowed too, both DelSp ways; one whose Content-Type gives them in a
        // form readers resolve differently is not read with certainty (with a marker: refused).
        if textLike && !ContentType.isMarkupName(media.subtype) {
            let flowing = Self.flowedReadings(headers.filter { $0.name.lowercased() == "content-type" }.map { FieldReadings.unfolded($0.rawValue) })
            if flowing.ambiguous { note(name + " Content-Type format or delsp (read more than one way)") }
            if flowing.mayFlow && media.parameters["format"]?.lowercased() != "flowed" {
                media = ContentType(type: media.type, subtype: media.subtype, parameters: media.parameters.merging(["format": "flowed"]) { $1 })
            }
        }
        // A nested message is read even when the visitor has seen enough: it
        // may hold places that cannot be read with certainty.
        guard textLike && (reading || isMessage || savedPage), let raw = entity.rawContent(limit: Self.wholeTextLimit) else { return }
        for bytes in TransferDecoding.readings(raw, encoding: encoding) ?? [raw] {
            // HTML is read in the charsets its `<meta>` elements declare too: a browser opening the
            // part as a file reads it so (issue 21: `charset=us-ascii` in MIME, ISO-2022-JP in a <meta>).
            let metaCharsets = media.is("text", "html") ? Charsets.metaDeclared(bytes).filter { meta in
                !charsets.contains { $0.uppercased() == meta.uppercased() }
            } : []
            let charsets = charsets + metaCharsets
            if reading && Self.rendersAsIs(media) && Charsets.sniffed(bytes).isEmpty
                && (type.parameters["charset"] != nil || Charsets.guessed(bytes).isEmpty)
                && (charsets.allSatisfy(Charsets.isASCIICompatible) && Self.isASCII(bytes)
                    || charsets.allSatisfy({ ["UTF-8", "UTF8", "ASCII"].contains($0.uppercased()) }) && !Self.mayHoldInvisibles(bytes)) {
                // Text shown as it is, in ASCII (every such charset reads it the
                // same) or in UTF-8 without a character that could hide inside a
                // marker: a search of its bytes is all there is to do.
                emitOnce(name, bytes: bytes)
            } else {
                let guessed = type.parameters["charset"] == nil ? Charsets.guessed(bytes) : []
                for charset in Charsets.sniffed(bytes) + charsets + guessed where reading {
                    guard let text = Charsets.decode(bytes, charset: charset) else { continue }
                    emitOnce(name, text, media: media)
                }
            }
            // A uuencoded block inside a text, which some readers show as an attachment.
            if reading, type.type == "text", Self.hasUUBegin(bytes) {
                emitOnce(name + " (uuencoded block)", String(decoding: TransferDecoding.uudecode(bytes), as: UTF8.self), media: media)
            }
            if isMessage || savedPage {
                // message/partial, external-body, x-…, a digest's children: their
                // content read as a message too. So is a saved web page (`.mht`, `.mhtml`:
                // multipart/related, its HTML quoted-printable or base64), which its browser
                // decodes and shows: its HTML was read only as the bytes stood.
                if let embedded = try? MIMEMessage.parse(bytes, options: .unlimited),
                   !savedPage || isMessage || embedded.body?.header("Content-Type") != nil {
                    message(embedded, prefix: name + " ")
                } else {
                    // A saved page without a Content-Type of its own (one that starts with an empty
                    // line: GMime takes all of it for a body of plain text, its base64 HTML unread,
                    // a red team found) is not read either.
                    // Not read is not clean (a hostile review: a saved page with a NUL in a
                    // header, or a field of 4,200 open encoded-words, was skipped, and under
                    // `opaque_parts = "pass"` went out with its span; a browser ignores both).
                    // A reading that cannot be made, as an unreadable inflated file is: the
                    // postcard's final check refuses it, and the mail's readings note it.
                    note(name + " (not readable as a message)")
                    emit(name + " (not readable as a message)", .pieces(asText: true) { _ in false })
                }
            }
        }
    }
}

extension MessageReadings {
    /// Names of files a browser opens as a page (``leaf``): HTML, XHTML, SVG, XML and MHTML.
    static let pageNames = [".htm", ".html", ".shtml", ".xht", ".xhtml", ".svg", ".xml", ".xsl", ".mht", ".mhtml"]

    /// What the pages inside one mail's compressed files may hold together to be
    /// read as HTML: 4 MiB.
    package static let pageAllowance = 4 << 20

    /// True for a page a browser reads as XML (SVG, XSLT, an XML file: named so, or
    /// opening with `<?xml`), where `<row/>` closes itself: read as HTML such a file of
    /// 1,100 rows nests deeper than the model reads, which must not make it count as marked.
    static func isXMLPage(name: String, head: [UInt8]) -> Bool {
        [".svg", ".xml", ".xsl"].contains(where: name.hasSuffix)
            || ["<?xml", "<svg"].contains { String(decoding: head.filter { $0 != 0 }.prefix(5), as: UTF8.self).lowercased().hasPrefix($0) }
    }

    /// Whether a file's first bytes, past byte order marks, blanks and NULs, open a tag
    /// (as a page's do): a `<` and then a letter, `!`, `/` or `?`, and the first
    /// ``headSize`` bytes from there text — UTF-8 (NULs, UTF-16's other half, aside)
    /// with no control but blanks. Fed the content's first pieces, it ignores the rest.
    /// Random bytes open with a `<` once in 256 files: taken for a page, a 20 MB one
    /// cost 37 s and 2 GB to read as HTML (the bench's 100 MB attachment, once).
    struct MarkupOpening {
        /// How many bytes from the `<` must read as text.
        static let headSize = 512
        /// The first ``headSize`` bytes from the `<` (empty when the file opens otherwise).
        private(set) var head: [UInt8] = []
        private var started = false
        private var done = false
        private var isTagSoFar = false

        /// True when the opening is a tag and the head reads as text.
        var isTag: Bool {
            guard isTagSoFar else { return false }
            var text = head.filter { $0 != 0 }
            guard text.count >= 2 else { return false }
            switch text[1] {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "!"), UInt8(ascii: "/"), UInt8(ascii: "?"): break
            default: return false
            }
            // UTF-16 (a NUL in every other byte of ASCII; a quarter is far from chance): its
            // other bytes may be anything. Else UTF-8, a sequence cut at the head's end no fault.
            if head.count - text.count >= head.count / 4 { return true }
            var cut = 0
            while cut < 3, cut < text.count, text[text.count - 1 - cut] & 0xC0 == 0x80 { cut += 1 }
            if cut < text.count, text[text.count - 1 - cut] >= 0xC0 { text.removeLast(cut + 1) }
            guard String(validating: text, as: UTF8.self) != nil else { return false }
            return !text.contains { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0C && $0 != 0x0D || $0 == 0x7F }
        }

        mutating func feed(_ piece: UnsafeRawBufferPointer) {
            guard !done else { return }
            for byte in piece {
                if !started {
                    switch byte {
                    // Blanks, NUL (UTF-16's other half), and the bytes of byte order marks.
                    case 0x00, 0x09, 0x0A, 0x0C, 0x0D, 0x20, 0xEF, 0xBB, 0xBF, 0xFE, 0xFF: continue
                    default:
                        started = true
                        isTagSoFar = byte == UInt8(ascii: "<")
                        guard isTagSoFar else { done = true; return }
                    }
                }
                head.append(byte)
                if head.count >= Self.headSize { done = true; return }
            }
        }
    }

    /// How readers may take RFC 3676's `format` and `delsp` from a part's Content-Type fields
    /// (`fields`, unfolded): `mayFlow` when any reader may take the part for format=flowed,
    /// `ambiguous` when readers may take either parameter otherwise than GMime does. The red
    /// team's forms: a parameter given twice (`format=flowed; format=fixed`, `FORMAT=fixed`,
    /// `format=bogus` after), in RFC 2231 form (`format*=''flowed`, `format*0=fixed`; Python
    /// prefers it, GMime took the last), with a comment (`format=flowed (c)`: Python flows it,
    /// GMime read `flowed (c)`), or in two Content-Type fields. Python's `get_param`, GMime and
    /// the clients each take one of them; the part is read under each, and which one a given
    /// reader takes is not known.
    static func flowedReadings(_ fields: [String]) -> (mayFlow: Bool, ambiguous: Bool) {
        var formats: [String] = [], delsps: [String] = [], otherForm = false, mentioned = false
        // RFC 2231 continuations (`format*0=flo; format*1=wed`), joined in order.
        var sections: [(Int, String)] = []
        for field in fields {
            let lower = field.lowercased()
            guard lower.contains("format") || lower.contains("delsp") || lower.contains("flowed") else { continue }
            mentioned = true
            // A comment anywhere: readers that drop comments and readers that keep them differ.
            if FieldReadings.withoutComments(field) != field { otherForm = true }
            for (rawName, rawValue) in FieldReadings.rawParameters(field) {
                let name = rawName.lowercased().trimmingBlanks
                let isFormat = name == "format" || name.hasPrefix("format*")
                guard isFormat || name == "delsp" || name.hasPrefix("delsp*") else { continue }
                var value = rawValue
                if name.contains("*") {
                    otherForm = true
                    let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                    if pieces.count == 3 { value = String(pieces[2]) }
                    value = String(decoding: PercentEncoding.decoded(Array(value.utf8)), as: UTF8.self)
                }
                value = FieldReadings.withoutComments(value).trimmingBlanks.lowercased()
                // A blank in the value (`format=flowed delsp=yes`, the `;` left out): a reader may cut it there.
                if let blank = value.firstIndex(where: { $0 == " " || $0 == "\t" }) {
                    otherForm = true
                    if isFormat { formats.append(String(value[..<blank])) }
                }
                if isFormat { formats.append(value) } else { delsps.append(value) }
                if isFormat, let number = Int(name.dropFirst("format*".count).filter(\.isNumber)), name.count > "format*".count {
                    sections.append((number, value))
                }
            }
        }
        if sections.count > 1 { formats.append(sections.sorted { $0.0 < $1.0 }.map(\.1).joined()) }
        // Given twice alike is one value (a forwarded part's fields repeat); two Content-Type
        // fields that differ are noted where the part is parsed anew with each.
        let ambiguous = mentioned && (otherForm || Set(formats).count > 1 || Set(delsps).count > 1)
        let mayFlow = formats.contains { $0.contains("flowed") }
            || ambiguous && fields.contains { $0.lowercased().contains("flowed") }
        // DelSp matters to flowed text only.
        return (mayFlow, ambiguous && mayFlow)
    }

    /// True for media types a reader shows as their text, nothing joined,
    /// unfolded or decoded further.
    static func rendersAsIs(_ type: ContentType) -> Bool {
        !ContentType.isMarkupName(type.subtype) && type.parameters["format"]?.lowercased() != "flowed"
            && !["calendar", "vcard", "directory", "x-vcard", "x-vcalendar", "ics", "enriched", "richtext"].contains(type.subtype)
    }

    /// False when UTF-8 `bytes` surely hold no default-ignorable character
    /// (soft hyphen, zero-width and bidirectional marks, variation selectors,
    /// tags …) and nothing that folds to ASCII (the Kelvin sign): checked by
    /// the lead bytes of their encodings, generously.
    static func mayHoldInvisibles(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            let count = buffer.count
            var index = 0
            while index < count {
                let byte = buffer[index]
                if byte >= 0x80 {
                    let next: UInt8 = index + 1 < count ? buffer[index + 1] : 0
                    switch byte {
                    case 0xC2: if next == 0xAD { return true }
                    case 0xCD, 0xD8, 0xE1, 0xE3, 0xF0, 0xF3: return true
                    case 0xE2: if next == 0x80 || next == 0x81 || next == 0x84 { return true }
                    case 0xEF: if next == 0xB8 || next == 0xBB || next == 0xBE { return true }
                    default: break
                    }
                }
                index += 1
            }
            return false
        }
    }

    static func isASCII(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            var high: UInt8 = 0
            for byte in buffer { high |= byte }
            return high < 0x80
        }
    }

    /// True when a line of `bytes` starts `begin ` and three octal digits (a uuencoded block).
    static func hasUUBegin(_ bytes: [UInt8]) -> Bool {
        let begin = Array("begin ".utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            var start = 0
            while start + begin.count + 3 <= buffer.count {
                if buffer[start] == begin[0] && (0..<begin.count).allSatisfy({ buffer[start + $0] == begin[$0] })
                    && (0..<3).allSatisfy({ buffer[start + begin.count + $0] >= 0x30 && buffer[start + begin.count + $0] <= 0x37 }) {
                    return true
                }
                // On to the next line.
                guard let newline = memchr(buffer.baseAddress! + start, 10, buffer.count - start) else { return false }
                start = UnsafeRawPointer(newline).assumingMemoryBound(to: UInt8.self) - buffer.baseAddress! + 1
            }
            return false
        }
    }
}

extension ContentType {
    static func isMarkupName(_ subtype: String) -> Bool { subtype.contains("html") || subtype.contains("xml") }

    /// The parameter ``MessageReadings`` adds to the media of a reading of a file a browser
    /// opens as a page (whatever type it is declared as), so that its visitor reads it as a page.
    package static let openedAsPage = "x-mailsec-opened-as-page"

    init(type: String, subtype: String, parameters: [String: String]) {
        self.type = type
        self.subtype = subtype
        self.parameters = parameters
    }
}

extension MIMEEntity {
    /// The content of a leaf as it stands in the message, transfer encoding
    /// and all; nil for multiparts and messages, content larger than
    /// `limit`, or content that cannot be read.
    /// The first `count` bytes of the decoded content of a leaf (empty for
    /// others): enough to see a byte order mark.
    package func contentPrefix(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        forEachContentPiece { piece in if bytes.count < count { bytes += piece.prefix(count - bytes.count) } }
        return bytes
    }

    package func rawContent(limit: Int) -> [UInt8]? {
        guard mailsec_gmime_is_part(raw) != 0 else { return nil }
        let part: UnsafeMutablePointer<GMimePart> = cast(raw)
        guard let wrapper = g_mime_part_get_content(part) else { return [] }
        guard let stream = g_mime_data_wrapper_get_stream(wrapper) else { return [] }
        var bytes: [UInt8] = []
        // Its length is known: reserved once, not grown by doubling (a 100 MB part held 128 MiB).
        if let length = encodedContentLength, length <= limit { bytes.reserveCapacity(length) }
        var tooLarge = false
        let sink = SinkStream { piece in
            if bytes.count + piece.count > limit { tooLarge = true } else { bytes += piece }
        }
        g_mime_stream_reset(stream)
        let written = g_mime_stream_write_to_stream(stream, sink.raw)
        g_mime_stream_reset(stream)
        return written < 0 || tooLarge ? nil : bytes
    }
}

/// Looks for a CR not followed by LF in bytes that come in pieces.
struct BareCRScan {
    private var seen = false
    private var pendingCR = false

    /// True when a CR stands before anything but LF, or at the end.
    var found: Bool { seen || pendingCR }

    mutating func feed(_ piece: UnsafeRawBufferPointer) {
        guard !seen, let base = piece.baseAddress, !piece.isEmpty else { return }
        if pendingCR && piece[0] != 10 { seen = true; return }
        pendingCR = false
        var start = 0
        while start < piece.count, let hit = memchr(base + start, 13, piece.count - start) {
            let at = base.distance(to: UnsafeRawPointer(hit))
            if at + 1 == piece.count { pendingCR = true; return }
            if piece[at + 1] != 10 { seen = true; return }
            start = at + 2
        }
    }
}
