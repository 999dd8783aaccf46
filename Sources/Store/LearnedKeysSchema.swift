import GRDB

extension Schema {
    /// Keys learned from mail (Autocrypt, gossip), per address, as
    /// Autocrypt's peer state keeps them: kept apart from the keys the person
    /// imported, which they never outrank (target Contacts, `StoreContinuity`).
    static func registerLearnedKeys(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("learned-keys-1") { db in
            try db.create(table: "learnedKey") { table in
                table.column("address", .text).notNull()             // lower case
                table.column("fingerprint", .text).notNull()         // upper case
                table.column("firstSeen", .double).notNull()         // when mailsec learned it (its own clock)
                table.column("lastSeen", .double).notNull()          // the latest mail that carried it (its Date, never later than now)
                table.column("autocryptTimestamp", .double)          // the same, for Autocrypt headers only; null: gossip only
                table.primaryKey(["address", "fingerprint"])
            }
            try db.create(index: "learnedKey_fingerprint", on: "learnedKey", columns: ["fingerprint"])
        }
    }
}
