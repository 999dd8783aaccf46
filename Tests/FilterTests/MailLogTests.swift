import Foundation
@testable import Filter
import Settings
import Testing

@Suite("The line per mail")
struct MailLogTests {
    static func word() -> String { (0..<10).map { _ in "abcdefghijkmnpqrstuvwxyz".randomElement()! }.map(String.init).joined() }

    @Test("without log_addresses no address shows, not even in the error; with it the envelope does; JSON escapes what it holds")
    func addresses() throws {
        let sender = Self.word() + "@" + Self.word() + ".test", recipient = Self.word() + "+x@" + Self.word() + ".test"
        let error = "refused: a letter is required for \(recipient), (\"\(sender)\") and <\(recipient)>; nothing was sent\n\"x\""
        let result = FilterResult(status: MailFilter.refused, errorLine: error,
                                  logLine: "message-id=<abc@mail.test> letters=0 postcards=0 unchanged=0 status=refused")
        for format in [LogFormat.plain, .json] {
            let hidden = result.line(format: format, addresses: false, sender: sender, recipients: [recipient], seconds: 0.25, queueID: 7)
            #expect(!hidden.contains(sender) && !hidden.contains(recipient) && !hidden.contains("@" + recipient.split(separator: "@")[1]),
                    "\(hidden)")
            #expect(hidden.contains("<address>"))
            let shown = result.line(format: format, addresses: true, sender: sender, recipients: [recipient], seconds: 0.25, queueID: 7)
            #expect(shown.contains(sender) && shown.contains(recipient))
        }
        let json = result.line(format: .json, addresses: true, sender: sender, recipients: [recipient], seconds: 0.25, queueID: 7)
        #expect(!json.contains("\n"))
        let record = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(record["status"] as? String == "refused" && record["message_id"] as? String == "abc@mail.test")
        #expect(record["sender"] as? String == sender && record["recipient_addresses"] as? [String] == [recipient])
        #expect(record["error"] as? String == error)
        #expect(result.line(format: .plain, addresses: false, sender: sender, recipients: [recipient], seconds: 1.5, queueID: 7)
            .hasPrefix("message-id=<abc@mail.test> letters=0 postcards=0 unchanged=0 status=refused duration=1.5 queue-id=7 ("))
    }

    @Test("addresses are hidden as the regular expression [^\\s<>(),;:\"']+@[^\\s<>(),;:\"']+ hides them (ICU as the oracle), on random text")
    func addressesHiddenAsTheExpressionDoes() throws {
        let expression = try NSRegularExpression(pattern: #"[^\s<>(),;:"']+@[^\s<>(),;:"']+"#)
        let alphabet: [String] = ["a", "b", "x", ".", "+", "-", "@", "@", " ", "\t", "\n", "\r", "\u{0C}", "\u{0B}", "<", ">", "(", ")",
                                  ",", ";", ":", "\"", "'", "\u{A0}", "\u{2028}", "\u{2029}", "\u{3000}", "\u{85}", "é", "😀"]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let text = (0..<Int.random(in: 0...30, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()
            let range = NSRange(text.startIndex..., in: text)
            let expected = expression.stringByReplacingMatches(in: text, range: range, withTemplate: "<address>")
            #expect(FilterResult.withoutAddresses(text) == expected, "\(text.debugDescription)")
        }
    }
}
