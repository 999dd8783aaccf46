import Foundation

/// The content of DATA, read as it comes in any cut of packets: dot-unstuffs
/// (RFC 5321 4.5.2), finds the end (CRLF "." CRLF and nothing else, so a bare
/// LF "." LF can never end a mail early — no SMTP smuggling), counts octets,
/// and keeps the content in memory up to a limit, then in a ``SpoolFile``.
///
/// Lines end at CRLF only: a bare LF or CR is content, kept as received.
struct DataReader {
    private enum State {
        /// At the start of a line (also the very start of the content).
        case lineStart
        /// Inside a line.
        case inLine
        /// Inside a line, just after a CR.
        case afterCR
        /// A "." at the start of a line, not yet kept.
        case dot
        /// "." CR at the start of a line.
        case dotCR
    }

    private var state = State.lineStart
    private let maxSize: Int
    private let memoryLimit: Int
    private let spoolDirectory: String
    /// Octets of unstuffed content seen, kept or not.
    private(set) var size = 0
    private var memory: [UInt8] = []
    private(set) var spool: SpoolFile?
    /// Set once the content grew over the maximum size: read on, keep nothing.
    private(set) var tooBig = false
    /// Set when the spool file failed: read on, keep nothing, answer 451.
    private(set) var spoolError: ListenerError?

    init(maxSize: Int, memoryLimit: Int, spoolDirectory: String) {
        self.maxSize = maxSize
        self.memoryLimit = memoryLimit
        self.spoolDirectory = spoolDirectory
    }

    /// Reads from `bytes`; returns how many octets it used, and whether the
    /// final "." CRLF was among them (then the rest belongs to the next command).
    mutating func consume(_ bytes: UnsafeRawBufferPointer) -> (used: Int, ended: Bool) {
        guard let base = bytes.baseAddress else { return (0, false) }
        let count = bytes.count
        var i = 0
        var keepFrom = 0   // start of the run of octets kept as they are
        while i < count {
            switch state {
            case .inLine:
                // The hot loop: on to the next CR.
                if let cr = memchr(base + i, 13, count - i) {
                    i = base.distance(to: UnsafeRawPointer(cr)) + 1
                    state = .afterCR
                } else {
                    i = count
                }
                continue
            case .afterCR:
                let byte = bytes[i]
                state = byte == 10 ? .lineStart : (byte == 13 ? .afterCR : .inLine)
            case .lineStart:
                let byte = bytes[i]
                if byte == 46 {  // ".": never kept, it is stuffing or the end
                    keep(base, from: keepFrom, to: i)
                    keepFrom = i + 1
                    state = .dot
                } else {
                    state = byte == 13 ? .afterCR : .inLine
                }
            case .dot:
                if bytes[i] == 13 {
                    keepFrom = i + 1   // the CR waits: it may be the end's
                    state = .dotCR
                } else {
                    state = .inLine    // a stuffed line: this octet is its first
                }
            case .dotCR:
                let byte = bytes[i]
                if byte == 10 { return (i + 1, true) }
                // "." CR and more: the dot was stuffing, the CR is content.
                var cr: UInt8 = 13
                withUnsafeBytes(of: &cr) { store($0) }
                keepFrom = i
                state = byte == 13 ? .afterCR : .inLine
            }
            i += 1
        }
        keep(base, from: keepFrom, to: count)
        return (count, false)
    }

    private mutating func keep(_ base: UnsafeRawPointer, from: Int, to: Int) {
        guard to > from else { return }
        store(UnsafeRawBufferPointer(start: base + from, count: to - from))
    }

    private mutating func store(_ bytes: UnsafeRawBufferPointer) {
        size += bytes.count
        guard !tooBig, spoolError == nil, bytes.count > 0 else { return }
        if size > maxSize {
            tooBig = true
            memory = []
            spool = nil
            return
        }
        do {
            if let spool {
                try spool.append(bytes)
            } else if memory.count + bytes.count > memoryLimit {
                let file = try SpoolFile(directory: spoolDirectory)
                try memory.withUnsafeBytes { try file.append($0) }
                try file.append(bytes)
                memory = []
                spool = file
            } else {
                memory.append(contentsOf: bytes)
            }
        } catch {
            spoolError = error as? ListenerError ?? ListenerError(.spoolFailed, "cannot spool a mail")
            memory = []
            spool = nil
        }
    }

    /// The content kept, once ended (nil when too big or spooling failed).
    mutating func take() -> ReceivedMail.Content? {
        guard !tooBig, spoolError == nil else { return nil }
        if let spool { self.spool = nil; return .spooled(spool) }
        defer { memory = [] }
        return .memory(memory)
    }

    /// Lets go of everything kept (a disconnect or time-out mid-DATA).
    mutating func discard() {
        memory = []
        spool = nil
    }
}
