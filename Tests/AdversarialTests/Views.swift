import Foundation
import MIME
import TestSupport

/// A reading in which a secret word or a marker was found.
struct Hit: Sendable, Hashable {
    let view: String
    let found: String
    /// Found only by decoding bytes in a charset their part does not declare
    /// (and no byte order mark names), other than the fallbacks every reader
    /// has (UTF-8, Latin-1): no reader is known to do that, so such a hit is
    /// reported but does not fail the test.
    var sniffed: Bool {
        view.contains("python sniff ") && !view.contains("python sniff utf-8:") && !view.contains("python sniff latin-1:")
    }
}

/// A written copy to read: a postcard (or an unchanged copy) is read whole, a
/// letter only in its outer header section (the rest is ciphertext).
struct CopyToRead: Sendable {
    enum Scope: String, Sendable { case all, headers }
    let label: String
    let path: String
    let scope: Scope
}

/// Searches one reading for the secret words (also with everything but the
/// letters taken out, so that no separator can hide a word) and the markers.
struct ReadingSearch {
    let tokens: [String]
    private(set) var views = 0
    private(set) var hits: [Hit] = []

    init(tokens: [String]) { self.tokens = tokens.map { $0.lowercased() } }

    mutating func search(_ view: String, _ text: String?) {
        guard let text, !text.isEmpty else { return }
        views += 1
        let lower = text.lowercased()
        let letters = String(lower.unicodeScalars.filter { ("a"..."z").contains($0) }.map(Character.init))
        for token in tokens where lower.contains(token) || letters.contains(token) {
            hits.append(Hit(view: view, found: token))
        }
        for marker in ["[[private]]", "[[/private]]"] where lower.contains(marker) {
            hits.append(Hit(view: view, found: "marker"))
        }
    }
}

/// View (a): GMime, through the project's MIME module: every header field
/// (decoded and raw) of every part and embedded message, every Content-Type
/// parameter, the file name, the decoded text and content of every leaf, the
/// preamble and epilogue of every multipart.
enum GMimeView {
    static func read(_ copy: CopyToRead, into search: inout ReadingSearch) {
        guard let bytes = FileManager.default.contents(atPath: copy.path),
              let message = try? MIMEMessage.parse(Array(bytes)) else { return }
        read(message, place: "gmime", headersOnly: copy.scope == .headers, into: &search)
    }

    static func read(_ message: MIMEMessage, place: String, headersOnly: Bool, into search: inout ReadingSearch) {
        for header in message.headers {
            search.search("\(place) \(header.name)", header.value)
            search.search("\(place) \(header.name) raw", header.rawValue)
        }
        search.search("\(place) subject", message.subject)
        guard !headersOnly, let body = message.body else { return }
        for (path, part) in body.walk() {
            let name = "\(place) part \(path.map(String.init).joined(separator: "."))"
            for header in part.headers {
                search.search("\(name) \(header.name)", header.value)
                search.search("\(name) \(header.name) raw", header.rawValue)
            }
            for (key, value) in part.contentType.parameters { search.search("\(name) param \(key)", value) }
            search.search("\(name) filename", part.filename)
            search.search("\(name) text", part.text)
            if part.children.isEmpty, let content = part.content {
                search.search("\(name) content (utf-8)", String(decoding: content, as: UTF8.self))
            }
            search.search("\(name) preamble", part.prologue)
            search.search("\(name) epilogue", part.epilogue)
            if let embedded = part.embeddedMessage {
                for header in embedded.headers {
                    search.search("\(name) message \(header.name)", header.value)
                    search.search("\(name) message \(header.name) raw", header.rawValue)
                }
            }
        }
    }
}

/// Views (b) and (c): Python's `email` (policy.default and the compat API),
/// its codecs, and an HTML/CSS/data:-URL/rendering view, in
/// `mail_views.py` beside this file. One Python process reads all copies.
enum PythonViews {
    static let script = Paths.root.appendingPathComponent("Tests/AdversarialTests/mail_views.py").path

    struct Result: Sendable {
        let views: Int
        let hits: [Hit]
        let error: String?
    }

    static func read(_ jobs: [(copy: CopyToRead, tokens: [String])], folder: String) throws -> [String: Result] {
        guard !jobs.isEmpty else { return [:] }
        let job = jobs.map { ["file": $0.copy.path, "tokens": $0.tokens, "scope": $0.copy.scope.rawValue] as [String: Any] }
        let jobPath = folder + "/views-job.json"
        try JSONSerialization.data(withJSONObject: job).write(to: URL(fileURLWithPath: jobPath))
        let result = try run("python3", [script, jobPath])
        guard result.status == 0,
              let answers = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [[String: Any]] else {
            throw ViewsFailed(description: "mail_views.py failed (\(result.status)): \(result.errors)")
        }
        var results: [String: Result] = [:]
        for answer in answers {
            guard let file = answer["file"] as? String else { continue }
            let hits = (answer["hits"] as? [[String: String]] ?? []).compactMap { hit in
                hit["view"].flatMap { view in hit["found"].map { Hit(view: view, found: $0) } }
            }
            results[file] = Result(views: answer["views"] as? Int ?? 0, hits: hits, error: answer["error"] as? String)
        }
        return results
    }
}

struct ViewsFailed: Error, CustomStringConvertible {
    let description: String
}
