import Foundation
import MIME

extension Submission {
    /// `bytes` as a mail client hands it (`message` is `bytes` parsed): a
    /// missing From (from `sender`, with `fullName`, sendmail's `-F`), Date
    /// or Message-ID is added before the header, as sendmail does, in the
    /// mail's own line endings. Everything else is left as it is; nil when
    /// nothing is missing.
    package static func completedHeaders(_ bytes: [UInt8], message: MIMEMessage, sender: String, fullName: String?) -> [UInt8]? {
        var added = ""
        if message.header("From") == nil {
            let name = fullName.map { "\"\($0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))\" " } ?? ""
            added += "From: \(name)<\(sender)>\r\n"
        }
        if message.header("Date") == nil {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
            added += "Date: \(formatter.string(from: Date()))\r\n"
        }
        if message.header("Message-ID") == nil {
            var random = [UInt8](repeating: 0, count: 12)
            _ = getentropy(&random, random.count)
            let domain = sender.split(separator: "@").last.map(String.init) ?? "localhost"
            added += "Message-ID: <\(random.map { String(format: "%02x", $0) }.joined())@\(domain)>\r\n"
        }
        guard !added.isEmpty else { return nil }
        // Line endings as the mail has them.
        let lf = !bytes.prefix(4096).contains(13)
        return Array((lf ? added.replacingOccurrences(of: "\r\n", with: "\n") : added).utf8) + bytes
    }
}
