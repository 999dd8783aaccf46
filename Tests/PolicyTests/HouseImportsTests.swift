import Foundation
import Testing

/// Issue 23, item 2: operating-system work lives in Platform. Only Platform
/// and the wrappers of the C libraries (OpenPGP for GPGME, MIME for GMime,
/// HTML for Gumbo) import Glibc or a C module; every other target reaches
/// the system through them. Read from the sources, so a new `import Glibc`
/// (or a C module as a target's dependency) anywhere else fails here.
@Suite("The house: who imports the system")
struct HouseImportsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let allowed: Set<String> = ["Platform", "OpenPGP", "MIME", "HTML"]

    /// The modules a Swift file imports, however the import is spelled
    /// (`@preconcurrency`, `internal`, `@_implementationOnly`, `import struct …`).
    static func imports(_ text: String) -> [String] {
        let pattern = try! NSRegularExpression(
            pattern: #"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#,
            options: [.anchorsMatchLines])
        return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    /// The C modules of this package: every target folder under Sources that holds C.
    static func cModules() throws -> Set<String> {
        let sources = root.appendingPathComponent("Sources")
        var modules: Set<String> = []
        for name in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            let folder = sources.appendingPathComponent(name)
            let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
            if files.contains(where: { $0.hasSuffix(".c") || $0.hasSuffix(".h") || $0.hasSuffix(".modulemap") }) { modules.insert(name) }
        }
        return modules
    }

    @Test("only Platform and the C wrappers import Glibc or a C module")
    func onlyPlatformImportsTheSystem() throws {
        let system = try Self.cModules().union(["Glibc", "SwiftGlibc", "Musl", "Darwin"])
        #expect(system.isSuperset(of: ["CPlatform", "CGPGME", "CGMime", "CGumbo", "CMailsecShims"]), "\(system)")
        let sources = Self.root.appendingPathComponent("Sources")
        var offenders: [String] = []
        var checked = 0
        for target in try FileManager.default.contentsOfDirectory(atPath: sources.path) where !Self.allowed.contains(target) {
            let folder = sources.appendingPathComponent(target)
            for file in FileManager.default.enumerator(atPath: folder.path)?.compactMap({ $0 as? String }) ?? [] where file.hasSuffix(".swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                checked += 1
                for module in Self.imports(text) where system.contains(module) { offenders.append("\(target)/\(file): import \(module)") }
            }
        }
        #expect(checked > 100)
        #expect(offenders.isEmpty, "\(offenders)")
    }

    @Test("the import reader sees every spelling")
    func importSpellings() {
        #expect(Self.imports("import Glibc\n@preconcurrency import Glibc\ninternal import CPlatform\n  @_implementationOnly import CGMime\nimport struct Glibc.stat\n// import Nothing\nlet x = 1")
            == ["Glibc", "Glibc", "CPlatform", "CGMime", "Glibc"])
    }
}
