import Policy

/// Where ``MailPipeline/send(_:to:)`` hands the copies of a mail: the MTA
/// (the filter's hand-over with its journal), the outbox (`send`,
/// `sendmail`, a compose session), a folder (`encrypt --out`), a caller's
/// closure (``HandingTo``). The step owns the order and the rules; a
/// destination only takes copies.
///
/// A destination either takes the copies one by one (``handsOneByOne``:
/// each goes out when ``hand(_:of:)`` returns, and can no longer be taken
/// back) or all at once in ``finish(_:)`` (a transaction, a folder: all or none).
package protocol CopyDestination {
    /// What ``finish(_:)`` gives back (outbox ids, nothing, ...).
    associatedtype Receipt

    /// True (the default): the password notice of a mail that published
    /// spans is one of the copies (``MailPipeline/outgoing(_:_:)``), and a
    /// notice that could not be sent as the options demand refuses the mail
    /// first (``MailPipeline/checkNotice(_:)``). False: the destination's
    /// caller hands the password on itself (`encrypt --password-to`).
    var mailsNotice: Bool { get }

    /// True: copies go one at a time through ``hand(_:of:)``; false (the
    /// default): ``finish(_:)`` takes them all at once.
    var handsOneByOne: Bool { get }

    /// Called once every copy is written and ordered, before the first goes
    /// (the filter's journal records its intent here). A throw: nothing went,
    /// what was published is withdrawn.
    func begin(_ mail: OutgoingMail) throws

    /// Hands on `mail.copies[index]` (one-by-one destinations). Throws
    /// ``CopyNotHanded`` when the copy did not go: what was published is
    /// withdrawn unless a postcard (which links to it) went already. Any
    /// other error (a stop between copies, bookkeeping after the copy went)
    /// leaves the publication as it is.
    func hand(_ index: Int, of mail: OutgoingMail) throws

    /// Called after `mail.copies[index]` went and its letter keys were
    /// recorded in key continuity (counting, say).
    func handed(_ index: Int, of mail: OutgoingMail)

    /// After the last copy. For a destination that takes the copies at once
    /// this is where they go (and where it records key continuity, with
    /// them): a throw withdraws what was published.
    func finish(_ mail: OutgoingMail) throws -> Receipt
}

extension CopyDestination {
    /// The notice is mailed.
    package var mailsNotice: Bool { true }
    /// All at once.
    package var handsOneByOne: Bool { false }
    /// Nothing to prepare.
    package func begin(_ mail: OutgoingMail) throws {}
    /// Nothing per copy.
    package func hand(_ index: Int, of mail: OutgoingMail) throws {}
    /// Nothing counted.
    package func handed(_ index: Int, of mail: OutgoingMail) {}
}

/// A copy that a one-by-one destination could not hand on (``CopyDestination/hand(_:of:)``).
package struct CopyNotHanded: Error {
    /// The copy's index in ``OutgoingMail/copies``.
    package let index: Int
    /// True when the copy is the password notice.
    package let isNotice: Bool
    /// Why it did not go.
    package let error: any Error

    /// `mail.copies[index]` did not go, for `error`.
    package init(_ index: Int, of mail: OutgoingMail, _ error: any Error) {
        self.index = index
        isNotice = mail.isNotice(index)
        self.error = error
    }
}

/// A caller's closure as a destination: called with each copy in order,
/// and whether it is the password notice. A throw stops the mail there
/// (``CopyNotHanded``). Each letter's keys are recorded in key continuity
/// once the closure returned for it.
package struct HandingTo: CopyDestination {
    let body: (WrittenCopy, Bool) throws -> Void

    /// A destination calling `body(copy, isNotice)` for every copy in order.
    package init(_ body: @escaping (WrittenCopy, Bool) throws -> Void) {
        self.body = body
    }

    /// One by one.
    package var handsOneByOne: Bool { true }

    /// Calls the closure.
    package func hand(_ index: Int, of mail: OutgoingMail) throws {
        do { try body(mail.copies[index], mail.isNotice(index)) } catch { throw CopyNotHanded(index, of: mail, error) }
    }

    /// Nothing to give back.
    package func finish(_ mail: OutgoingMail) throws {}
}

extension MailPipeline {
    /// The one way a prepared mail becomes its copies and goes out: the
    /// password notice's refusal (``checkNotice(_:)``), all cryptography and
    /// publishing (``write(_:)``) before anything goes, the copies in
    /// sending order with the notice in its place (``outgoing(_:_:)``),
    /// then to `destination` in that order. Key continuity remembers a
    /// letter's keys only once the letter went (the notice records none).
    ///
    /// What was published is withdrawn when nothing that links to it went:
    /// a failure before the first copy, a copy not handed on
    /// (``CopyNotHanded``, rethrown) before any postcard of the mail went,
    /// a destination that takes every copy at once failing to take them.
    package func send<Destination: CopyDestination>(_ prepared: PreparedMail, to destination: Destination) throws
        -> Destination.Receipt {
        if destination.mailsNotice { try checkNotice(prepared) }
        let written = try write(prepared)  // all crypto (and publishing) before the first copy goes
        let mail: OutgoingMail
        do {
            mail = destination.mailsNotice ? try outgoing(prepared, written) : OutgoingMail(written, notice: nil)
            try destination.begin(mail)
        } catch {
            withdraw(written)
            throw error
        }
        guard destination.handsOneByOne else {
            do { return try destination.finish(mail) } catch {
                // Nothing went: nobody has a link to the page.
                withdraw(written)
                throw error
            }
        }
        for index in mail.copies.indices {
            do { try destination.hand(index, of: mail) } catch let failure as CopyNotHanded {
                // A page no recipient has a link to yet serves nobody: a retry publishes anew.
                if !mail.copies.indices[..<index].contains(where: { !mail.isNotice($0) && mail.copies[$0].kind == .postcard }) {
                    withdraw(written)
                }
                throw failure
            }
            if !mail.isNotice(index) {
                for (address, fingerprint) in mail.copies[index].letterKeys {
                    try options.continuity?.record(address, fingerprint: fingerprint)
                }
            }
            destination.handed(index, of: mail)
        }
        return try destination.finish(mail)
    }
}
