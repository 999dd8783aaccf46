/// Readings of text formats whose reader hides text that stands inside a marker
/// (issue 21, the sixth red team): HTML inside a calendar value or a Markdown
/// file shows neither its tags nor its comments, Markdown shows a link as its
/// text and an image as nothing, and a quoted-printable value of a vCard 2.1 or
/// vCalendar 1.0 joins its soft line breaks. Each is one pass over the text.
extension Redactor {
    /// `text` with each quoted-printable soft line break (`=` at a line's end, and
    /// one space or tab that folds the next line) taken out; nil when it holds none.
    static func softBreaksJoined(_ text: String) -> String? {
        let scalars = scalarArray(text)
        var out: [Unicode.Scalar] = []
        var found = false
        var index = 0
        while index < scalars.count {
            if scalars[index] == "=" {
                var next = index + 1
                if next < scalars.count && scalars[next] == "\r" { next += 1 }
                if next < scalars.count && scalars[next] == "\n" {
                    if !found {
                        found = true
                        out.reserveCapacity(scalars.count)
                        out += scalars[..<index]
                    }
                    index = next + 1
                    if index < scalars.count && (scalars[index] == " " || scalars[index] == "\t") { index += 1 }
                    continue
                }
            }
            if found { out.append(scalars[index]) }
            index += 1
        }
        return found ? String(scalars: out) : nil
    }
}
