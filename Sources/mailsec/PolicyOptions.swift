import ArgumentParser
import Settings
import Foundation
import MIME
import OpenPGP
import PartialEncryption
import Pipeline
import Policy
import Store

/// Options that decide letters and postcards.
struct PolicyOptions: ParsableArguments {
    @Flag(help: "Everybody gets a postcard, even recipients with keys.")
    var enforcePostcard = false

    @Flag(help: "Everybody must get a letter; a recipient without a usable key refuses the whole mail (69).")
    var requireLetter = false

    @Option(name: .customLong("require-letter-for"),
            help: ArgumentHelp("Recipients in this domain (or *.domain: its subdomains) must get a letter (repeatable).",
                               valueName: "domain"))
    var requireLetterDomains: [String] = []

    @Flag(help: "Postcards invite their recipients to encrypted mail (text, the sender's key, Autocrypt).")
    var invite = false

    @Option(name: .customLong("extension"), help: ArgumentHelp(
        "What postcards do with marked spans: censored or partially-encrypted.", valueName: "kind"))
    var postcardExtension: PostcardExtension = .censored

    @Option(help: opaquePartsHelp)
    var opaqueParts: OpaqueParts = .withhold

    @Option(help: minValidityHelp)
    var minValidity: Validity?

    @Option(help: ArgumentHelp("Sign letters with this key: an address or a fingerprint (default: the From address).",
                               valueName: "key"))
    var signAs: String?

    @Option(help: ArgumentHelp("The envelope sender, a plain address (default: the From address).", valueName: "address"))
    var from: String?

    func validate() throws {
        if enforcePostcard && requireLetter {
            throw ValidationError("--enforce-postcard cannot be combined with --require-letter")
        }
        for domain in requireLetterDomains {
            let name = domain.hasPrefix("*.") ? domain.dropFirst(2) : Substring(domain)
            guard isDomain(name) else {
                throw ValidationError("--require-letter-for '\(domain)' is not a domain (example.org, or *.example.org)")
            }
        }
        if let from { try checkAddress(from, option: "--from") }
        if let signAs, signAs.isEmpty || signAs.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw ValidationError("--sign-as needs an address or a fingerprint")
        }
    }

    func pipeline(_ global: GlobalOptions, markers: MarkerOptions, reading: ReadingOptions? = nil) throws -> MailPipeline {
        var mail = MailOptions(enforcePostcard: enforcePostcard, requireLetter: requireLetter,
                               domainRules: requireLetterDomains.map { DomainRule($0, .requireLetter) }, invite: invite,
                               postcardExtension: postcardExtension)
        mail.opaqueParts = opaqueParts
        var policy = PolicySettings()
        (policy.mail, policy.redactor, policy.signAs, policy.minimumValidity) = (mail, try markers.redactor(), signAs, minValidity)
        var options = PipelineOptions(policy: policy, reading: nil)
        // The reading server from the options, not a [reading] table; `encrypt` hands the password
        // to --password-to itself, so no notice is mailed and none must be a letter.
        options.publisher = try reading?.publisher()
        options.readingLifetime = reading?.lifetimeDays.map { $0 * 86400 }
        options.noticeMustBeLetter = false
        return MailPipeline(gnupg: global.gnupg, options: options)
    }
}

/// Markers and placeholder.
struct MarkerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The marker that opens a private span.", valueName: "text"))
    var openMarker = Redactor.standard.open

    @Option(help: ArgumentHelp("The marker that closes a private span.", valueName: "text"))
    var closeMarker = Redactor.standard.close

    @Option(help: ArgumentHelp("What a censored span becomes.", valueName: "text"))
    var placeholder = Redactor.standard.placeholder

    /// The markers are checked before any input is read.
    func validate() throws {
        do { _ = try redactor() } catch let error as PolicyError { throw ValidationError(error.description) }
    }

    func redactor() throws -> Redactor {
        try Redactor(open: openMarker, close: closeMarker, placeholder: placeholder)
    }
}

extension PostcardExtension: ExpressibleByArgument {}
extension OpaqueParts: ExpressibleByArgument {}

/// The help of `--opaque-parts`, the same for every command that writes postcards.
let opaquePartsHelp = ArgumentHelp(
    "In postcards of a mail with marked spans, what happens to parts mailsec does not read (images, PDFs, office files, "
        + "inline uuencode): withhold (replaced by a note naming the file), pass (sent unread; a marker in their bytes "
        + "refuses the mail) or refuse (the mail is refused).", valueName: "setting")
