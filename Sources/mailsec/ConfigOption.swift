import ArgumentParser
import Foundation
import MIME
import Outbox
import Sending
import Settings
import Store

/// `--config` of the sending commands.
struct ConfigOption: ParsableArguments {
    @Option(help: ArgumentHelp("The configuration (default: $XDG_CONFIG_HOME/mailsec/config.toml).", valueName: "file"))
    var config: String?

    var path: String { config ?? UserConfig.defaultPath() }

    func load() throws -> UserConfig { try loadConfig(path: path) }

    func submission() throws -> Submission { try openSubmission(configPath: path) }
}

/// The configuration, or a failure that says what is wrong (75: a mis-edited
/// file never loses a mail; `mailsec config check` tells more).
func loadConfig(path: String) throws -> UserConfig {
    do { return try UserConfig.load(path: path) } catch {
        throw CommandFailure("\(error.description) (see 'mailsec config check')", status: .temporary)
    }
}

/// The configuration's submission, with the store opened.
func openSubmission(configPath: String) throws -> Submission {
    let config = try loadConfig(path: configPath)
    do { return try Submission(config: config) } catch let error as LocalStoreError {
        throw CommandFailure(error.description, status: .temporary)
    }
}
