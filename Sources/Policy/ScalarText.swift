extension String {
    /// The text of `scalars`, encoded straight into UTF-8 bytes.
    /// `String(String.UnicodeScalarView(scalars))` appends scalar by scalar
    /// through a generic map: reading a 1 MB HTML part spent a quarter of its
    /// time there.
    package init(scalars: [Unicode.Scalar]) {
        self.init(scalars: scalars[...])
    }

    /// The text of a run of scalars (see ``init(scalars:)-(Array<Unicode.Scalar>)``).
    package init(scalars: ArraySlice<Unicode.Scalar>) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(scalars.count)
        for scalar in scalars {
            let value = scalar.value
            if value < 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: value))
            } else {
                UTF8.encode(scalar) { bytes.append($0) }
            }
        }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
