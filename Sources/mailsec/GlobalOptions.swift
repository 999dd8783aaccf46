import ArgumentParser
import Foundation
import MIME
import OpenPGP

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong("gnupg-home"), help: ArgumentHelp(
        "The GnuPG home directory (default: $GNUPGHOME, then ~/.gnupg).", valueName: "dir"))
    var gnupgHome: String?

    var gnupg: GnuPG { GnuPG(home: gnupgHome) }

    /// gpg would quietly create a missing home and then find no keys, which
    /// reads like "nobody has a key": a mistyped path must fail instead.
    func validate() throws {
        var isDirectory: ObjCBool = false
        if let gnupgHome, !(FileManager.default.fileExists(atPath: gnupgHome, isDirectory: &isDirectory) && isDirectory.boolValue) {
            throw ValidationError("--gnupg-home \(gnupgHome) is not a directory")
        }
    }

    /// Lets the global options stand before the subcommand too
    /// (`mailsec --gnupg-home DIR keys lookup ADDR`): argument-parser reads
    /// options only in the leaf command, so they are moved behind the other
    /// arguments, yet before any `--`.
    static func movedToLeaf(_ arguments: [String]) -> [String] {
        let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
        var rest: [String] = [], global: [String] = []
        var index = arguments.startIndex
        while index < end {
            let argument = arguments[index]
            if argument == "--gnupg-home", index + 1 < end {
                global += [argument, arguments[index + 1]]
                index += 2
                continue
            }
            if argument.hasPrefix("--gnupg-home=") { global.append(argument) } else { rest.append(argument) }
            index += 1
        }
        return rest + global + arguments[end...]
    }
}
