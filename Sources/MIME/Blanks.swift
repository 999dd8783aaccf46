/// Trimming and gathering text without Foundation's `CharacterSet` or the
/// standard library's unspecialised generic initialisers: the pipe filter runs
/// once per mail, and each of those costs a runtime scan of every protocol
/// conformance in the binary the first time a process uses it.
extension String {
    /// Without blanks at either end: tab, Unicode's space separators and the
    /// zero-width space, exactly what Foundation's `trimmingCharacters(in:
    /// .whitespaces)` removes (checked against it over every scalar).
    package var trimmingBlanks: String {
        func blank(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        }
        guard let first = unicodeScalars.firstIndex(where: { !blank($0) }),
              let last = unicodeScalars.lastIndex(where: { !blank($0) }) else { return "" }
        return String(unicodeScalars[first...last])
    }

    /// The text of `scalars`, appended one by one (inlinable: specialised
    /// where it is used, with no look-up of the collection's types at run time).
    @inlinable package init<C: Collection>(scalars: C) where C.Element == Unicode.Scalar {
        self.init()
        unicodeScalars.reserveCapacity(scalars.count)
        for scalar in scalars { unicodeScalars.append(scalar) }
    }
}
