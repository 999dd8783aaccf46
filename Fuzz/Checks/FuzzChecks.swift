import Filter
import Foundation
import Incoming
import MIME
import PartialEncryption
import Policy
import Redaction
import Sending
import Settings

/// What each fuzz target does with one input, as library functions: the
/// libFuzzer executables in `Fuzz/` call them, and the regression tests run
/// them over every input kept in `Fixtures/fuzz/`. A check never throws for
/// bad input (that is expected); it traps (`precondition`) when an invariant
/// breaks, which is what the fuzzer reports as a crash.
public enum FuzzChecks {
    /// Small limits, so that the fuzzer spends its time on structure, not size.
    static let options = ParseOptions(maxSize: 1 << 20, maxDepth: 16, maxParts: 500, maxHeaders: 200)

    /// Parse and walk: every part visited, every header read, every leaf
    /// decoded (content and text), the message written out again and parsed back.
    public static func parseAndWalk(_ bytes: [UInt8]) {
        guard let message = try? MIMEMessage.parse(bytes, options: options) else { return }
        _ = message.headers.map { ($0.name, $0.value, $0.rawValue) }
        _ = message.subject
        for field in AddressField.allCases { _ = message.addresses(field) }
        for (_, part) in message.body?.walk() ?? [] {
            _ = part.contentType.parameters
            _ = part.headers.count
            _ = part.filename
            _ = part.disposition
            if part.children.isEmpty {
                _ = part.content
                _ = part.text
            }
            if let embedded = part.embeddedMessage { _ = embedded.headers.count }
        }
        let written = message.serialize()
        // What we write must parse again (it may hit the same limits, but must not fail otherwise).
        if written.count <= options.maxSize {
            do { _ = try MIMEMessage.parse(written, options: options) } catch let error as MIMEError {
                switch error.code {
                case .tooDeep, .tooManyParts, .tooManyHeaders, .tooLarge: break
                default: preconditionFailure("a message we wrote does not parse again: \(error)")
                }
            } catch { preconditionFailure("unexpected error \(error)") }
        }
    }

    /// Marker parsing and redaction on text and HTML: whatever the input, a
    /// censored text has no marker left, censoring twice changes nothing, and
    /// numbering yields one catalog entry per distinct span.
    public static func redaction(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        let redactor = Redactor.standard
        _ = redactor.hasMarkers(text)
        if let censored = try? redactor.redact(text, mode: .censor) {
            precondition(!redactor.hasMarkers(censored), "a censored text still has a marker")
            precondition((try? redactor.redact(censored, mode: .censor)) == censored, "censoring is not idempotent")
            let catalog = SpanCatalog()
            if let numbered = try? redactor.redact(text, mode: .number(catalog)) {
                precondition(!redactor.hasMarkers(numbered), "a numbered text still has a marker")
                let segments = try? redactor.segments(text, catalog: catalog)
                precondition(segments != nil, "segments fail where redaction succeeded")
            }
            _ = try? redactor.redact(text, mode: .reveal)
        }
        if let html = try? redactor.redactHTML(text, mode: .censor) {
            precondition(!redactor.hasMarkersHTML(html) || redactor.hasMarkersHTML(text), "HTML censoring made a marker")
            let catalog = SpanCatalog()
            _ = try? redactor.redactHTML(text, mode: .number(catalog))
            _ = try? redactor.segments(html: text, catalog: catalog)
        }
        censoredMail(bytes)
    }

    /// The input as a mail, censored as `mailsec redact` does: when the mail
    /// has spans, every place can be read, and censoring succeeds and passes
    /// the check of the censored message, then the postcard as written and
    /// parsed again shows no marker in any reading (``Redactor/readings(of:)``),
    /// and no span's text (eight scalars or more, and found nowhere outside
    /// spans in the input) stands in any reading of it.
    static func censoredMail(_ bytes: [UInt8]) {
        let redactor = Redactor.standard
        guard let message = try? MIMEMessage.parse(bytes, options: options) else { return }
        let found = redactor.readings(of: message)
        guard (try? redactor.hasMarkedSpans(message)) == true || found.marker != nil, found.uncertain.isEmpty,
              let postcard = try? message.copy(), (try? redactor.apply(.censor, to: postcard)) != nil,
              redactor.remainingMarker(in: postcard) == nil else { return }
        let written = postcard.serialize()
        guard let reread = try? MIMEMessage.parse(written, options: ParseOptions(maxSize: .max, maxDepth: .max, maxParts: .max, maxHeaders: .max))
        else { preconditionFailure("a postcard we wrote does not parse again") }
        precondition(redactor.readings(of: reread).marker == nil, "a marker in a reading of a censored postcard")
        // Span texts of the input, from every text reading, and what stands outside spans.
        var spans: Set<String> = []
        var outside: [String] = []
        func texts(_ message: MIMEMessage, _ body: (String) -> Void) {
            MessageReadings.readAll(message) { _, content in
                switch content {
                case .text(let text, let media):
                    for rendering in redactor.renderings(text, type: media.type, subtype: media.subtype, parameters: media.parameters) {
                        body(rendering)
                    }
                case .pieces(_, let feed):
                    var bytes: [UInt8] = []
                    _ = feed { bytes += $0 }
                    body(String(decoding: bytes, as: UTF8.self))
                }
            }
        }
        texts(message) { text in
            let catalog = SpanCatalog()
            guard let numbered = try? redactor.redact(text, mode: .number(catalog)) else { outside.append(text); return }
            outside.append(numbered)
            spans.formUnion(catalog.spans.filter { $0.unicodeScalars.count >= 8 })
        }
        let leaking = spans.filter { span in !outside.contains { $0.contains(span) } }
        guard !leaking.isEmpty else { return }
        texts(reread) { text in
            precondition(!leaking.contains { text.contains($0) }, "span text in a reading of a censored postcard")
        }
    }

    /// Signature and encryption structure: classification of every part and
    /// the raw extraction of a signed part never trap, and a whole protection
    /// is always the body itself.
    public static func structure(_ bytes: [UInt8]) {
        guard let message = try? MIMEMessage.parse(bytes, options: options) else { return }
        let structure = MailStructure(message)
        for protection in structure.signed + structure.encrypted {
            if protection.place == .whole { precondition(protection.path.isEmpty, "a whole protection below the body") }
            _ = protection.partName
        }
        for protection in structure.signed where protection.kind == .pgpMIME {
            if let boundary = message.body?.entity(at: protection.path)?.contentType.parameters["boundary"] {
                _ = MailStructure.signedContent(in: bytes, boundary: boundary)
            }
        }
    }

    /// filter.toml: any text is read or refused with an error, never a
    /// trap; what is read has every number in its range, and the numbers
    /// turned into the waits the filter makes of them (they trapped before).
    public static func filterConfig(_ bytes: [UInt8]) {
        guard let config = try? FilterConfig.parse(String(decoding: bytes, as: UTF8.self)) else { return }
        precondition((1...86_400).contains(config.timeout), "filter timeout out of range")
        precondition((1...86_400).contains(config.reinjectionTimeout), "reinject.timeout out of range")
        precondition((1...86_400).contains(config.reinjectionFinalTimeout ?? 1), "reinject.final_timeout out of range")
        precondition((86_400...3650 * 86_400).contains(config.journalExpiry), "journal.expire_days out of range")
        precondition((1...86_400).contains(config.listen.idleTimeout) && (1...86_400).contains(config.listen.drainTimeout),
                     "listen time-out out of range")
        _ = Duration.milliseconds(Int64(config.timeout * 1000)) + .seconds(config.listen.idleTimeout)
        _ = DispatchTime.now() + config.timeout + config.reinjectionTimeout * 1.5
        _ = config.reading?.lifetime.map { Int64(Date().timeIntervalSince1970) + Int64($0) }
    }

    /// config.toml: read or refused with problems, never a trap; what is
    /// read has its numbers in range.
    public static func userConfig(_ bytes: [UInt8]) {
        let (config, problems) = UserConfig.parse(String(decoding: bytes, as: UTF8.self))
        for problem in problems { _ = problem.description }
        guard let config else { return }
        precondition((0...3650).contains(config.keepSentDays), "keep_sent_days out of range")
        precondition((1...65_535).contains(config.submission.port), "submission.port out of range")
        precondition((1...3600).contains(config.submission.timeout ?? 1), "submission.timeout out of range")
        _ = Duration.seconds(config.submission.timeout ?? 1) * 2
        _ = TimeInterval(config.keepSentDays) * 86_400
    }

    /// A reading document as a server sends it: decoded or refused; one
    /// that validates can be filled with spans and written again, whatever
    /// numbers it holds.
    public static func readingDocument(_ bytes: [UInt8]) {
        guard let document = try? ReadingDocument.decode(bytes) else { return }
        let spans = ["a", "b", "c"]
        _ = ReadingDocument.fill(document.from + document.subject + document.body, spans)
        guard (try? document.validate()) != nil else { return }
        let again = try? ReadingDocument.decode(document.json())
        precondition(again == document, "a valid document does not read back the same")
    }
}
