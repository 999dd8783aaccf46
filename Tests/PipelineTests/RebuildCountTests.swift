import Foundation
import MIME
import OpenPGP
import Pipeline
@testable import Policy
@testable import Redaction
import Testing

/// A mail is rebuilt once through the pipeline: the rebuild that reads the model to decide
/// whether the mail has marked spans is the one its postcard is written from (issue 24).
@Suite("One rebuild a mail")
struct RebuildCountTests {
    /// Mails with a hidden-marker join (only the model shows the span), a plain marked mail,
    /// and an unmarked mail with HTML and an attachment; postcards only, so no gpg runs.
    static let mails: [(name: String, text: String, spans: Bool)] = [
        ("unmarked", mail(html: "<p>Hello <b>there</b></p>", attachment: true), false),
        ("marked", mail(html: "<p>Hello [[private]]secret[[/private]]</p>", attachment: true), true),
        ("joined in the model", mail(html: "<p>[[pri<span hidden>x</span>vate]]secret[[/pri<span hidden>y</span>vate]]</p>", attachment: false), true),
    ]

    static func mail(html: String, attachment: Bool) -> String {
        let body = """
            --b1\r
            Content-Type: text/plain; charset=utf-8\r
            \r
            Plain words.\r
            --b1\r
            Content-Type: text/html; charset=utf-8\r
            \r
            \(html)\r
            --b1--\r

            """
        let attached = attachment ? """
            --b0\r
            Content-Type: application/pdf; name=a.pdf\r
            Content-Transfer-Encoding: base64\r
            \r
            JVBERi0xLjQK\r

            """ : ""
        return """
            From: alice@example.org\r
            To: nobody@example.org\r
            Subject: counts\r
            MIME-Version: 1.0\r
            Content-Type: multipart/mixed; boundary=b0\r
            \r
            --b0\r
            Content-Type: multipart/alternative; boundary=b1\r
            \r
            \(body)\(attached)--b0--\r

            """
    }

    @Test("a marked and an unmarked mail cost one rebuild each, censored or numbered, any opaque setting",
          arguments: [PostcardExtension.censored, .partiallyEncrypted], [OpaqueParts.withhold, .pass])
    func oneRebuild(extension postcardExtension: PostcardExtension, opaque: OpaqueParts) throws {
        var mailOptions = MailOptions.standard
        mailOptions.postcardExtension = postcardExtension
        mailOptions.opaqueParts = opaque
        let pipeline = MailPipeline(gnupg: GnuPG(home: "/nonexistent-gnupg-home"), options: PipelineOptions(mail: mailOptions))
        for (name, text, spans) in Self.mails {
            let count = RebuildCount()
            let prepared = try PostcardRebuild.$counted.withValue(count) {
                try pipeline.prepare(try MIMEMessage.parse(Array(text.utf8)), keys: KeyBook())
            }
            #expect(prepared.plan.hasMarkedSpans == spans, "\(name)")
            #expect(count.value == 1, "\(name): \(count.value) rebuilds in prepare")
            if !spans || postcardExtension == .censored {
                let written = try PostcardRebuild.$counted.withValue(count) { try pipeline.write(prepared) }
                #expect(written.copies.map(\.kind) == [.postcard], "\(name)")
                #expect(count.value == 1, "\(name): \(count.value) rebuilds in all")
                let bytes = String(decoding: try written.copies[0].bytes, as: UTF8.self)
                #expect(!bytes.contains("secret"), "\(name)")
            }
        }
    }

    @Test("redact: one rebuild for a marked mail, one for an unmarked one")
    func redactOnce() throws {
        for (name, text, spans) in Self.mails {
            let count = RebuildCount()
            let message = try MIMEMessage.parse(Array(text.utf8))
            let postcard = try PostcardRebuild.$counted.withValue(count) { try Postcard.censored(message) }
            #expect(count.value == 1, "\(name): \(count.value) rebuilds")
            #expect(!String(decoding: postcard.serialize(), as: UTF8.self).contains("secret") || !spans, "\(name)")
        }
    }

    /// The decision rebuilds with the configured opaque setting; what that setting alone stops (a part
    /// refused) must not refuse a mail without spans, nor hide the spans of one that has them.
    @Test("opaque = refuse: an unmarked mail with an attachment goes out as it came; a model-only span still refuses")
    func refusedPartsDoNotDecide() throws {
        var mailOptions = MailOptions.standard
        mailOptions.opaqueParts = .refuse
        let pipeline = MailPipeline(gnupg: GnuPG(home: "/nonexistent-gnupg-home"), options: PipelineOptions(mail: mailOptions))
        let unmarked = try pipeline.prepare(try MIMEMessage.parse(Array(Self.mails[0].text.utf8)), keys: KeyBook())
        #expect(!unmarked.plan.hasMarkedSpans)
        #expect(try pipeline.write(unmarked).copies.map(\.kind) == [.postcard])
        let joined = Self.mail(html: "<p>[[pri<span hidden>x</span>vate]]secret[[/private]]</p>", attachment: true)
        let marked = try pipeline.prepare(try MIMEMessage.parse(Array(joined.utf8)), keys: KeyBook())
        #expect(marked.plan.hasMarkedSpans)
        #expect(throws: PipelineError.self) { try pipeline.write(marked) }
    }
}
