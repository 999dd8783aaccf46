import Compose
import Contacts
import Foundation

extension ComposeSession {
    /// Addresses to offer for `prefix` while the person types a recipient:
    /// the contacts' suggestions (``ContactBook/suggest(prefix:excluding:limit:now:)``:
    /// ranked by frecency, one person's address with a usable key first)
    /// without the recipients already in the mail, in any role.
    public func suggestions(prefix: String, from contacts: ContactBook, limit: Int = 20) throws(ContactsError) -> [Suggestion] {
        try contacts.suggest(prefix: prefix, excluding: state.recipients.map(\.person.address), limit: limit)
    }
}
