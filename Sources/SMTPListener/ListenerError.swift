/// Why a listener could not start. The text names the address or folder
/// and the system's reason; it never holds mail.
package struct ListenerError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What kind of failure it was; compare with `~=` or `==`.
    package struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code as a short word (`bind-failed`).
        package let rawValue: String
        /// A code from its word.
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The code as a short word.
        package var description: String { rawValue }

        /// The address could not be bound (in use, not ours, not an address).
        package static let bindFailed = Code(rawValue: "bind-failed")
        /// The address is not loopback and ``ListenerSettings/allowNonLoopback`` is off.
        package static let notLoopback = Code(rawValue: "not-loopback")
        /// The spool folder cannot be made, is not ours, or is not a folder.
        package static let spoolDirectory = Code(rawValue: "spool-directory")
        /// A setting is out of range (a negative size, no connections allowed).
        package static let badSetting = Code(rawValue: "bad-setting")
        /// ``SMTPListener/start()`` was called twice.
        package static let alreadyStarted = Code(rawValue: "already-started")
        /// A spool file could not be made or written.
        package static let spoolFailed = Code(rawValue: "spool-failed")
    }

    /// What kind of failure it was.
    package let code: Code
    /// One line naming the address or folder and the reason.
    package let description: String

    /// An error of kind `code` saying `description`.
    package init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}


/// Lets `catch ListenerError.Code.notLoopback` read naturally.
package func ~= (code: ListenerError.Code, error: any Error) -> Bool {
    (error as? ListenerError)?.code == code
}
