import Platform
import Policy

/// What each ``PipelineError/Code`` means to whoever ran mailsec: the one
/// table both the command line and the mail filter read.
///
/// | code | status |
/// |---|---|
/// | `noRecipients`, `noSender`, `unredactable`, `unreadable` | 65: the mail itself is wrong |
/// | `refused`, `signedMailNeedsRedaction`, `noticeNeedsLetter`, `publishRefused` | 69: the policy refuses this mail |
/// | `notYetSupported`, `noPublisher` | 69 |
/// | `noSigningKey`, `publishFailed`, a code not placed here yet | 75: try again later |
///
/// Three codes were read differently by the command line and the filter:
///
/// - `noSigningKey` (69 at the command line, 75 in the filter) is 75. The
///   mail is fine and so is the policy; the sender's secret key is missing
///   from the GnuPG home, or has expired — a configuration the person or
///   the administrator will mend. Until then the mail must wait, not
///   bounce: a mail server keeps it queued, and `mailsec sendmail`'s caller
///   keeps it as well, instead of reporting it undeliverable. The line
///   still says which key is missing, so a person at a terminal knows what to do.
/// - `notYetSupported` (64 at the command line, 69 in the filter) is 69: a
///   feature that is not built is a service not available, not a mistake in
///   the command line (the command line's own checks answer 64 before any
///   mail is read).
/// - `noPublisher` (64 and 69) is 69 for the same reason: a command line
///   missing `--publish-url` is refused with 64 by the command's checks
///   before the pipeline runs; when the pipeline itself finds no reading
///   server, it is the configuration that does not provide one.
extension PipelineError: MailsecError {
    /// The status for this error's code (see the table above).
    public var exitStatus: ExitStatus {
        switch code {
        case .noRecipients, .noSender, .unredactable, .unreadable, .opaquePartRefused, .falselyEncrypted: .dataError
        case .refused, .signedMailNeedsRedaction, .noticeNeedsLetter, .publishRefused: .refused
        case .notYetSupported, .noPublisher: .refused
        case .noSigningKey, .publishFailed: .temporary
        default: .temporary  // a code added later: "try again" until it is placed
        }
    }
}

extension PipelineError.Code {
    /// Every code mailsec throws, for the tests that walk them all.
    package static let all: [PipelineError.Code] = [
        .noRecipients, .noSender, .noSigningKey, .refused, .signedMailNeedsRedaction, .notYetSupported, .unredactable,
        .unreadable, .opaquePartRefused, .falselyEncrypted, .noPublisher, .publishFailed, .publishRefused, .noticeNeedsLetter,
    ]
}

/// Recipients' remembered keys gone: the mail waits until they are restored (75).
extension KeyLossError: MailsecError {
    /// 75: the mail waits.
    public var exitStatus: ExitStatus { .temporary }
}

/// The key continuity records cannot be read or written: try again (75).
extension KeyContinuityError: MailsecError {
    /// 75: nothing was sent; try again.
    public var exitStatus: ExitStatus { .temporary }
}

/// No temporary file for a large mail: try again (75).
extension StreamingError: MailsecError {
    /// 75: nothing was sent; try again.
    public var exitStatus: ExitStatus { .temporary }
}

/// An envelope address that is not a usable path: the input is bad (65).
extension EnvelopeAddressError: MailsecError {
    /// 65: bad input.
    public var exitStatus: ExitStatus { .dataError }
}
