import Policy
import Testing

@Suite("Key continuity in the plan")
struct KeyContinuityPlanTests {
    func refusal(_ fingerprint: String, _ reason: String) -> KeyRefusal {
        KeyRefusal(fingerprint: fingerprint, reason: reason, detail: reason)
    }

    @Test("generated mails: a recipient with a remembered key and no usable one never gets a postcard without a key-loss reason, and a vanished key always holds the mail")
    func generated() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<400 {
            let count = Int.random(in: 1...6, using: &generator)
            var recipients: [Recipient] = []
            var keys: [String: KeyAvailability] = [:]
            var remembered: [String: String] = [:]
            for index in 0..<count {
                let address = "r\(index)@x.org"
                recipients.append(Recipient(address, [.to, .cc, .bcc].randomElement(using: &generator)!))
                let fingerprint = "F\(index)"
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: keys[address] = .usable(fingerprint: fingerprint, source: "keyring")
                case 1: keys[address] = .unusable([refusal(fingerprint, ["revoked", "expired"].randomElement(using: &generator)!)])
                case 2: keys[address] = .unusable([refusal("OTHER", "expired")])
                case 3: keys[address] = .usable(fingerprint: "NEW\(index)", source: "keyring")
                default: break  // missing
                }
                if Bool.random(using: &generator) { remembered[address] = fingerprint }
            }
            let rule: KeyLossRule = Bool.random(using: &generator) ? .defer : .postcard
            let plan = try Plan(recipients: recipients, keys: keys, hasMarkedSpans: Bool.random(using: &generator),
                                options: MailOptions(onKeyLoss: rule), remembered: remembered)
            for item in plan.decisions {
                let address = item.recipient.address
                guard let fingerprint = remembered[address] else {
                    if case .refused = item.decision { Issue.record("refused without a record: \(item)") }
                    continue
                }
                let availability = keys[address] ?? .missing
                switch (availability, item.decision) {
                case (.usable(let key, _), .letter(let chosen, _)):
                    #expect(key == chosen, "a usable key, old or new, gets the letter")
                case (.usable, _):
                    Issue.record("a usable key must give a letter: \(item)")
                case (_, .refused(let why)):
                    #expect(why.isKeyLoss)
                    if case .rememberedKeyUnusable = why { #expect(rule == .defer) }
                case (_, .postcard(let why)):
                    #expect(rule == .postcard, "a postcard only by the postcard rule: \(item)")
                    #expect(why == .rememberedKeyUnusable(fingerprint: fingerprint, {
                        if case .unusable(let list) = availability { list } else { [] } }()))
                default:
                    Issue.record("unexpected \(item)")
                }
                // Gone (missing, or only other keys there): always held, whatever the rule.
                let present: Bool = if case .unusable(let list) = availability { list.contains { $0.fingerprint == fingerprint } } else { false }
                if !availability.isUsable && !present { #expect(item.decision == .refused(.keyVanished(fingerprint: fingerprint))) }
            }
            #expect(plan.keyLoss.count == plan.refused.count, "only key loss refuses here")
            if plan.isRefused { #expect(plan.copies.isEmpty) }
        }
    }

    @Test("an enforced postcard stays one; the JSON reason names key continuity")
    func enforcedAndReport() throws {
        let recipients = [Recipient("a@x.org", .to)]
        let enforced = try Plan(recipients: recipients, keys: [:], hasMarkedSpans: false,
                                options: MailOptions(enforcePostcard: true), remembered: ["a@x.org": "AAAA"])
        #expect(enforced.decisions[0].decision == .postcard(.noKey), "enforced: a postcard, not held")
        let held = try Plan(recipients: recipients, keys: [:], hasMarkedSpans: false, remembered: ["a@x.org": "AAAA"])
        let report = PlanReport(held)
        #expect(report.refused && report.recipients[0].reason == "key-vanished" && report.recipients[0].decision == "refused")
        #expect(report.recipients[0].detail.contains("AAAA"))
        let lapsed = try Plan(recipients: recipients, keys: ["a@x.org": .unusable([refusal("AAAA", "revoked")])], hasMarkedSpans: false,
                              options: MailOptions(onKeyLoss: .postcard), remembered: ["a@x.org": "AAAA"])
        let lapsedReport = PlanReport(lapsed)
        #expect(lapsedReport.recipients[0].decision == "postcard" && lapsedReport.recipients[0].reason == "remembered-key-unusable")
        #expect(lapsedReport.recipients[0].refusedKeys.map(\.fingerprint) == ["AAAA"])
    }
}
