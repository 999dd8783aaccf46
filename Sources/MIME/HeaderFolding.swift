internal import CGMime

/// Folding of header fields as written (RFC 5322 §2.2.3): a line longer than
/// 78 octets is broken before whitespace it already has, so that unfolding
/// (removing the line breaks) gives back exactly the same text.
///
/// GMime folds the fields it formats itself (`g_mime_object_set_header`,
/// encoded-words of at most 75 characters); a field copied from a parsed mail
/// keeps its raw value, one line of any length. GMime's public folders
/// (`g_mime_utils_unstructured_header_fold`) also break a long word with a
/// tab inside it ("b6@\texample.org"), which changes the field: they are not
/// used here. A word longer than a line stays whole; a line that is still
/// over 998 octets is for the SMTP check to refuse.
enum HeaderFolding {
    /// The length RFC 5322 asks lines to keep to where they can.
    static let preferredLine = 78

    /// Folds every header field of `object` with a line over 78 octets.
    /// Returns the names of the fields changed.
    static func foldLongFields(of object: UnsafeMutablePointer<GMimeObject>) -> [String] {
        guard let list = g_mime_object_get_header_list(object) else { return [] }
        var folded: [String] = []
        for index in 0..<g_mime_header_list_get_count(list) {
            guard let header = g_mime_header_list_get_header_at(list, index),
                  let namePointer = g_mime_header_get_name(header),
                  let rawPointer = g_mime_header_get_raw_value(header) else { continue }
            let name = Array(String(cString: namePointer).utf8) + [UInt8(ascii: ":")]
            let raw = Array(UnsafeBufferPointer(start: UnsafeRawPointer(rawPointer).assumingMemoryBound(to: UInt8.self),
                                                count: strlen(rawPointer)))
            guard let refolded = fold(name: name, rawValue: raw) else { continue }
            g_mime_header_set_raw_value(header, String(decoding: refolded, as: UTF8.self))
            folded.append(String(cString: namePointer))
        }
        return folded
    }

    /// The raw value (after the colon, with its final newline) folded so that
    /// `name` and each line keep to 78 octets where whitespace allows; nil
    /// when no line was over 78 or none could be broken.
    static func fold(name: [UInt8], rawValue: [UInt8]) -> [UInt8]? {
        var body = rawValue
        let newline = body.last == 10
        if newline { body.removeLast() }
        if body.last == 13 { return nil }  // written as given; not ours to touch
        let lines = (name + body).split(separator: 10, omittingEmptySubsequences: false).map(Array.init)
        guard lines.contains(where: { $0.count > preferredLine }) else { return nil }
        var out: [[UInt8]] = []
        for line in lines {
            out += line.count > preferredLine ? breakLine(line) : [line]
        }
        guard out.count > lines.count else { return nil }
        var joined = Array(out.joined(separator: [10]))
        joined.removeFirst(name.count)
        if newline { joined.append(10) }
        return joined
    }

    /// One physical line broken before whitespace: greedily, each piece as
    /// long as fits in 78 octets, or up to the first break when none fits.
    /// A piece never consists of whitespace alone (RFC 5322 §2.2.3), so a
    /// break is only taken after something that is not whitespace, and only
    /// before something that is not whitespace alone to the end.
    static func breakLine(_ line: [UInt8]) -> [[UInt8]] {
        func isSpace(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 }
        // Where a break may go: before whitespace, with non-whitespace before it
        // in the piece and after it in the line.
        var lastText = -1  // index of the last non-whitespace byte of the whole line
        for index in line.indices where !isSpace(line[index]) { lastText = index }
        var pieces: [[UInt8]] = []
        var start = 0
        while line.count - start > preferredLine {
            var best: Int?
            var seenText = false
            var index = start
            while index < line.count {
                if index > start, isSpace(line[index]), !isSpace(line[index - 1]), seenText, index < lastText {
                    if index - start <= preferredLine || best == nil { best = index }
                    if index - start > preferredLine { break }
                }
                if !isSpace(line[index]) { seenText = true }
                index += 1
            }
            guard let cut = best else { break }
            pieces.append(Array(line[start..<cut]))
            start = cut
        }
        pieces.append(Array(line[start...]))
        return pieces
    }
}
