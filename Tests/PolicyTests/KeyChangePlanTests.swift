import Foundation
import Policy
import Testing

/// The policy of key changes, as values: which rule takes which change, and
/// what the plan and its JSON say.
@Suite("key changes in the plan")
struct KeyChangePlanTests {
    func plan(_ rule: KeyChangeRule, certified: Bool, enforced: Bool = false) throws -> Plan {
        var options = MailOptions(enforcePostcard: enforced)
        options.onKeyChange = rule
        let change = KeyChange(address: "Bob@example.org", previous: "OLD", current: "NEW", origin: "autocrypt",
                               since: "2024-01-02T10:00:00Z", certifiedByPrevious: certified)
        return try Plan(recipients: [Recipient("bob@example.org", .to), Recipient("carol@example.org", .cc)],
                        keys: ["bob@example.org": .usable(fingerprint: "NEW", source: "autocrypt"),
                               "carol@example.org": .usable(fingerprint: "CAROL", source: "keyring")],
                        hasMarkedSpans: false, options: options,
                        remembered: ["bob@example.org": "OLD", "carol@example.org": "CAROL"],
                        changes: ["bob@example.org": change])
    }

    @Test("every rule against a certified and an uncertified change")
    func rules() throws {
        for rule in KeyChangeRule.allCases {
            for certified in [false, true] {
                let plan = try plan(rule, certified: certified)
                let taken = rule == .accept || (rule == .acceptCertified && certified)
                #expect(plan.keyChanges.map(\.current) == ["NEW"], "the change is on the plan either way")
                #expect(plan.isRefused == !taken, "\(rule) \(certified)")
                #expect(plan.heldKeyChanges.isEmpty == taken)
                #expect(plan.keyLoss.isEmpty, "a change is not a key loss")
                if taken {
                    #expect(plan.copies.first?.fingerprints == ["NEW", "CAROL"])
                } else {
                    #expect(plan.copies.isEmpty)
                    #expect(plan.decisions[0].decision == .refused(.keyChanged(plan.keyChanges[0])))
                    #expect(plan.decisions[1].decision.isLetter, "Carol is not concerned")
                }
                let report = PlanReport(plan)
                #expect(report.recipients[0].keyChange?.previous == "OLD" && report.recipients[1].keyChange == nil)
                #expect(report.recipients[0].reason == (taken ? "key" : "key-changed"))
                let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
                #expect(json.contains("\"keyChange\":null") && json.contains("\"certifiedByPrevious\":\(certified)"), "\(json)")
            }
        }
    }

    @Test("an enforced postcard is not held by a key change; the default rule holds")
    func enforcedAndDefault() throws {
        let enforced = try plan(.defer, certified: false, enforced: true)
        #expect(!enforced.isRefused && enforced.keyChanges.isEmpty)
        #expect(MailOptions.standard.onKeyChange == .defer)
        let description = try plan(.defer, certified: false).heldKeyChanges[0].description
        #expect(description.contains("OLD") && description.contains("NEW") && description.contains("Autocrypt")
                && description.contains("2024-01-02"), "\(description)")
    }
}
