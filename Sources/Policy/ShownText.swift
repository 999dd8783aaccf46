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

    /// A calendar's or a card's text with the escapes of its values undone
    /// (RFC 5545 §3.3.11: `\\`, `\;`, `\,`, `\n` and `\N` a line end).
    static func calendarUnescaped(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
        guard s.contains("\\") else { return s }
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var index = 0
        while index < s.count {
            if s[index] == "\\" && index + 1 < s.count {
                out.append(s[index + 1] == "n" || s[index + 1] == "N" ? "\n" : s[index + 1])
                index += 2
            } else {
                out.append(s[index])
                index += 1
            }
        }
        return out
    }

    /// HTML's text as a browser shows it: tags (to the first `>` outside a quoted
    /// value), comments, `<!…>` and `<?…>` out, with what `<script>`, `<style>`,
    /// `<template>`, `<title>`, `<noembed>` and `<noframes>` hold; character references
    /// decoded (``decodeEntities(_:)-(String)``). A `<` that starts no tag (`a < b`) is
    /// text. A tag or comment left open runs to the end, as a browser reads it. Where
    /// it may differ from a browser it drops more (any quote in a tag quotes), so a
    /// marker it shows that a browser does not makes a mail refused, never sent.
    /// One pass: every scan from a `<` ends where the reading goes on.
    package static func htmlShown(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
        @inline(__always) func isLetter(_ scalar: Unicode.Scalar) -> Bool {
            scalar.value < 0x80 && (scalar.value | 0x20) >= 0x61 && (scalar.value | 0x20) <= 0x7A
        }
        /// Where the first `needle` (lower-case ASCII) at or after `from` ends, in any case; `s.count` when none.
        func end(of needle: [Unicode.Scalar], from: Int) -> Int {
            var at = from
            while at + needle.count <= s.count {
                var k = 0
                while k < needle.count {
                    let value = s[at + k].value
                    guard (isLetter(s[at + k]) ? value | 0x20 : value) == needle[k].value else { break }
                    k += 1
                }
                if k == needle.count { return at + needle.count }
                at += 1
            }
            return s.count
        }
        let hiddenContent: Set<String> = ["script", "style", "template", "title", "noembed", "noframes"]
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var index = 0
        while index < s.count {
            guard s[index] == "<", index + 1 < s.count else { out.append(s[index]); index += 1; continue }
            let next = s[index + 1]
            if next == "!" && index + 3 < s.count && s[index + 2] == "-" && s[index + 3] == "-" {
                // A comment: `<!-->` and `<!--->` close at once, else to `-->`.
                let at = index + 4
                if at < s.count && s[at] == ">" { index = at + 1; continue }
                if at + 1 < s.count && s[at] == "-" && s[at + 1] == ">" { index = at + 2; continue }
                index = end(of: ["-", "-", ">"], from: at)
                continue
            }
            let closing = next == "/"
            if isLetter(next) || next == "!" || next == "?" || closing {
                // A tag (or a bogus comment, `<!doctype>`, `<?xml?>`, `</ x>`): to the first `>` outside quotes.
                var at = index + 1
                var quote: Unicode.Scalar?
                while at < s.count {
                    let scalar = s[at]
                    if let open = quote {
                        if scalar == open { quote = nil }
                    } else if scalar == ">" {
                        break
                    } else if scalar == "\"" || scalar == "'" {
                        quote = scalar
                    }
                    at += 1
                }
                // Its name, for an element whose content is not shown.
                var nameEnd = index + 1
                while nameEnd < at && nameEnd - index <= 9 && isLetter(s[nameEnd]) { nameEnd += 1 }
                let name = String(scalars: s[(index + 1)..<nameEnd]).lowercased()
                index = min(s.count, at + 1)
                if !closing && hiddenContent.contains(name) {
                    // Its content to its end tag (or the end), not shown.
                    index = end(of: Array("</\(name)".unicodeScalars), from: index)
                }
                continue
            }
            out.append(s[index])
            index += 1
        }
        return decodeEntities(out)
    }

    /// Markdown as a renderer shows it: a link `[text](url)` or `[text][ref]` as its
    /// text, an image `![alt](src)` as nothing (an empty link or image shows nothing,
    /// issue 21: `[[pri[](#)vate]]` shows `[[private]]`), then inline HTML as
    /// ``htmlShown(_:)`` reads it. A link's text holds no bracket here (an outer one
    /// stays as written). One pass: a link's text and its target are each read from
    /// one `[` and one `(` at most.
    package static func markdownShown(_ s: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var index = 0
        while index < s.count {
            let isImage = s[index] == "!" && index + 1 < s.count && s[index + 1] == "["
            let open = isImage ? index + 1 : index
            if s[open] == "[" {
                var close = open + 1
                while close < s.count && s[close] != "]" && s[close] != "[" { close += 1 }
                if close + 1 < s.count && s[close] == "]" && (s[close + 1] == "(" || s[close + 1] == "[") {
                    let target: Unicode.Scalar = s[close + 1] == "(" ? ")" : "]"
                    var end = close + 2
                    while end < s.count && s[end] != target && s[end] != "(" && s[end] != "[" && s[end] != "]" && s[end] != "\n" { end += 1 }
                    if end < s.count && s[end] == target {
                        if !isImage { out += s[(open + 1)..<close] }
                        index = end + 1
                        continue
                    }
                }
            }
            out.append(s[index])
            index += 1
        }
        return htmlShown(out)
    }
}
