import Foundation
@testable import Filter
@testable import Pipeline
import Platform
@testable import Policy
import Testing

@Suite("One error table")
struct ExitStatusAgreementTests {
    /// The codes PipelineError declares, read from its source: a code added
    /// there and not to `PipelineError.Code.all` fails the walk below.
    static func declaredCodes() throws -> Set<String> {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Pipeline/MailPipeline.swift")
        let text = try String(contentsOf: source, encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"public static let (\w+) = Code\(rawValue: "(\w+)"\)"#)
        return Set(pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            Range(match.range(at: 2), in: text).map { String(text[$0]) }
        })
    }

    @Test("every PipelineError code: the filter answers the MTA with the status the command line exits with")
    func everyCode() throws {
        let declared = try Self.declaredCodes()
        #expect(declared.count >= 12, "the codes were found in the source")
        #expect(Set(PipelineError.Code.all.map(\.rawValue)) == declared, "every declared code is walked")
        for code in PipelineError.Code.all {
            let error = PipelineError(code, addresses: ["bob@example.org"], detail: "detail")
            // The command line exits with `error.exitStatus` (mailsec/Failure.swift reads it for every MailsecError).
            let (status, line) = MailFilter.classify(error)
            #expect(status == error.exitStatus.rawValue, "\(code.rawValue): filter \(status), command line \(error.exitStatus.rawValue)")
            #expect(line.contains(error.safeDescription), "\(code.rawValue): \(line)")
            let prefix = switch status { case 75: "deferred: "; case 65: "rejected: "; default: "refused: " }
            #expect(line.hasPrefix(prefix), "\(code.rawValue): \(line)")
        }
    }

    @Test("the other errors the filter and the command line share read their status from the protocol too")
    func otherErrors() {
        let errors: [any MailsecError] = [
            KeyLossError(losses: [(address: "bob@example.org", reason: "the key is gone")]),
            KeyContinuityError(description: "cannot read the key continuity records"),
            StreamingError(description: "cannot make a temporary file"),
            EnvelopeAddressError(which: "sender", problem: "a line break"),
        ]
        for error in errors {
            let (status, line) = MailFilter.classify(error)
            #expect(status == error.exitStatus.rawValue, "\(type(of: error)): filter \(status), command line \(error.exitStatus.rawValue)")
            #expect(line.contains(error.safeDescription), "\(type(of: error)): \(line)")
        }
    }

    @Test("the two disagreements are decided: no signing key waits (75), a feature not built is unavailable (69)")
    func decisions() {
        #expect(PipelineError(.noSigningKey, detail: "alice@example.org").exitStatus.rawValue == 75)
        #expect(MailFilter.classify(PipelineError(.noSigningKey, detail: "alice@example.org")).0 == 75)
        #expect(PipelineError(.notYetSupported, detail: "x").exitStatus.rawValue == 69)
        #expect(MailFilter.classify(PipelineError(.notYetSupported, detail: "x")).0 == 69)
        #expect(PipelineError(.noPublisher).exitStatus.rawValue == 69)
        #expect(MailFilter.classify(PipelineError(.noPublisher)).0 == 69)
        // A code mailsec does not know yet defers in both, losing nothing.
        let unknown = PipelineError(PipelineError.Code(rawValue: "addedLater"))
        #expect(unknown.exitStatus.rawValue == 75 && MailFilter.classify(unknown).0 == 75)
    }
}
