import Foundation
import HTML
import MIME
import OpenPGP
import Policy
import Synchronization

/// Why a postcard could not be rebuilt. The description names the place,
/// never message content.
package struct RebuildError: Error, Sendable, CustomStringConvertible {
    /// What stopped the rebuild.
    package enum Code: Sendable, Equatable {
        /// The mail is signed (`multipart/signed`, cleartext-signed text, S/MIME signed-data).
        case signed
        /// `opaque_parts = "refuse"` and the mail has parts mailsec does not read.
        case refusedParts
        /// `opaque_parts = "pass"` and a marker stands in the bytes of a part passed unread.
        case markerInPassedPart
        /// Messages nested deeper than the rebuild goes.
        case tooDeep
    }

    /// What stopped the rebuild.
    package let code: Code
    /// Where (`part 2 (application/pdf)`).
    package let place: String
    /// What the rebuild had found when it stopped (for the plan).
    package let parts: PostcardParts
    /// True when a text held an inline block no search sees into (``RebuiltPostcard/unsearchable``).
    package var unsearchable = false

    /// One line, without message content.
    package var description: String {
        switch code {
        case .signed: "\(place) is signed"
        case .refusedParts: "\(place) cannot be read, and opaque parts are refused"
        case .markerInPassedPart: "a private marker stands in \(place), which would be passed unread"
        case .tooDeep: "\(place) is nested too deep"
        }
    }
}

/// A postcard rebuilt from its mail: a new message, and what it withheld,
/// passed unread or dropped. Holds GMime objects, so it is not `Sendable`.
package struct RebuiltPostcard {
    /// The postcard (Bcc is in no postcard).
    package let message: MIMEMessage
    /// What was withheld, passed unread or dropped by the HTML allow-list.
    package let parts: PostcardParts
    /// The model's From and Subject (decoded, cleaned, not yet censored): what
    /// the reading page of a partially encrypted postcard shows.
    package let from: String
    package let subject: String
    /// The model's main text, not yet censored: the first text/plain part
    /// that is not an attachment, else the first such HTML part.
    package let readingText: ReadingText?

    /// The main text of the model.
    package enum ReadingText { case plain(String), html(String) }

    /// True when a text held an inline block no search sees into (compressed OpenPGP, armor
    /// that does not decode to packets): the recipient's program unpacks it and may show a
    /// span mailsec cannot read, so the mail counts as marked.
    package var unsearchable = false

    /// A rebuilt postcard and what is known of it.
    package init(message: MIMEMessage, parts: PostcardParts, from: String, subject: String, readingText: ReadingText?) {
        self.message = message
        self.parts = parts
        self.from = from
        self.subject = subject
        self.readingText = readingText
    }
}

/// A count of rebuilds (``PostcardRebuild/counted``).
package final class RebuildCount: Sendable {
    private let count = Mutex(0)
    /// No rebuild yet.
    package init() {}
    /// How many rebuilds were made.
    package var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

/// Postcards of a mail with marked spans are rebuilt, not edited: a new
/// message is written from what mailsec reads of the original, so that a
/// recipient's software has one way to read it.
///
/// - Header fields of the message and of every part kept: decoded (GMime's
///   decoding; the lenient readings where one shows a marker GMime's does
///   not), cleaned of controls, censored, and written again as UTF-8
///   encoded-words. Content-* fields and MIME-Version are written by mailsec,
///   never copied; file names are decoded, censored and written as RFC 2231.
/// - Text (text/plain and what mailsec reads as text, a `.txt` sent as
///   octet-stream that decodes cleanly): decoded (transfer encoding,
///   charset, format=flowed joined), cleaned (C0/C1 controls but newline and
///   tab, backspace overstrike, ECMA-48 escape sequences), inline uuencode,
///   yEnc and BinHex blocks cut out as opaque parts, censored, written as
///   UTF-8 quoted-printable text/plain, not flowed.
/// - HTML: parsed as a browser parses it and written again through an
///   allow-list (``HTMLRebuild``); what it dropped is listed.
/// - `message/*` and digest children: rebuilt the same way, recursively;
///   multiparts with a fresh boundary.
/// - Ciphertext (``EncryptedAlready``) is kept as it is; a signature refuses
///   the rebuild; every other leaf is opaque and follows ``OpaqueParts``.
package enum PostcardRebuild {
    /// Rebuilds the postcard of `message`, spans treated by `mode` (`.censor`,
    /// or `.number(catalog)` for a partially encrypted postcard). Throws
    /// ``RebuildError`` (signed, refused or marked opaque parts, too deep) and
    /// `PolicyError` (markers that do not pair up).
    package static func rebuild(_ message: MIMEMessage, redactor: Redactor, mode: Redactor.Mode = .censor,
                               opaque: OpaqueParts = .withhold) throws -> RebuiltPostcard {
        if let counted = counted { counted.add() }
        let builder = Builder(redactor: redactor, mode: mode, opaque: opaque)
        let rebuilt = try builder.message(message, prefix: "")
        if let first = builder.parts.refused.first {
            var error = RebuildError(code: .refusedParts, place: first, parts: builder.parts)
            error.unsearchable = builder.unsearchable
            throw error
        }
        // The reading page shows the fields in the reading the postcard's were censored in (the
        // lenient one that shows markers, where GMime's does not), so its spans are the postcard's.
        func field(_ name: String) -> String {
            message.headers.first { $0.name.lowercased() == name }.map { Cleaning.cleaned(redactor.markedReading($0), singleLine: true) } ?? ""
        }
        let from = field("from")
        rebuilt.removeHeader("Bcc")
        var postcard = RebuiltPostcard(message: rebuilt, parts: builder.parts, from: from,
                                       subject: field("subject"),
                                       readingText: builder.plainText.map { RebuiltPostcard.ReadingText.plain($0) }
                                           ?? builder.htmlText.map { RebuiltPostcard.ReadingText.html($0) })
        postcard.unsearchable = builder.unsearchable
        return postcard
    }

    /// A rebuild made to learn whether the model of a mail holds a marked span,
    /// kept so that the postcard is written from it and the mail is rebuilt once.
    package struct ModelReading {
        /// True when the model holds a span; nil when the mail has no model (signed, too deep).
        package let hasSpans: Bool?
        /// The rebuild: the postcard, or what stopped it (signed, too deep, refused or marked opaque parts).
        package let rebuilt: Result<RebuiltPostcard, RebuildError>
        /// What the rebuild did with spans: `.censor`, or `.number(catalog)` (the catalog filled).
        package let mode: Redactor.Mode
        /// What it did with opaque parts.
        package let opaque: OpaqueParts

        /// True when this rebuild is the one a postcard in `mode` (the same catalog) and `opaque` is made of.
        package func serves(_ mode: Redactor.Mode, opaque: OpaqueParts) -> Bool {
            guard opaque == self.opaque else { return false }
            switch (mode, self.mode) {
            case (.censor, .censor): return true
            case let (.number(wanted), .number(made)): return wanted === made
            default: return false
            }
        }
    }

    /// Rebuilds `message` in `mode` (`.censor` or `.number(catalog)` with a fresh catalog) and
    /// `opaque`, as a postcard of it would be, and says whether the model held a span. A recipient's
    /// program shows more than the raw parts: HTML without its hidden content, text without its
    /// terminal escape sequences, header fields cleaned of controls. Those join a marker that no
    /// reading of the parts as they stand shows (`[[pri<span hidden>x</span>vate]]`), and a mail
    /// judged to have no spans goes out as it came; so the model is read too, opaque parts unread.
    /// A text holding an inline block no search sees into (``RebuiltPostcard/unsearchable``)
    /// counts as a span: the block is withheld (or, passed, refused).
    ///
    /// What the opaque setting alone stops does not decide for the model: `refuse` stops after
    /// the whole model was read (its spans are known), and a marker in a part passed unread stops
    /// half way, so the model is read again with opaque parts withheld (a second rebuild, for such
    /// mails only). A signed or too deeply nested mail has no model (nil). `PolicyError` (markers
    /// of the model that do not pair up) and any other error propagate: a model that could not be
    /// read may hide a span, so the mail is not sent as it came (fail closed).
    package static func read(_ message: MIMEMessage, redactor: Redactor, mode: Redactor.Mode,
                             opaque: OpaqueParts) throws -> ModelReading {
        // The spans found are noted in a catalog either way: the numbered postcard's own, or one kept aside.
        let catalog: SpanCatalog
        let used: Redactor.Mode
        if case .number(let given) = mode { (catalog, used) = (given, mode) } else {
            catalog = SpanCatalog()
            used = .censorNoting(catalog)
        }
        let rebuilt: Result<RebuiltPostcard, RebuildError>
        do { rebuilt = .success(try rebuild(message, redactor: redactor, mode: used, opaque: opaque)) } catch let error as RebuildError {
            rebuilt = .failure(error)
        }
        let hasSpans: Bool?
        switch rebuilt {
        case .success(let postcard): hasSpans = !catalog.spans.isEmpty || postcard.unsearchable
        case .failure(let error):
            switch error.code {
            case .refusedParts: hasSpans = !catalog.spans.isEmpty || error.unsearchable
            case .markerInPassedPart: hasSpans = try read(message, redactor: redactor, mode: .censor, opaque: .withhold).hasSpans
            case .signed, .tooDeep: hasSpans = nil
            }
        }
        return ModelReading(hasSpans: hasSpans, rebuilt: rebuilt, mode: mode, opaque: opaque)
    }

    /// Counts the rebuilds made while it is bound (`$counted.withValue`): tests
    /// check that a mail is rebuilt once, however many questions are asked of it.
    @TaskLocal package static var counted: RebuildCount?

    /// Only the header fields of `message`, rebuilt as in ``rebuild(_:redactor:mode:opaque:)``,
    /// over an empty body: what a letter shows outside.
    package static func outside(_ message: MIMEMessage, redactor: Redactor, mode: Redactor.Mode = .censor) throws -> MIMEMessage {
        let builder = Builder(redactor: redactor, mode: mode, opaque: .withhold)
        let outside = MIMEMessage(body: .text(""))
        try builder.fields(message.headers, place: "") { name, value in outside.appendHeader(name, value) }
        return outside
    }

    /// The inline blocks of text that are not text (uuencode, yEnc, BinHex).
    struct Block {
        let kind: String
        let name: String?
        let text: String

        /// What a reader decodes the block to, for the search of a block
        /// passed unread: `[]` for data a search cannot see into (BinHex,
        /// compressed OpenPGP), which then counts as marked.
        var decoded: [[UInt8]]? {
            let bytes = Array(text.utf8)
            switch kind {
            case "uuencode": return [TransferDecoding.uudecode(bytes)]
            case "yEnc": return [Cleaning.yDecoded(bytes)]
            case "OpenPGP":
                // Quoted or indented armor is read as a reader unquotes it. Literal data and keys stand
                // in the packets as they are; compressed data does not, and armor that does not decode
                // to packets cannot be searched.
                let unquoted = text.split(separator: "\n", omittingEmptySubsequences: false).map(Cleaning.armorLine).joined(separator: "\n")
                guard let data = Packets.binary(Array(unquoted.utf8)), case let packets = Packets.list(data), !packets.isEmpty,
                      !packets.contains(where: { $0.tag == 8 }) else { return [] }
                return [data]
            case "BinHex": return [Cleaning.binHexDecoded(bytes)]
            default: return []
            }
        }
    }

    final class Builder {
        let redactor: Redactor
        let mode: Redactor.Mode
        let opaque: OpaqueParts
        var parts = PostcardParts()
        var depth = 0
        var plainText: String?
        var htmlText: String?
        /// True when the text holds an inline block no search can see into (compressed
        /// OpenPGP, armor that does not decode): a reader's program unpacks it and may show a span.
        var unsearchable = false
        /// What the mail's compressed files passed unread may still cost beyond their own sizes:
        /// one allowance for the whole mail, as its readings have (a review: each passed part had
        /// its own 16 MiB, so 16 parts of 530 bytes each unpacked 256 MiB).
        var inflationAllowance = Inflation.mailAllowance
        /// The parts the HTML rebuilt so far refers to from inside a span taken out
        /// (``HTMLRebuild/Rebuilt/referredInSpans``): with opaque parts passed, such a part is
        /// withheld all the same, as the sender marked it (a red team: an image shown only
        /// inside a span, `<img src=cid:a>`, went out as an inline attachment).
        var referredInSpans: Set<String> = []
        static let maxDepth = 24

        init(redactor: Redactor, mode: Redactor.Mode, opaque: OpaqueParts) {
            self.redactor = redactor
            self.mode = mode
            self.opaque = opaque
        }

        // MARK: Messages and fields

        func message(_ message: MIMEMessage, prefix: String) throws -> MIMEMessage {
            guard depth < Self.maxDepth else { throw RebuildError(code: .tooDeep, place: prefix.isEmpty ? "the message" : prefix, parts: parts) }
            depth += 1
            defer { depth -= 1 }
            // The fields first: spans are numbered in the order a reader meets them.
            var fields: [(String, String)] = []
            try self.fields(message.headers, place: prefix) { fields.append(($0, $1)) }
            let body = try message.body.map { try entity($0, path: [], prefix: prefix, inDigest: false) } ?? .text("")
            let rebuilt = MIMEMessage(body: body)
            var subjectSet = false
            for (name, value) in fields {
                if name.lowercased() == "subject" && !subjectSet {
                    rebuilt.setSubject(value)
                    subjectSet = true
                } else {
                    rebuilt.appendHeader(name, value)
                }
            }
            // MIME-Version is mailsec's own: after the fields kept, where mail software writes it,
            // not ahead of From (GMime adds it first when the body is set).
            rebuilt.removeHeader("MIME-Version")
            rebuilt.appendHeader("MIME-Version", "1.0")
            rebuilt.foldLongHeaders()
            return rebuilt
        }

        /// Every field but the structural ones and Bcc, decoded, cleaned and censored, handed to `add`.
        func fields(_ headers: [Header], place: String, part: Bool = false, _ add: (String, String) -> Void) throws {
            for header in headers {
                let name = header.name.lowercased()
                if name == "mime-version" || name == "bcc" || name == "resent-bcc" { continue }
                if name.hasPrefix("content-") && !(part && (name == "content-id" || name == "content-description")) { continue }
                guard Self.isFieldName(header.name) else { continue }
                let value = Cleaning.cleaned(redactor.markedReading(header), singleLine: true)
                add(header.name, try redactor.redact(value, mode: mode, part: place + header.name))
            }
        }

        /// A field name of printable ASCII without a colon (RFC 5322 §3.6.8).
        static func isFieldName(_ name: String) -> Bool {
            !name.isEmpty && name.utf8.allSatisfy { $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") }
        }

        /// The part's own fields kept (Content-ID, Content-Description, X- …), its
        /// disposition, and its file name censored.
        func partFields(of original: MIMEEntity, onto rebuilt: MIMEEntity, place: String, filename: String?) throws {
            try fields(original.headers, place: place + " ", part: true) { name, value in rebuilt.setHeader(name, value) }
            if original.kind == .leaf, rebuilt.kind == .leaf {
                let disposition = original.disposition == "attachment" || filename != nil && original.disposition != "inline"
                    ? "attachment" : "inline"
                if original.disposition != nil || filename != nil { rebuilt.setHeader("Content-Disposition", disposition) }
                if let filename { rebuilt.setFilename(filename) }
            }
        }

        /// Every reading of a leaf's `name` and `filename` parameters (each
        /// decoding of each), and GMime's: the names a recipient's software may use.
        func fileNames(of entity: MIMEEntity) -> [String] {
            var readings: [String] = []
            entity.rewriteParameters { name, values in
                if ["name", "filename"].contains(name.lowercased()) { readings += values }
                return nil
            }
            if let name = entity.filename { readings.append(name) }
            return readings
        }

        /// Names a viewer opens as plain text: a text/plain part with another
        /// name (`notes.html`, `x.md`, `a.ics`, `README`) is opaque.
        static let textExtensions: Set<String> = ["txt", "text", "log", "diff", "patch"]
        /// Names a browser opens as the HTML that the allow-list writes.
        static let htmlExtensions: Set<String> = ["html", "htm"]

        /// True when `name`, cleaned as a file system would take it (controls
        /// and trailing dots and blanks dropped, Windows does), ends in `.` and
        /// one of `extensions`, in any case.
        static func hasExtension(_ name: String, _ extensions: Set<String>) -> Bool {
            let cleaned = Cleaning.cleaned(name, singleLine: true).unicodeScalars
                .filter { !($0.value == 0xAD || $0.properties.isDefaultIgnorableCodePoint) }
            var trimmed = String(scalars: cleaned)
            while let last = trimmed.last, last == "." || last == " " { trimmed.removeLast() }
            guard let dot = trimmed.lastIndex(of: ".") else { return false }
            return extensions.contains(trimmed[trimmed.index(after: dot)...].lowercased())
        }

        /// The file name of a leaf, decoded and censored: the first reading of
        /// `filename` or `name` that shows a marker, else GMime's.
        func filename(of entity: MIMEEntity, place: String) throws -> String? {
            let readings = fileNames(of: entity)
            guard let chosen = readings.first(where: redactor.hasMarkers) ?? entity.filename ?? readings.first else { return nil }
            let name = try redactor.redact(Cleaning.cleaned(chosen, singleLine: true), mode: mode, part: place + " filename")
            return name.isEmpty ? nil : name
        }

        // MARK: Entities

        func entity(_ entity: MIMEEntity, path: [Int], prefix: String, inDigest: Bool) throws -> MIMEEntity {
            let type = entity.contentType
            let place = prefix + "part " + (path.isEmpty ? "1" : path.map { String($0 + 1) }.joined(separator: ".")) + " (\(type))"
            if EncryptedAlready.isSigned(entity) { throw RebuildError(code: .signed, place: place, parts: parts) }
            // Ciphertext is no reading of anything: it goes as it came.
            if EncryptedAlready.isEncrypted(entity) { return try entity.copy() }
            switch entity.kind {
            case .multipart:
                let digest = type.is("multipart", "digest")
                // Parts holding HTML first (put back in their order after), so that what a page
                // refers to from inside a span is known before the part referred to is passed.
                let order = entity.children.indices.filter { Self.holdsHTML(entity.children[$0]) }
                    + entity.children.indices.filter { !Self.holdsHTML(entity.children[$0]) }
                var rebuiltChildren = [MIMEEntity?](repeating: nil, count: entity.children.count)
                for index in order {
                    rebuiltChildren[index] = try self.entity(entity.children[index], path: path + [index], prefix: prefix, inDigest: digest)
                }
                let children = rebuiltChildren.compactMap { $0 }
                // A multipart/encrypted or /signed that is neither (above) is no such thing any more.
                let rebuilt = MIMEEntity.multipart(["encrypted", "signed"].contains(type.subtype) ? "mixed" : type.subtype, children)
                try partFields(of: entity, onto: rebuilt, place: place, filename: nil)
                return rebuilt
            case .message:
                guard let embedded = entity.embeddedMessage else { return try opaquePart(entity, type: type, place: place) }
                let rebuilt = MIMEEntity.message(try message(embedded, prefix: place + " "))
                try partFields(of: entity, onto: rebuilt, place: place, filename: nil)
                return rebuilt
            case .leaf:
                return try leaf(entity, type: type, place: place, inDigest: inDigest)
            }
        }

        func leaf(_ entity: MIMEEntity, type: ContentType, place: String, inDigest: Bool) throws -> MIMEEntity {
            let headers = entity.headers
            // A digest's child without Content-Type is a message (RFC 2046 §5.1.5);
            // so is every message/* leaf (partial, external-body, unknown kinds) as a
            // reader shows it, and text/rfc822-headers: each is rebuilt as one.
            let isMessage = type.type == "message" || type.is("text", "rfc822-headers")
                || inDigest && !headers.contains { $0.name.lowercased() == "content-type" }
            if isMessage {
                guard let bytes = entity.content, let embedded = try? MIMEMessage.parse(bytes) else {
                    return try opaquePart(entity, type: type, place: place)
                }
                let rebuilt = MIMEEntity.message(try message(embedded, prefix: place + " "))
                try partFields(of: entity, onto: rebuilt, place: place, filename: nil)
                return rebuilt
            }
            let filename = try self.filename(of: entity, place: place)
            let names = fileNames(of: entity)
            let isHTML = (type.is("text", "html") || type.is("application", "xhtml+xml"))
                && names.allSatisfy { Self.hasExtension($0, Self.htmlExtensions) }
            // What mailsec reads as text is an allow-list (issue 21, rule 6): text/plain, whose one
            // reading is the text mailsec writes. Every other text/* (enriched, markdown, calendar,
            // vcard, json, rtf, csv, xml …) has viewers that decode it otherwise: opaque. So is a
            // text/plain file whose name makes a viewer open it as something else (`.html`, `.md`, …).
            let textLike = type.is("text", "plain") && names.allSatisfy { Self.hasExtension($0, Self.textExtensions) }
            // A file named .txt sent as octet-stream is text when it decodes cleanly as such.
            let friendlyText = type.is("application", "octet-stream") && !names.isEmpty
                && names.allSatisfy { Self.hasExtension($0, ["txt"]) }
            guard isHTML || textLike || friendlyText,
                  let decoded = decodedText(entity, type: type, strict: !(isHTML || textLike)) else {
                // Other text (enriched, Markdown, a .md sent as text/plain …) is not read, but its viewer
                // shows its lines as they are: a block no search sees into there marks the mail too.
                if type.type == "text", let bytes = entity.content, Self.holdsUnsearchableBlock(String(decoding: bytes, as: UTF8.self)) {
                    return try unsearchablePart(entity, type: type, place: place, filename: filename)
                }
                return try opaquePart(entity, type: type, place: place, filename: filename)
            }
            let attachment = entity.disposition == "attachment"
            if isHTML {
                // A <meta> charset that reads the part otherwise than the text read here (issue 21):
                // a browser opening the part as a file shows the <meta>'s reading, whose spans may
                // hold other text. Refused, not read both ways: the postcard has one reading, and
                // a span in one charset may be text outside any span in the other. The postcard
                // itself carries one charset (UTF-8, in MIME and in the one <meta> written).
                // Only where a marker stands in one of the readings: a part without one has no span
                // to move, and a template's <meta charset="utf-8"> over Latin-1 bytes is common in
                // ordinary mail (the adversarial run's control: refused before).
                if let bytes = entity.content, Charsets.sniffed(bytes).isEmpty {
                    let others = Charsets.metaDeclared(bytes).compactMap { Charsets.decode(bytes, charset: $0) }.filter { $0 != decoded }
                    if !others.isEmpty, ([decoded] + others).contains(where: { redactor.hasMarkers($0) || redactor.hasMarkersHTML($0) || redactor.hasMarkersInDecodings($0, markup: true) }) {
                        throw PolicyError(.unbalancedMarkers, marker: .init(part: place, line: 1, column: 1, problem: .charsetsDisagree))
                    }
                }
                let html = Cleaning.cleaned(decoded, singleLine: false)
                let written: HTMLRebuild.Rebuilt
                do { written = try rebuildHTML(html, place: place) } catch is HTMLError {
                    // Nested deeper than a browser nests, or a tree far larger than the document:
                    // not read completely, so opaque (HTMLNesting says why a parse is not tried).
                    return try opaquePart(entity, type: type, place: place, filename: filename)
                }
                // An armored block no search sees into, in the lines the page shows (`<pre>`, `<br>`s):
                // the reader's program may show a span from it, so the whole part is opaque, and marked.
                if Self.holdsUnsearchableBlock(written.lines) {
                    return try unsearchablePart(entity, type: type, place: place, filename: filename)
                }
                if !attachment && htmlText == nil { htmlText = html }
                let rebuilt = MIMEEntity.quotedPrintableText(written.html, subtype: "html")
                try partFields(of: entity, onto: rebuilt, place: place, filename: filename)
                return rebuilt
            }
            let cleaned = Cleaning.cleaned(decoded, singleLine: false)
            var text = cleaned
            if type.parameters["format"]?.lowercased() == "flowed" {
                text = Redactor.unflowed(cleaned, deleteSpace: type.parameters["delsp"]?.lowercased() == "yes")
            }
            if !redactor.hasMarkers(text) {
                // A reader may render the part otherwise (enriched without its commands, calendar
                // lines unfolded, references decoded, flowed lines joined the other way): the
                // rendering that shows the markers is the text written, as plain text.
                let shown = redactor.renderings(cleaned, type: type.type, subtype: type.subtype, parameters: type.parameters)
                    .filter(redactor.hasMarkers)
                if let chosen = shown.first(where: { (try? redactor.validate($0, part: place)) != nil }) ?? shown.first {
                    text = Cleaning.cleaned(chosen, singleLine: false)
                }
            }
            let (kept, blocks) = Cleaning.cutBlocks(text)
            if !attachment && plainText == nil { plainText = kept }
            let rebuilt = MIMEEntity.quotedPrintableText(try redactor.redact(kept, mode: mode, part: place))
            try partFields(of: entity, onto: rebuilt, place: place, filename: filename)
            guard !blocks.isEmpty else { return rebuilt }
            // The blocks follow the text as parts of their own.
            let opaqueBlocks = try blocks.enumerated().map { index, block in
                let name = try block.name.map { try redactor.redact(Cleaning.cleaned($0, singleLine: true), mode: mode, part: place + " \(block.kind) name") }
                let decoded = block.decoded
                if decoded?.isEmpty == true { unsearchable = true }
                return try opaqueBytes(Array(block.text.utf8), decoded: decoded,
                                       place: place + " \(block.kind) block \(index + 1)", filename: name)
            }
            return .multipart("mixed", [rebuilt] + opaqueBlocks)
        }

        /// The text of a leaf: its decoded content in the first charset that
        /// shows a marker, else the first that decodes (a byte order mark first,
        /// then the declared charset, else UTF-8 when valid, else Latin-1).
        /// nil when the content cannot be read as text: a charset no one
        /// knows, or (`strict`) bytes that are not clean UTF-8 text.
        func decodedText(_ entity: MIMEEntity, type: ContentType, strict: Bool) -> String? {
            guard let bytes = entity.content else { return nil }
            if strict {
                guard !bytes.contains(0), let text = String(bytes: bytes, encoding: .utf8) else { return nil }
                return text
            }
            var candidates = Charsets.sniffed(bytes)
            if let declared = type.parameters["charset"]?.trimmingCharacters(in: .whitespaces), !declared.isEmpty,
               !["binary", "unknown-8bit", "x-unknown", "unknown"].contains(declared.lowercased()) {
                let known = Charsets.candidates(declared)
                if known.isEmpty && candidates.isEmpty { return nil }
                candidates += known
            } else {
                // Without a MIME charset, readers of HTML take the one its <meta> declares.
                if type.is("text", "html") || type.is("application", "xhtml+xml") { candidates += Charsets.metaDeclared(bytes) }
                candidates += Charsets.guessed(bytes)
                candidates.append(String(bytes: bytes, encoding: .utf8) != nil ? "UTF-8" : "windows-1252")
            }
            // The first reading whose markers pair up; else the first that shows one; else the first.
            var first: String?, marked: String?
            func paired(_ text: String) -> Bool {
                guard redactor.hasMarkers(text) else { return false }
                if (try? redactor.validate(text, part: "")) != nil { return true }
                if marked == nil { marked = text }
                return false
            }
            for charset in candidates {
                guard let text = Charsets.decode(bytes, charset: charset) else { continue }
                if paired(text) { return text }
                if first == nil { first = text }
            }
            // Where lenient readers decode the transfer encoding otherwise than GMime (white
            // space after a soft line break, a stray `=` in base64), the reading that shows the
            // span is the text: the readings found it there, so the rebuild censors it there.
            let encoding = entity.headers.last { $0.name.lowercased() == "content-transfer-encoding" }?.rawValue ?? ""
            if let raw = entity.rawContent(limit: MessageReadings.wholeTextLimit),
               let readings = TransferDecoding.readings(raw, encoding: encoding) {
                for reading in readings where reading != bytes {
                    for charset in Charsets.sniffed(reading) + candidates {
                        if let text = Charsets.decode(reading, charset: charset), paired(text) { return text }
                    }
                }
            }
            if let marked { return marked }
            return first ?? (candidates.isEmpty ? nil : Charsets.decode(bytes, charset: "ISO-8859-1"))
        }

        /// True when `entity` is or holds a text/html leaf.
        static func holdsHTML(_ entity: MIMEEntity) -> Bool {
            switch entity.kind {
            case .leaf: entity.contentType.is("text", "html")
            case .multipart: entity.children.contains(where: holdsHTML)
            case .message: false
            }
        }

        /// HTML through the allow-list, its text and kept attribute values censored.
        /// What the allow-list dropped goes into the inventory, with the part.
        func rebuildHTML(_ html: String, place: String) throws -> HTMLRebuild.Rebuilt {
            let rebuilt = try HTMLRebuild.rebuilt(html, redactor: redactor, mode: mode, part: place)
            parts.dropped += rebuilt.dropped.map { place + ": " + $0 }
            referredInSpans.formUnion(rebuilt.referredInSpans)
            return rebuilt
        }

        /// True when `text` holds an inline block no search sees into (compressed OpenPGP,
        /// armor that does not decode to packets: ``Block/decoded`` is empty). Clear-signed
        /// text shows what it signs, beside a signature: not such a block.
        static func holdsUnsearchableBlock(_ text: String) -> Bool {
            Cleaning.containsAny(text, ["-----BEGIN PGP "]) && Cleaning.cutBlocks(text).blocks.contains {
                $0.decoded?.isEmpty == true && !Cleaning.armorLine($0.text.prefix { $0 != "\n" }).hasPrefix("-----BEGIN PGP SIGNED MESSAGE-----")
            }
        }

        /// A part whose text holds a block no search sees into: the mail counts as marked
        /// (``unsearchable``) and the part is opaque; passed unread, it refuses the mail.
        func unsearchablePart(_ entity: MIMEEntity, type: ContentType, place: String, filename: String?) throws -> MIMEEntity {
            unsearchable = true
            if opaque == .pass { throw RebuildError(code: .markerInPassedPart, place: place, parts: parts) }
            return try opaquePart(entity, type: type, place: place, filename: filename)
        }

        // MARK: Opaque parts

        func opaquePart(_ entity: MIMEEntity, type: ContentType, place: String, filename: String? = nil) throws -> MIMEEntity {
            let name = try filename ?? (entity.kind == .leaf ? self.filename(of: entity, place: place) : nil)
            let referredInSpan = entity.headers.contains {
                $0.name.lowercased() == "content-id" && HTMLRebuild.contentID($0.value, url: false).map(referredInSpans.contains) == true
            }
            if opaque == .pass && !referredInSpan {
                // Not read, but searched: a marker in the bytes refuses the mail.
                var search = Redactor.MarkerSearch(redactor, encodings: true)
                var signs = Inflation.Signs()
                var readable = true
                if entity.kind == .leaf {
                    readable = entity.forEachContentPiece { search.feed($0); signs.feed($0) }
                } else {
                    entity.serialize().withUnsafeBytes { search.feed($0) }
                }
                if !readable || search.finish() { throw RebuildError(code: .markerInPassedPart, place: place, parts: parts) }
                // A zip, gzip or PDF file is searched as the program that opens it shows it, inflated
                // (only such a file is held whole here: the signs were read in pieces).
                if entity.kind == .leaf, signs.mayHold, let content = entity.content {
                    var inflated = Redactor.MarkerSearch(redactor, encodings: true)
                    if Inflation.inflate(content, allowance: &inflationAllowance, { inflated.feed($0) }) == .unreadable || inflated.finish() {
                        throw RebuildError(code: .markerInPassedPart, place: place, parts: parts)
                    }
                }
                parts.passed.append(Self.described(place, name))
                guard entity.kind == .leaf else { return try entity.copy() }
                let passed = try MIMEEntity.part(entity.content ?? [], type: type.type, subtype: type.subtype, filename: name)
                try partFields(of: entity, onto: passed, place: place, filename: name)
                return passed
            }
            // Counted in pieces: a withheld 100 MB file is never held whole for its size.
            var size: Int?
            if entity.kind == .leaf {
                var count = 0
                if entity.forEachContentPiece({ count += $0.count }) { size = count }
            }
            return note(type: type.description, place: place, name: name, size: size)
        }

        /// Bytes cut out of a text (an inline block), as an opaque part.
        func opaqueBytes(_ bytes: [UInt8], decoded: [[UInt8]]?, place: String, filename: String?) throws -> MIMEEntity {
            if opaque == .pass {
                if decoded?.isEmpty == true { throw RebuildError(code: .markerInPassedPart, place: place, parts: parts) }
                for content in [bytes] + (decoded ?? []) {
                    var search = Redactor.MarkerSearch(redactor, encodings: true)
                    content.withUnsafeBytes { search.feed($0) }
                    if search.finish() { throw RebuildError(code: .markerInPassedPart, place: place, parts: parts) }
                }
                parts.passed.append(Self.described(place, filename))
                return try MIMEEntity.part(bytes, type: "application", subtype: "octet-stream", filename: filename)
            }
            return note(type: "application/octet-stream", place: place, name: filename, size: bytes.count)
        }

        /// The note that stands for a withheld part (or, with `refuse`, for a
        /// refused one, which then refuses the mail).
        func note(type: String, place: String, name: String?, size: Int?) -> MIMEEntity {
            let described = Self.described(place, name)
            if opaque == .refuse { parts.refused.append(described) } else { parts.withheld.append(described) }
            let what = name.map { "The attached file \"\($0)\"" } ?? "A part of this mail"
            let bytes = size.map { ", \($0) bytes" } ?? ""
            let note = MIMEEntity.quotedPrintableText("""
                \(what) (\(type)\(bytes)) was held back: mailsec could not read it \
                completely, so it cannot make sure that nothing the sender marked as private \
                is in it. Ask the sender for it.

                """)
            note.setHeader("Content-Description", "A part held back")
            return note
        }

        static func described(_ place: String, _ name: String?) -> String {
            place + (name.map { " \"\($0)\"" } ?? "")
        }
    }
}

/// Cleaning text of what terminals and readers interpret, and cutting out
/// the inline blocks that are not text. Each is one pass over the text.
enum Cleaning {
    /// `text` without NUL and the other C0 and C1 controls (newline and tab
    /// stay, unless `singleLine`, when they become spaces), with CR LF and a
    /// lone CR as newlines, backspace overstrike resolved as a terminal shows
    /// it (the scalar before a backspace is overwritten), and ECMA-48 escape
    /// and control sequences (ESC …, CSI …, OSC/DCS/SOS/PM/APC strings) taken out.
    static func cleaned(_ text: String, singleLine: Bool) -> String {
        // Most text holds nothing to take out: one pass over its UTF-8 finds that
        // (a C1 control is 0xC2 0x80...0x9F), where the scalar walk below would copy
        // it twice (a fifth of redact's time on plain text).
        needsCleaning(text, singleLine: singleLine) ? walked(text, singleLine: singleLine) : text
    }

    /// ``cleaned(_:singleLine:)`` scalar by scalar.
    static func walked(_ text: String, singleLine: Bool) -> String {
        let scalars = Array(text.unicodeScalars)
        var kept: [Unicode.Scalar] = []
        kept.reserveCapacity(scalars.count)
        let count = scalars.count
        var index = 0
        /// Past a string ended by BEL, ST (ESC \) or 0x9C.
        func skipString(_ from: Int) -> Int {
            var i = from
            while i < count {
                let value = scalars[i].value
                if value == 0x07 || value == 0x9C { return i + 1 }
                if value == 0x1B && i + 1 < count && scalars[i + 1] == "\\" { return i + 2 }
                i += 1
            }
            return count
        }
        /// Past a control sequence's parameters, intermediates and final byte.
        func skipCSI(_ from: Int) -> Int {
            var i = from
            while i < count, (0x20...0x3F).contains(scalars[i].value) { i += 1 }
            return i < count && (0x40...0x7E).contains(scalars[i].value) ? i + 1 : i
        }
        while index < count {
            let scalar = scalars[index]
            let value = scalar.value
            switch value {
            case 0x0D:
                if index + 1 < count && scalars[index + 1] == "\n" { index += 1; continue }
                kept.append(singleLine ? " " : "\n")
            case 0x0A: kept.append(singleLine ? " " : "\n")
            case 0x09: kept.append(singleLine ? " " : "\t")
            case 0x08:
                if let last = kept.last, last != "\n" { kept.removeLast() }
            case 0x1B:
                guard index + 1 < count else { index += 1; continue }
                let next = scalars[index + 1].value
                switch next {
                case 0x5B: index = skipCSI(index + 2)  // ESC [
                case 0x5D, 0x50, 0x58, 0x5E, 0x5F: index = skipString(index + 2)  // ESC ] P X ^ _
                case 0x20...0x2F:
                    var i = index + 2
                    while i < count, (0x20...0x2F).contains(scalars[i].value) { i += 1 }
                    index = i < count && (0x30...0x7E).contains(scalars[i].value) ? i + 1 : i
                case 0x30...0x7E: index += 2
                default: index += 1
                }
                continue
            case 0x9B: index = skipCSI(index + 1); continue
            case 0x90, 0x98, 0x9D, 0x9E, 0x9F: index = skipString(index + 1); continue
            case 0..<0x20, 0x7F, 0x80..<0xA0: break
            default: kept.append(scalar)
            }
            index += 1
        }
        return String(scalars: kept)
    }

    /// Whether ``cleaned(_:singleLine:)`` would change `text`: it holds a C0
    /// control (but newline and, unless `singleLine`, tab), DEL or a C1 control.
    static func needsCleaning(_ text: String, singleLine: Bool) -> Bool {
        func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var previous: UInt8 = 0
            var index = 0
            let count = bytes.count
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while index < count {
                // Eight bytes at a time while none is below 0x20, DEL or above ASCII (the
                // byte loop was 4% of redacting a text, issue 24 row 5): such a word holds
                // nothing to clean, and its last byte cannot start a C1 control.
                if index + 8 <= count, let base = bytes.baseAddress {
                    let word = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    let control = (word &- ones &* 0x20) & ~word & highs
                    let del = word ^ (ones &* 0x7F)
                    if control | ((del &- ones) & ~del & highs) | (word & highs) == 0 {
                        previous = UInt8(truncatingIfNeeded: word >> 56)
                        index += 8
                        continue
                    }
                }
                let byte = bytes[index]
                index += 1
                if byte < 0x20 {
                    if singleLine || (byte != 0x0A && byte != 0x09) { return true }
                } else if byte == 0x7F || (previous == 0xC2 && byte >= 0x80 && byte < 0xA0) {
                    return true
                }
                previous = byte
            }
            return false
        }
        return text.utf8.withContiguousStorageIfAvailable(scan) ?? Array(text.utf8).withUnsafeBufferPointer(scan)
    }

    /// Whether `text` holds any of `needles` (ASCII), searched in its UTF-8:
    /// Foundation's `contains` goes through UTF-16 (a third of redact's time
    /// on 5 MB of plain text, for four words it did not find).
    static func containsAny(_ text: String, _ needles: [StaticString]) -> Bool {
        func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            needles.contains { needle in
                needle.withUTF8Buffer { word in
                    guard let first = word.first, word.count <= bytes.count else { return false }
                    // Each place of the first byte found by memchr (a byte loop here was 3% of
                    // redacting a text, issue 24 row 5), the rest compared by memcmp.
                    guard let base = bytes.baseAddress, let wordBase = word.baseAddress else { return false }
                    var index = 0
                    let last = bytes.count - word.count
                    while index <= last, let hit = memchr(base + index, Int32(first), last + 1 - index) {
                        let at = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                        if memcmp(base + at, wordBase, word.count) == 0 { return true }
                        index = at + 1
                    }
                    return false
                }
            }
        }
        return text.utf8.withContiguousStorageIfAvailable(scan) ?? Array(text.utf8).withUnsafeBufferPointer(scan)
    }

    /// `text` with its inline uuencode (`begin 644 name` … `end`), yEnc
    /// (`=ybegin` … `=yend`) and BinHex (`(This file must be converted with
    /// BinHex` … the closing `:`) blocks cut out, and the blocks. A block
    /// without its end runs to the end of the text.
    static func cutBlocks(_ text: String) -> (text: String, blocks: [PostcardRebuild.Block]) {
        // "=ybegin" holds "begin".
        guard containsAny(text, ["begin", "BinHex", "-----BEGIN PGP "]) else { return (text, []) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var kept: [Substring] = []
        var blocks: [PostcardRebuild.Block] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            guard let start = blockStart(line) else {
                kept.append(line)
                index += 1
                continue
            }
            let (kind, name) = start
            var end = index + 1
            switch kind {
            case "BinHex":
                // The data starts with a line that starts with ':' and ends at the next ':' that ends a line.
                var started = false
                while end < lines.count {
                    let trimmed = lines[end].trimmingCharacters(in: .whitespaces)
                    if !started && trimmed.hasPrefix(":") { started = true; if trimmed.count > 1 && trimmed.hasSuffix(":") { break } }
                    else if started && trimmed.hasSuffix(":") { break }
                    end += 1
                }
            case "yEnc":
                while end < lines.count && !lines[end].hasPrefix("=yend") { end += 1 }
            case "OpenPGP":
                // A cleartext-signed message's first END is its signature's.
                while end < lines.count && !armorLine(lines[end]).hasPrefix("-----END PGP ") { end += 1 }
            default:
                while end < lines.count && lines[end].trimmingCharacters(in: .whitespaces) != "end"
                        && lines[end].trimmingCharacters(in: .whitespaces) != "====" { end += 1 }
            }
            end = min(end, lines.count - 1)
            let block = lines[index...end].joined(separator: "\n") + "\n"
            if kind == "OpenPGP" && EncryptedAlready.isOpenPGPEncrypted(Array(block.utf8)) {
                // Ciphertext is no reading of anything: it stays in the text.
                kept += lines[index...end]
            } else {
                blocks.append(.init(kind: kind, name: name, text: block))
            }
            index = end + 1
        }
        return (kept.joined(separator: "\n"), blocks)
    }

    /// The bytes of the yEnc blocks in `bytes` decoded (each byte less 42,
    /// `=` escaping the next, less 64 more; lines of `=y` keywords skipped).
    static func yDecoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for line in bytes.split(omittingEmptySubsequences: true, whereSeparator: { $0 == 10 || $0 == 13 }) {
            if line.starts(with: Array("=y".utf8)) { continue }
            var escaped = false
            for byte in line {
                if escaped { out.append(byte &- 106); escaped = false } else if byte == UInt8(ascii: "=") { escaped = true } else { out.append(byte &- 42) }
            }
        }
        return out
    }

    /// The bytes of a BinHex 4.0 block: the characters between its first
    /// `:` and the next, six bits each, then run-length expanded (0x90 n
    /// repeats the byte before n times in all; 0x90 0 is 0x90 itself).
    static func binHexDecoded(_ bytes: [UInt8]) -> [UInt8] {
        let alphabet = Array("!\"#$%&'()*+,-012345689@ABCDEFGHIJKLMNPQRSTUVXYZ[`abcdefhijklmpqr".utf8)
        var value = [Int8](repeating: -1, count: 256)
        for (index, byte) in alphabet.enumerated() { value[Int(byte)] = Int8(index) }
        guard let start = bytes.firstIndex(of: UInt8(ascii: ":")) else { return [] }
        var raw: [UInt8] = []
        var bits = 0, count = 0
        for byte in bytes[(start + 1)...] {
            if byte == UInt8(ascii: ":") { break }
            guard value[Int(byte)] >= 0 else { continue }
            bits = (bits << 6 | Int(value[Int(byte)])) & 0xFFFF
            count += 6
            if count >= 8 {
                count -= 8
                raw.append(UInt8((bits >> count) & 0xFF))
            }
        }
        var out: [UInt8] = []
        var index = 0
        while index < raw.count {
            if raw[index] == 0x90 && index + 1 < raw.count {
                let repeats = Int(raw[index + 1])
                if repeats == 0 { out.append(0x90) } else if let last = out.last { out += repeatElement(last, count: repeats - 1) }
                index += 2
            } else {
                out.append(raw[index])
                index += 1
            }
        }
        return out
    }

    /// The kind and file name of a block that starts at `line`.
    static func blockStart(_ line: Substring) -> (String, String?)? {
        if line.hasPrefix("begin ") || line.hasPrefix("begin-base64 ") {
            let words = line.split(separator: " ", maxSplits: 2)
            guard words.count >= 2, (3...4).contains(words[1].count), words[1].allSatisfy({ ("0"..."7").contains($0) }) else { return nil }
            return ("uuencode", words.count == 3 ? String(words[2]) : nil)
        }
        if line.hasPrefix("=ybegin ") {
            let name = line.range(of: " name=").map { String(line[$0.upperBound...]) }
            return ("yEnc", name)
        }
        if line.hasPrefix("(This file must be converted with BinHex") { return ("BinHex", nil) }
        // Armored OpenPGP (a message, signed, compressed or literal, a cleartext
        // signature, a key): readers unpack it, so it is no text, even quoted.
        if armorLine(line).hasPrefix("-----BEGIN PGP ") { return ("OpenPGP", nil) }
        return nil
    }

    /// `line` without the blanks and quote marks (`> `) before it.
    static func armorLine(_ line: Substring) -> Substring {
        line.drop { $0 == " " || $0 == "\t" || $0 == ">" }
    }
}
