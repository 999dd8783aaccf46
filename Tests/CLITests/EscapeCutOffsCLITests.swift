import Foundation
import TestSupport
import Testing

/// Issue 21, the attachment byte search's cut-offs: an escaped marker padded
/// with invisibles between its first two scalars or inside it, a reversed
/// marker far from its override on one line, an escaped marker across the
/// search's 1 MiB window (``CutOffMarkerMails``). For each generated mail the
/// test first checks that the reader it names (Python's `json.loads`, a Python
/// string literal through `ast.literal_eval`, or the Unicode bidirectional
/// algorithm's visual order) shows the marked span; then `redact` (opaque
/// parts withheld, and passed) and `encrypt --out` must refuse it (65, one
/// line) or write a postcard in which Python's `email` (``HiddenMarkerMails/pythonReader``)
/// does not see the secret. The old search let each through unchanged.
@Suite("Escaped markers past the byte search's fixed lengths", .serialized)
struct EscapeCutOffsCLITests {
    @Test("each cut-off shape, generated at random: refused, or no span in the postcard", arguments: CutOffMarkerMails.Shape.allCases)
    func shape(_ shape: CutOffMarkerMails.Shape) throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_26_03
        var random = SeededRandom(seed: seed &+ UInt64(CutOffMarkerMails.Shape.allCases.firstIndex(of: shape)!))
        try withGnuPGHome(importing: ["alice.sec.asc", "bob.pub.asc"]) { home throws in
            for index in 0..<(shape == .acrossWindows ? 4 : 6) {
                let generated = CutOffMarkerMails.mail(shape, &random)
                let what = "mail \(index): \(generated.variant)"
                // Only a marker some reader shows counts.
                let shown = try run("python3", ["-c", CutOffMarkerMails.pythonShows, generated.reader], input: generated.content)
                try #require(shown.status == 0, "python3: \(shown.errors)")
                let visual = generated.reader == "bidi" ? Self.visualOrder(shown.output) : shown.output
                let span = try #require(visual.range(of: "[[private]]"), "the reader does not show the marker: \(what)")
                try #require(visual[span.upperBound...].range(of: generated.secret + "[[/private]]") != nil, "the reader does not show the span: \(what)")

                func check(_ command: String, _ result: ProcessResult, postcard: () throws -> [UInt8]) throws {
                    #expect([0, 65].contains(result.status), "\(command): \(result.status) \(result.errors)\n\(what)")
                    if result.status == 65 { expectOneLine(result); return }
                    guard result.status == 0 else { return }
                    let reading = try run("python3", ["-c", HiddenMarkerMails.pythonReader], input: try postcard())
                    try #require(reading.status == 0, "python3: \(reading.errors)")
                    #expect(!reading.output.lowercased().contains(generated.shown), "\(command): the span shows\n\(what)")
                }
                for options in [[], ["--opaque-parts", "pass"]] {
                    let redacted = try mailsec(["redact"] + options + ["-"], input: generated.mail, home: home)
                    try check("redact \(options)", redacted) { redacted.stdout }
                }
                let out = home.path + "/out-\(index)"
                let encrypted = try mailsec(["encrypt", "--out", out, "-"], input: generated.mail, home: home)
                try check("encrypt", encrypted) {
                    let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json")))
                        as? [String: Any])
                    let copies = try #require(manifest["copies"] as? [[String: Any]])
                    let file = try #require(copies.first { $0["kind"] as? String == "postcard" }?["file"] as? String)
                    return Array(try Data(contentsOf: URL(fileURLWithPath: out + "/" + file)))
                }
            }
        }
    }

    /// A line's visual order under one right-to-left override up to its PDF
    /// (rule L2 for a single level: the run reversed, brackets mirrored, rule L4).
    static func visualOrder(_ text: String) -> String {
        var out = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let scalars = Array(line.unicodeScalars)
            guard let start = scalars.firstIndex(where: { [0x202E, 0x202B, 0x2067].contains($0.value) }) else { out += line + "\n"; continue }
            let end = scalars[start...].firstIndex(where: { [0x202C, 0x2069].contains($0.value) }) ?? scalars.count
            let run = scalars[(start + 1)..<end].reversed().map { $0 == "[" ? "]" : $0 == "]" ? "[" : $0 }
            let unmirrored = scalars[(start + 1)..<end].reversed()
            out += String(String.UnicodeScalarView(scalars[..<start] + run + scalars[end...])) + "\n"
            out += String(String.UnicodeScalarView(scalars[..<start] + unmirrored + scalars[end...])) + "\n"
        }
        return out
    }
}
