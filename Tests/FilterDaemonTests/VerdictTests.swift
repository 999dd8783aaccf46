import Filter
@testable import FilterDaemon
import Foundation
import SMTPListener
import TestSupport
import Testing

@Suite("The resident filter's answers")
struct VerdictTests {
    @Test("a filter status becomes the SMTP answer: 0 → 250, 75 → 451 with the line, 65 → 554 5.6.0, 69 → 554 5.7.1")
    func verdicts() {
        func result(_ status: Int32, _ line: String?) -> FilterResult {
            FilterResult.late(seconds: 1).with(status: status, line: line)
        }
        #expect(FilterMailHandler.verdict(result(0, nil)) == .accepted("mailsec: every copy handed on"))
        #expect(FilterMailHandler.verdict(result(75, "deferred: x")) == .temporary("deferred: x"))
        #expect(FilterMailHandler.verdict(result(65, "rejected: y")) == .permanent("5.6.0 rejected: y"))
        #expect(FilterMailHandler.verdict(result(69, "refused: z")) == .permanent("5.7.1 refused: z"))
        // Anything unforeseen is temporary: the MTA keeps the mail.
        #expect(FilterMailHandler.verdict(result(70, "odd")) == .temporary("odd"))
    }

    @Test("CRLF becomes LF as pipe(8) gives it; a lone CR and a CR at the end stay (random bytes)")
    func unixLines() {
        var random = SeededRandom(seed: UInt64.random(in: 0...UInt64.max))
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in [10, 13, 65, 46][Int.random(in: 0..<4, using: &random)] as UInt8 }
            let out = FilterMailHandler.unixLines(bytes)
            // The reference: split on CRLF, join with LF.
            var expected: [UInt8] = [], index = 0
            while index < bytes.count {
                if bytes[index] == 13 && index + 1 < bytes.count && bytes[index + 1] == 10 { expected.append(10); index += 2 }
                else { expected.append(bytes[index]); index += 1 }
            }
            #expect(out == expected, "\(bytes)")
        }
    }
}
