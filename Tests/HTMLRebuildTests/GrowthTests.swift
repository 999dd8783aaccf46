import Foundation
import HTML
import Policy
import Redaction
import Testing
import TestSupport

/// Hostile HTML costs work linear in its size: doubled, the instructions
/// counted by `valgrind --tool=callgrind` (`html-rebuild-probe` on the input,
/// less a run on an empty one) at most 2.2 times as many.
@Suite("HTML rebuild: work linear in the size of hostile input", .serialized)
struct GrowthTests {
    /// The shapes: spans crossing tags, repeated (quadratic in the old
    /// redactor: 0.8 MB 3.1 s, 1.6 MB 12.8 s); spans in attributes; formatting
    /// elements that HTML5 reopens in every block (a tree quadratic in the
    /// input, given up at Gumbo's budget).
    static func shape(_ name: String, units: Int) -> String {
        switch name {
        case "crossing":
            String(repeating: "<p>Hi [[private]]sec<b>ret</b> <i>more</p><div>te&amp;xt[[/pri<span>vate]] after</i> ok</div>\n", count: units)
        case "attributes":
            String(repeating: #"<a href="https://x.example/[[private]]s[[/private]]" title="[[private]]t[[/private]]">l</a>"#, count: units)
        default:
            (0..<units).map { "<b id=\($0)><p>x" }.joined()
        }
    }

    @Test(arguments: ["crossing", "attributes", "reopened"])
    func linearGrowth(_ shape: String) throws {
        let probe = Paths.mailsecExecutable.deletingLastPathComponent().appendingPathComponent("html-rebuild-probe").path
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind"), "valgrind is needed")
        try #require(FileManager.default.isExecutableFile(atPath: probe), "html-rebuild-probe is built with the tests")
        let folder = try makePrivateDirectory(prefix: "ms-growth")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Valgrind 3.19 cannot read the Swift toolchain's debug information: a copy without it.
        let stripped = folder + "/probe"
        try #require(try run("objcopy", ["--strip-debug", probe, stripped]).status == 0)
        func instructions(_ html: String) throws -> Double {
            let out = folder + "/callgrind-\(html.utf8.count)"
            let result = try run("/usr/bin/valgrind", ["--tool=callgrind", "--callgrind-out-file=" + out, stripped], input: Array(html.utf8))
            #expect(result.status == 0, "\(result.errors.suffix(300))")
            // The totals line: "summary: <instructions>".
            let report = try String(contentsOfFile: out, encoding: .utf8)
            let line = report.split(separator: "\n").first { $0.hasPrefix("summary:") } ?? ""
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        let units = shape == "reopened" ? 4_000 : 400
        let empty = try instructions("")
        let single = try instructions(Self.shape(shape, units: units)) - empty
        let double = try instructions(Self.shape(shape, units: 2 * units)) - empty
        #expect(single > 0 && double > 0)
        #expect(double / single <= 2.2, "\(shape): \(single) then \(double) instructions")
    }
}
