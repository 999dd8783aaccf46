import ArgumentParser
import Compose
import Foundation
import MIME
import OpenPGP
import Pipeline

/// The exit statuses of the composing commands (compose, reply, forward, drafts edit).
let composeExitStatus = ExitStatus.section([
    (.success, "sent (queued in the outbox; a line on standard error when delivery must wait), saved as a draft, or discarded"),
    (.usage, "usage error; no terminal for the editor and the prompt (use --no-edit with --send or --save-draft)"),
    (.dataError, "bad input: markers that do not pair up, an address that is not local@domain, no recipients, a mail that is not one"),
    (.noInput, "a file (--body-file, --attach, the mail answered) cannot be read"),
    (.refused, "refused by policy before anything is queued: a letter required without a key, no signing key, "
        + "content that arrived encrypted going to postcard recipients without --confirm-downgrade (the recipients are named), "
        + "no key of your own to keep drafts with"),
    (.temporary, "temporary or unexpected: GnuPG, the store or the configuration unusable; try again"),
])
