import Policy
import Testing

let keyed = KeyAvailability.usable(fingerprint: "AAAA", source: "keyring")
func key(_ fingerprint: String) -> KeyAvailability { .usable(fingerprint: fingerprint, source: "keyring") }
let expiredOnly = KeyAvailability.unusable([KeyRefusal(fingerprint: "EEEE", reason: "expired", detail: "expired")])

/// A compact picture of the copies: `letter[a,b] letter[c] postcard[d,e]`.
func picture(_ plan: Plan) -> String {
    plan.copies.map { "\($0.kind.rawValue)[\($0.recipients.map(\.address).joined(separator: ","))]" }
        .joined(separator: " ")
}

/// Mails for each recipient state: (recipients, keys).
let mails: [RecipientSecurityState: ([Recipient], [String: KeyAvailability])] = [
    .none: ([], [:]),
    .allSecure: ([Recipient("a@x.org", .to), Recipient("b@x.org", .cc), Recipient("c@x.org", .bcc)],
                 ["a@x.org": key("A1"), "b@x.org": key("B1"), "c@x.org": key("C1")]),
    .allInsecure: ([Recipient("a@x.org", .to), Recipient("b@x.org", .cc), Recipient("c@x.org", .bcc)],
                   ["b@x.org": expiredOnly]),
    .mixed: ([Recipient("a@x.org", .to), Recipient("b@x.org", .cc), Recipient("c@x.org", .bcc), Recipient("d@x.org", .bcc)],
             ["a@x.org": key("A1"), "c@x.org": key("C1")]),
]

struct Expected {
    let copies: String
    let mailState: MailSecurityState
    let refused: [String]
}

/// Every state × enforcePostcard × requireLetter, with the exact copies.
let expectations: [String: Expected] = [
    "none/plain": Expected(copies: "", mailState: .letter, refused: []),
    "none/enforce": Expected(copies: "", mailState: .letter, refused: []),
    "none/require": Expected(copies: "", mailState: .letter, refused: []),
    "allSecure/plain": Expected(copies: "letter[a@x.org,b@x.org] letter[c@x.org]", mailState: .letter, refused: []),
    "allSecure/enforce": Expected(copies: "postcard[a@x.org,b@x.org,c@x.org]", mailState: .postcard, refused: []),
    "allSecure/require": Expected(copies: "letter[a@x.org,b@x.org] letter[c@x.org]", mailState: .letter, refused: []),
    "allInsecure/plain": Expected(copies: "postcard[a@x.org,b@x.org,c@x.org]", mailState: .postcard, refused: []),
    "allInsecure/enforce": Expected(copies: "postcard[a@x.org,b@x.org,c@x.org]", mailState: .postcard, refused: []),
    "allInsecure/require": Expected(copies: "", mailState: .letter, refused: ["a@x.org", "b@x.org", "c@x.org"]),
    "mixed/plain": Expected(copies: "letter[a@x.org] letter[c@x.org] postcard[b@x.org,d@x.org]", mailState: .postcard, refused: []),
    "mixed/enforce": Expected(copies: "postcard[a@x.org,b@x.org,c@x.org,d@x.org]", mailState: .postcard, refused: []),
    "mixed/require": Expected(copies: "", mailState: .letter, refused: ["b@x.org", "d@x.org"]),
]

@Suite("Plans: decisions, states and copies")
struct PlanTests {
    @Test("every recipient state × enforcePostcard × requireLetter gives exactly the expected copies",
          arguments: [RecipientSecurityState.none, .allSecure, .allInsecure, .mixed], ["plain", "enforce", "require"])
    func combinations(state: RecipientSecurityState, option: String) throws {
        let (recipients, keys) = try #require(mails[state])
        let options = MailOptions(enforcePostcard: option == "enforce", requireLetter: option == "require")
        let plan = try Plan(recipients: recipients, keys: keys, hasMarkedSpans: false, options: options)
        let expected = try #require(expectations["\(state)/\(option)"])
        #expect(plan.recipientState == state)
        #expect(picture(plan) == expected.copies)
        #expect(plan.refused.map(\.recipient.address) == expected.refused)
        #expect(plan.isRefused == !expected.refused.isEmpty)
        if !plan.isRefused { #expect(plan.mailState == expected.mailState) }
        // Every recipient is in exactly one copy, unless the plan is refused.
        let covered = plan.copies.flatMap(\.recipients).map(\.address).sorted()
        #expect(covered == (plan.isRefused ? [] : recipients.map(\.address).sorted()))
    }

    @Test("marked spans turn a postcard mail into an extended postcard, not a letter mail")
    func extendedPostcard() throws {
        let (recipients, keys) = try #require(mails[.mixed])
        #expect(try Plan(recipients: recipients, keys: keys, hasMarkedSpans: true).mailState == .extendedPostcard(.censored))
        let partially = MailOptions(postcardExtension: .partiallyEncrypted)
        #expect(try Plan(recipients: recipients, keys: keys, hasMarkedSpans: true, options: partially).mailState
                == .extendedPostcard(.partiallyEncrypted))
        let (secure, secureKeys) = try #require(mails[.allSecure])
        #expect(try Plan(recipients: secure, keys: secureKeys, hasMarkedSpans: true).mailState == .letter)
    }

    @Test("every decision carries its reason")
    func reasons() throws {
        let recipients = [Recipient("a@x.org", .to), Recipient("b@x.org", .to), Recipient("c@x.org", .cc)]
        let plan = try Plan(recipients: recipients, keys: ["a@x.org": key("A1"), "b@x.org": expiredOnly], hasMarkedSpans: false)
        #expect(plan.decisions.map(\.decision) == [
            .letter(fingerprint: "A1", source: "keyring"),
            .postcard(.noUsableKey([KeyRefusal(fingerprint: "EEEE", reason: "expired", detail: "expired")])),
            .postcard(.noKey),
        ])
        #expect(plan.copies.first?.fingerprints == ["A1"])
        let enforced = try Plan(recipients: recipients, keys: ["a@x.org": key("A1")], hasMarkedSpans: false,
                                options: MailOptions(enforcePostcard: true))
        #expect(enforced.decisions[0].decision == .postcard(.enforced))
    }

    @Test("requireLetter per domain refuses only for that domain")
    func requireLetterDomain() throws {
        let recipients = [Recipient("a@bank.example", .to), Recipient("b@x.org", .to)]
        let options = MailOptions(domainRules: [DomainRule("BANK.example", .requireLetter)])
        let refused = try Plan(recipients: recipients, keys: [:], hasMarkedSpans: false, options: options)
        #expect(refused.refused.map(\.recipient.address) == ["a@bank.example"])
        #expect(refused.copies.isEmpty)
        let fine = try Plan(recipients: recipients, keys: ["a@bank.example": keyed], hasMarkedSpans: false, options: options)
        #expect(picture(fine) == "letter[a@bank.example] postcard[b@x.org]")
    }

    @Test("domain rules: wildcards, first match wins, never a postcard where a letter is required")
    func domainRules() throws {
        let rules = [DomainRule("*.example.gov", .requireLetter), DomainRule("press.example", .enforcePostcard),
                     DomainRule("*.example", .requireLetter)]
        #expect(rules[0].matches("mail.Example.GOV") && !rules[0].matches("example.gov") && !rules[0].matches("badexample.gov"))
        let recipients = [Recipient("a@mail.example.gov", .to), Recipient("b@press.example", .to), Recipient("c@x.org", .cc)]
        let keys = ["a@mail.example.gov": key("A1"), "b@press.example": key("B1"), "c@x.org": key("C1")]
        let plan = try Plan(recipients: recipients, keys: keys, hasMarkedSpans: false, options: MailOptions(domainRules: rules))
        #expect(picture(plan) == "letter[a@mail.example.gov,c@x.org] postcard[b@press.example]")
        #expect(plan.decisions[1].decision == .postcard(.enforced))
        // A mail-wide enforcePostcard meets a domain that requires letters: refused, not sent plain.
        let forced = try Plan(recipients: recipients, keys: keys, hasMarkedSpans: false,
                              options: MailOptions(enforcePostcard: true, domainRules: rules))
        #expect(forced.refused.map(\.recipient.address) == ["a@mail.example.gov"])
        #expect(forced.copies.isEmpty)
    }

    @Test("an address in two roles counts once; enforce with require is refused as a conflict")
    func duplicatesAndConflicts() throws {
        let recipients = [Recipient("a@x.org", .to), Recipient("A@x.org", .bcc)]
        let plan = try Plan(recipients: recipients, keys: ["a@x.org": keyed], hasMarkedSpans: false)
        #expect(picture(plan) == "letter[a@x.org]")
        #expect(throws: PolicyError(.conflictingOptions)) {
            try Plan(recipients: recipients, keys: [:], hasMarkedSpans: false,
                     options: MailOptions(enforcePostcard: true, requireLetter: true))
        }
    }
}

@Suite("Plans for mail that is encrypted already")
struct AlreadyEncryptedTests {
    @Test("one unchanged copy for everybody, whatever the options")
    func unchanged() throws {
        let (recipients, keys) = try #require(mails[.mixed])
        for options in [MailOptions(), MailOptions(enforcePostcard: true), MailOptions(requireLetter: true)] {
            let plan = try Plan(recipients: recipients, keys: keys, hasMarkedSpans: false, alreadyEncrypted: true, options: options)
            #expect(picture(plan) == "unchanged[a@x.org,b@x.org,c@x.org,d@x.org]")
            #expect(plan.decisions.allSatisfy { $0.decision == .unchanged })
            #expect(!plan.isRefused && plan.mailState == .letter)
        }
    }
}
