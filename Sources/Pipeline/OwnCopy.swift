import Policy

extension WrittenMail {
    /// Which copy the sender keeps (filed in a sent folder after delivery):
    /// the To/Cc letter (encrypted to the sender's key too), else the
    /// postcard, else the mail as it came, else a letter to a Bcc recipient.
    /// `bcc` holds the Bcc addresses (any case). One choice for every way a
    /// mail is queued (`send`, `sendmail`, a compose session).
    public func ownCopy(bcc: Set<String>) -> Int? {
        let bcc = Set(bcc.map { $0.lowercased() })
        if let index = copies.firstIndex(where: { $0.kind == .letter && $0.recipients.contains { !bcc.contains($0.lowercased()) } }) {
            return index
        }
        return copies.firstIndex { $0.kind == .postcard } ?? copies.firstIndex { $0.kind == .unchanged }
            ?? copies.firstIndex { $0.kind == .letter }
    }
}
