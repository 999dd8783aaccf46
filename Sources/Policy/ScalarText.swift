extension String {
    /// The text of `scalars`, encoded straight into UTF-8 bytes.
    /// `String(String.UnicodeScalarView(scalars))` appends scalar by scalar
    /// through a generic map: reading a 1 MB HTML part spent a quarter of its
    /// time there.
    package init(scalars: [Unicode.Scalar]) {
        self.init(scalars: scalars[...])
    }

    /// The text of a run of scalars (see ``init(scalars:)-(Array<Unicode.Scalar>)``).
    /// Its length counted first, then written in place into the String's own storage:
    /// appended to an array, each byte paid a capacity check, and the array grew again
    /// and again for text of U+FFFD (three bytes a scalar), what random bytes read as
    /// UTF-8 give; room for four bytes a scalar would hold up to four times the text.
    package init(scalars: ArraySlice<Unicode.Scalar>) {
        self = scalars.withUnsafeBufferPointer { scalars in
            var length = 0
            for scalar in scalars {
                let value = scalar.value
                length += value < 0x80 ? 1 : value < 0x800 ? 2 : value < 0x1_0000 ? 3 : 4
            }
            return String(unsafeUninitializedCapacity: length) { out in
                var at = 0
                for scalar in scalars {
                    let value = scalar.value
                    if value < 0x80 {
                        out[at] = UInt8(truncatingIfNeeded: value)
                        at += 1
                    } else if value < 0x800 {
                        out[at] = UInt8(truncatingIfNeeded: 0xC0 | value >> 6)
                        out[at + 1] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
                        at += 2
                    } else if value < 0x1_0000 {
                        out[at] = UInt8(truncatingIfNeeded: 0xE0 | value >> 12)
                        out[at + 1] = UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F)
                        out[at + 2] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
                        at += 3
                    } else {
                        out[at] = UInt8(truncatingIfNeeded: 0xF0 | value >> 18)
                        out[at + 1] = UInt8(truncatingIfNeeded: 0x80 | value >> 12 & 0x3F)
                        out[at + 2] = UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F)
                        out[at + 3] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
                        at += 4
                    }
                }
                return at
            }
        }
    }
}
