import Foundation
import MailsecFuzzChecks
import TestSupport
import Testing

/// Every input kept in Fixtures/fuzz/TARGET (seeds, and each crash the
/// fuzzers found, once fixed) runs through the same check as the fuzzer.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static let targets: [(String, @Sendable ([UInt8]) -> Void)] = [
        ("parse-and-walk", FuzzChecks.parseAndWalk), ("redaction", FuzzChecks.redaction), ("structure", FuzzChecks.structure),
        ("filter-config", FuzzChecks.filterConfig), ("user-config", FuzzChecks.userConfig), ("reading-document", FuzzChecks.readingDocument),
    ]

    @Test("kept inputs pass their fuzz check", arguments: ["parse-and-walk", "redaction", "structure", "filter-config", "user-config", "reading-document"])
    func kept(target: String) throws {
        let folder = Paths.fixtures.appendingPathComponent("fuzz/" + target)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
        #expect(!names.isEmpty, "Fixtures/fuzz/\(target) has inputs")
        let check = try #require(Self.targets.first { $0.0 == target }?.1)
        for name in names { check(Array(try Data(contentsOf: folder.appendingPathComponent(name)))) }
    }
}
