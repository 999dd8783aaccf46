import Foundation
import Policy
import Redaction
import Testing
import TestSupport

/// A sample of the hostile documents read by real headless Chromium
/// (`document.body.innerText`, scripts off): the original shows each secret
/// inside a span (so the case means something), the rebuilt one shows none.
@Suite("HTML rebuild read by headless Chromium", .serialized)
struct ChromiumTests {
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
            && (try? run("python3", ["-c", "import selenium"]))?.status == 0
    }

    @Test(.enabled(if: available, "needs chromium, chromedriver and selenium (scripts/bootstrap --browser)"))
    func chromiumShowsNoSecret() throws {
        let folder = try makePrivateDirectory(prefix: "ms-chromium")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var mails: [HostileHTML] = []
        var paths: [String] = []
        for seed in 0..<UInt64(40) {
            var rng = SplitMix64(seed: 9_000 + seed)
            let mail = HostileHTML(tricks: Set(HostileHTML.Trick.allCases), using: &rng)
            let rebuilt = try HTMLRebuild.rebuild(mail.html, redactor: .standard, mode: .censor, part: "part 1")
            let original = folder + "/\(seed)-original.html", written = folder + "/\(seed)-rebuilt.html"
            FileManager.default.createFile(atPath: original, contents: Data(mail.html.utf8), attributes: [.posixPermissions: 0o600])
            FileManager.default.createFile(atPath: written, contents: Data(rebuilt.html.utf8), attributes: [.posixPermissions: 0o600])
            mails.append(mail)
            paths += [original, written]
        }
        let script = Paths.root.appendingPathComponent("Tests/HTMLRebuildTests/chromium_text.py").path
        let result = try run("python3", [script] + paths)
        try #require(result.status == 0, "\(result.errors)")
        let texts = result.output.split(separator: "\n").map { line in
            (try? JSONDecoder().decode(String?.self, from: Data(line.utf8))) ?? nil
        }
        try #require(texts.count == paths.count)
        for (index, mail) in mails.enumerated() {
            let original = texts[2 * index] ?? "", rebuilt = texts[2 * index + 1] ?? ""
            // As Chromium shows the original, the secrets stand inside spans.
            let censoredOriginal = try Redactor.standard.redact(original, mode: .censor)
            for secret in mail.secrets {
                #expect(!censoredOriginal.contains(secret), "seed \(index): Chromium shows \(secret) outside a span")
                #expect(!rebuilt.contains(secret), "seed \(index): the rebuilt document shows \(secret)")
            }
            #expect(rebuilt.contains(Redactor.standard.placeholder))
        }
    }
}
