import ArgumentParser
import Filter
import Foundation
import OpenPGP
import Platform
import Settings
import SharedStore

extension KeysCommand {
    /// `mailsec keys publish`: an administrator's keys, for every resident filter of the shared store.
    struct Publish: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish keys to every resident filter through the shared store, or remove one (issue 25).",
            discussion: """
                Every public key in the files (armored or binary; several in a file are published \
                one by one) is written to the shared store the [store] table of --store-config names \
                (filter.toml will do), each at the next revision, in one transaction, and announced \
                (NOTIFY mailsec_keys). Every resident filter with that [store] applies it to its own \
                GnuPG home within key_sync_interval, at once when it hears the announcement. A revocation \
                is published the same way: the revoked key, again. With --remove, the key is removed \
                from every node's keyring (key continuity then defers mail to its recipients until \
                'mailsec keys forget'). Every file is read and each key imported by gpg in a scratch \
                home before anything is written: a secret key, a key gpg refuses or a file without a key \
                writes nothing. One line per key: 'FINGERPRINT \
                published' or 'FINGERPRINT removed', then 'revision N'.

                \(ExitStatus.section([
                    (.success, "every key was published (or removed)"),
                    (.usage, "usage error, or not a full fingerprint"),
                    (.dataError, "a file holds no key, a secret key, a key gpg refuses, or data that is not OpenPGP keys (nothing written)"),
                    (.noInput, "a file cannot be read"),
                    (.temporary, "the shared store cannot be reached or refused the change (nothing written): try again"),
                    (.config, "--store-config cannot be used (no [store] table, a bad value)"),
                ]))
                """)

        @Option(help: ArgumentHelp("A TOML file with the [store] table (filter.toml will do).", valueName: "file"))
        var storeConfig: String

        @Option(help: ArgumentHelp("Remove the key with this full fingerprint from every node (repeatable).", valueName: "fingerprint"))
        var remove: [String] = []

        @Argument(help: ArgumentHelp("Key files; - reads standard input.", valueName: "file"))
        var files: [String] = []

        func validate() throws {
            if files.isEmpty && remove.isEmpty { throw ValidationError("Give key files, or --remove FINGERPRINT.") }
            if !files.isEmpty && !remove.isEmpty { throw ValidationError("Give key files or --remove, not both.") }
            for fingerprint in remove where !GnuPG.isFingerprint(fingerprint) {
                throw ValidationError("not a full fingerprint: \(fingerprint)")
            }
        }

        func run() throws {
            let settings = try Self.storeSettings(storeConfig)
            var rows: [(fingerprint: String, armor: String?)] = remove.map { ($0.uppercased(), nil) }
            // Every file read and checked before anything is written; every key imported by gpg as a node will
            // (in a scratch home, removed after): a key gpg refuses would stop every node at its revision.
            let scratch: String
            do { scratch = try PrivateFolder.unique(in: "/tmp", prefix: "mailsec-publish") } catch {
                throw CommandFailure("cannot make a scratch GnuPG home in /tmp", status: .temporary)
            }
            defer { NodeKeyring.remove(scratch) }
            for file in files {
                let name = file == "-" ? "standard input" : file
                let bytes = try readInput(file, what: "keys")
                guard let keys = Packets.keys(in: bytes) else {
                    throw CommandFailure("\(name) holds no OpenPGP keys (not key data, or damaged)", status: .dataError)
                }
                guard !keys.isEmpty else { throw CommandFailure("\(name) holds no key", status: .dataError) }
                if keys.contains(where: \.secret) {
                    throw CommandFailure("\(name) holds a secret key: publish only public keys (gpg --export)", status: .dataError)
                }
                for key in keys {
                    guard let fingerprint = key.fingerprint else {
                        throw CommandFailure("\(name) holds a key of a version other than 4, which cannot be published", status: .dataError)
                    }
                    let armor = Armor.armor(key.bytes)
                    do { try NodeKeyring.apply(PublishedKey(revision: 0, fingerprint: fingerprint, armor: armor), to: GnuPG(home: scratch)) }
                    catch { throw CommandFailure("\(name): gpg refuses the key \(fingerprint) (nothing published)", status: .dataError) }
                    rows.append((fingerprint, armor))
                }
            }
            let revision: Int64
            do { revision = try SharedStore.keys(settings).publish(rows) } catch {
                throw CommandFailure(error.description, status: .temporary)
            }
            for row in rows { print("\(row.fingerprint) " + (row.armor == nil ? "removed" : "published")) }
            print("revision \(revision)")
        }

        /// The `[store]` table of the file at `path` (78 when it cannot be used, 66 when it cannot be read).
        static func storeSettings(_ path: String) throws -> StoreSettings {
            let text = String(decoding: try readSmallFile(path), as: UTF8.self)
            do { return try StoreSettings.read(text: text, file: path) } catch {
                throw CommandFailure(error.description, status: .config)
            }
        }
    }
}
