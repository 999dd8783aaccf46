import Foundation
import MIME
import Pipeline
import Policy
import TestSupport
import Testing

/// A part a page shows only inside a span (`<img src="cid:a">` between the markers) is
/// what the sender marked: with opaque parts passed (`--opaque-parts pass`, which sends
/// unread what mailsec does not read) it went out as an inline attachment, which mail
/// clients show (the fifth red team's related-cid-image-in-span-pass.eml: an SVG holding
/// the secret's text). It is withheld in every mode; a part the page shows outside the
/// spans is passed as before.
@Suite("Parts referred to from inside a span are withheld, also with opaque parts passed")
struct ReferredInSpanTests {
    @Test("random mails: multipart/related or mixed, the page first, last or inside an alternative, 1 to 4 images by cid (any case, angle brackets, percent-encoded) inside or outside spans: those inside are withheld both ways, the others passed as they came")
    func referredInSpans() throws {
        var random = SeededRandom(seed: UInt64(ProcessInfo.processInfo.environment["MAILSEC_TEST_SEED"] ?? "") ?? 2026_11_27_33)
        for round in 0..<40 {
            let count = Int.random(in: 1...4, using: &random)
            var images: [(id: String, token: String, inside: Bool)] = []
            for index in 0..<count {
                let id = "img\(index).\(UInt32.random(in: 0...UInt32.max, using: &random))@example.org"
                images.append((id, "zqtoken\(round)x\(index)", Bool.random(using: &random)))
            }
            var page = "<p>hello</p>"
            for image in images {
                var url = image.id
                if Bool.random(using: &random) { url = url.replacingOccurrences(of: "@", with: "%40") }
                let scheme = ["cid:", "CID:", "Cid:"].randomElement(using: &random)!
                let tag = "<img src=\"\(scheme)\(url)\" alt=\"picture\">"
                page += image.inside ? "<p>[[private]]secret words \(tag) more[[/private]]</p>" : "<p>see \(tag) here</p>"
            }
            if !images.contains(where: \.inside) { page += "<p>[[private]]x[[/private]]</p>" }
            let html = "Content-Type: text/html; charset=utf-8\n\n<html><body>\(page)</body></html>\n"
            let htmlPart = Bool.random(using: &random)
                ? "Content-Type: multipart/alternative; boundary=alt\n\n--alt\nContent-Type: text/plain\n\nhello [[private]]x[[/private]]\n--alt\n\(html)--alt--\n"
                : html
            var parts = images.map { image in
                "Content-Type: image/svg+xml\nContent-Disposition: inline\n"
                    + "Content-ID: \(Bool.random(using: &random) ? "<\(image.id)>" : "<\(image.id.uppercased())>")\n\n"
                    + "<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"5\" y=\"30\">\(image.token)</text></svg>\n"
            }
            parts.insert(htmlPart, at: Bool.random(using: &random) ? 0 : parts.count)
            let kind = ["related", "mixed"].randomElement(using: &random)!
            let mail = "From: a@example.org\nTo: b@example.org\nSubject: s\nMIME-Version: 1.0\nContent-Type: multipart/\(kind); boundary=b\n\n"
                + parts.map { "--b\n" + $0 }.joined() + "--b--\n"
            for opaque in [OpaqueParts.pass, .withhold] {
                let out = String(decoding: try Postcard.censored(try MIMEMessage.parse(Array(mail.utf8)), opaque: opaque).serialize(), as: UTF8.self)
                for image in images {
                    if image.inside {
                        #expect(!out.contains(image.token), "round \(round) \(opaque): an image shown only inside a span went out")
                    } else if opaque == .pass {
                        #expect(out.contains(image.token), "round \(round): an image shown outside the spans was not passed")
                    }
                }
            }
        }
    }
}
