import ArgumentParser
import Contacts
import Foundation
import Store

/// Shell completion of mail addresses from the contacts (`--to`, `--cc`,
/// `--bcc`, sendmail's recipients, `contacts PREFIX`). The generated bash,
/// zsh and fish scripts call `mailsec ---completion …`, which runs
/// ``complete(_:)`` in this process: the stored contacts, ranked as
/// `mailsec contacts` ranks them, without a key listing (a TAB must be quick).
/// Addresses already on the command line are left out.
///
/// Use: `@Option(completion: AddressCompletion.kind) var to: [String] = []`.
enum AddressCompletion {
    static let kind = CompletionKind.custom { words, index, prefix in complete(words: words, index: index, prefix: prefix) }

    /// How many addresses one TAB offers at most.
    static let limit = 50

    static func complete(words: [String], index: Int, prefix: String) -> [String] {
        // `--to=ali…` arrives whole in some shells.
        var typed = prefix
        if typed.hasPrefix("-"), let equals = typed.firstIndex(of: "=") { typed = String(typed[typed.index(after: equals)...]) }
        // A list being typed (a@x,b@y,c…): complete its last entry.
        let head = typed.lastIndex(of: ",").map { String(typed[...$0]) } ?? ""
        typed = String(typed.dropFirst(head.count))
        let present = words.enumerated().filter { $0.offset != index }.flatMap { $0.element.split(separator: ",") }
            .map { String($0).trimmingCharacters(in: .whitespaces).lowercased() }
        // A TAB never makes a store: without one there is nothing to offer.
        let folder = LocalStore.defaultFolder()
        guard FileManager.default.fileExists(atPath: folder + "/mailsec.sqlite"),
              let store = try? LocalStore(folder: folder) else { return [] }
        let offers = (try? ContactBook(store: store).suggest(prefix: typed, excluding: present, limit: limit)) ?? []
        return offers.map { head + $0.contact.address }
    }
}
