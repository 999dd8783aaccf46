import ArgumentParser
import Foundation
import MIME
import OpenPGP
import Settings

/// A size on the command line: plain bytes, or a number with K, M or G
/// (KiB, MiB, GiB: powers of 1024), as `64M`. Kept as typed; `validate(_:)`
/// refuses what is no size (0, a negative, one too large to count), so that
/// every command says so in the same words before it reads anything.
struct ByteSize: ExpressibleByArgument, CustomStringConvertible {
    /// What was typed.
    let text: String
    /// The number of bytes; nil when the text is no size that fits.
    let bytes: Int?

    init(argument: String) {
        text = argument
        bytes = Self.parse(argument)
    }

    init(bytes: Int) {
        self.bytes = bytes
        text = String(bytes)
    }

    var description: String { text }

    static func parse(_ text: String) -> Int? {
        var digits = Substring(text)
        var shift = 0
        switch digits.last.map({ Character($0.uppercased()) }) {
        case "K": shift = 10
        case "M": shift = 20
        case "G": shift = 30
        default: break
        }
        if shift > 0 { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(digits) else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: 1 << shift)
        return overflow ? nil : bytes
    }

    /// The bytes, or a usage error naming `option`.
    func validate(_ option: String) throws -> Int {
        guard let bytes else {
            throw ValidationError("\(option) \(text) is not a size: give bytes, or a number with K, M or G (64M)")
        }
        guard bytes > 0 else { throw ValidationError("\(option) must be at least 1 byte") }
        return bytes
    }
}

/// The `--max-size` of the commands that read a message.
struct MessageSizeOption: ParsableArguments {
    @Option(help: ArgumentHelp("The largest message read: bytes, or with K, M or G (default 64M).", valueName: "size"))
    var maxSize: ByteSize?

    func validate() throws {
        // Not clamped quietly: a message past the real limit would be refused naming another number.
        if let bytes = try maxSize?.validate("--max-size"), bytes > ParseOptions.largestSize {
            throw ValidationError("--max-size \(maxSize!) is more than mailsec reads: at most \(ParseOptions.largestSize >> 20)M")
        }
    }

    /// The parser's limits, with `--max-size` when given.
    var parseOptions: ParseOptions {
        var options = ParseOptions.standard
        if let bytes = maxSize?.bytes { options.maxSize = bytes }
        return options
    }
}

extension Validity: ExpressibleByArgument {
    /// GnuPG's names, or its numbers: those of `gpg --edit-key`'s trust menu,
    /// which for marginal, full and ultimate are also GPGME's
    /// (`GPGME_VALIDITY_MARGINAL` is 3). 0 is GPGME's unknown.
    public init?(argument: String) {
        switch argument.lowercased() {
        case "unknown", "0", "1": self = .unknown
        case "marginal", "3": self = .marginal
        case "full", "4": self = .full
        case "ultimate", "5": self = .ultimate
        default: return nil
        }
    }

    /// What `--help` lists.
    public static var allValueStrings: [String] { ["unknown", "marginal", "full", "ultimate"] }
}

/// The help of `--min-validity`, the same wherever it is.
let minValidityHelp = ArgumentHelp(
    "Least user ID validity a key needs; GnuPG's numbers 1, 3, 4, 5 (or 0) name the same levels.",
    valueName: "validity")

/// Checks a plain `local@domain` address given as an option's value.
/// `<bob@example.org>` is taken as `bob@example.org` (as the pipeline takes an
/// envelope address), never looked up as another, keyless address.
func checkAddress(_ address: String, option: String) throws {
    let bare = address.hasPrefix("<") && address.hasSuffix(">") && address.count > 2
        ? String(address.dropFirst().dropLast()) : address
    let parts = bare.split(separator: "@", omittingEmptySubsequences: false)
    let forbidden = bare.unicodeScalars.contains {
        $0.value < 0x21 || $0.value == 0x7F || "<>,;:\"()[]\\".unicodeScalars.contains($0)
    }
    guard parts.count == 2, !parts[0].isEmpty, isDomain(parts[1]), !forbidden else {
        // The value is not echoed: it may hold line breaks or control characters.
        throw ValidationError("\(option) is not a plain mail address (local@domain, no name, no <>)")
    }
}

/// A domain name: dot-separated labels of letters, digits and inner hyphens.
func isDomain(_ text: Substring) -> Bool {
    let labels = text.split(separator: ".", omittingEmptySubsequences: false)
    return !labels.isEmpty && labels.allSatisfy { label in
        !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
            && label.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" }
    }
}

/// What `--json` prints, summarised for its help line.
protocol JSONContract {
    static var summary: String { get }
}

/// `--json`, under the help's Output title, with the contract it prints.
struct JSONOutput<Contract: JSONContract>: ParsableArguments {
    @Flag(help: ArgumentHelp("Print JSON on standard output: " + Contract.summary))
    var json = false
}

enum PlanJSON: JSONContract {
    static let summary = "{recipientState, mailState, postcardExtension, hasMarkedSpans, refused, recipients: "
        + "[{address, role, decision, reason, detail, fingerprint, keySource, refusedKeys, keyChange}], "
        + "copies: [{kind, recipients, fingerprints}], withheldParts, passedParts, refusedParts, droppedByAllowList} "
        + "(docs/json.md: the plan as JSON)."
}

enum VerifyJSON: JSONContract {
    static let summary = "{kind, coverage, signedPart, status, signer: {fingerprint, userID}, from, fromMatches, verified, reason}."
}

enum LookupJSON: JSONContract {
    static let summary = "one object per address, {address, chosen (a fingerprint or null), "
        + "candidates: [{fingerprint, algorithms, created, expires, userIDs, verdict, reason}]}."
}

enum AutocryptJSON: JSONContract {
    static let summary = "one object per header, {header, addr, imported (a fingerprint or null), reason}."
}

/// A usage error naming `option` unless `value` is in `range`: every number
/// on the command line is checked before it becomes seconds or days.
func check(_ option: String, _ value: Int, in range: ClosedRange<Int>) throws {
    guard range.contains(value) else { throw ValidationError("\(option) must be a whole number from \(range.lowerBound) to \(range.upperBound)") }
}

/// The ranges the command line's numbers share with the configuration files'.
enum Limits {
    /// Seconds: a day at most.
    static let seconds = 1...TOMLKeys.day
    /// Days: ten years at most.
    static let days = 1...TOMLKeys.tenYears
}
