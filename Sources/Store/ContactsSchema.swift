import GRDB

extension Schema {
    /// Contacts (target Contacts): one row per address (lower case) with its
    /// names, how often and how lately it was written to or seen, the
    /// frecency accumulator and the key status of the last key listing; and
    /// key continuity for the CLI: the key each recipient last got a letter with.
    static func registerContacts(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("contacts-1") { db in
            try db.create(table: "contact") { table in
                table.column("address", .text).primaryKey()
                table.column("name", .text)                       // shown: sent > keyring > seen
                table.column("nameSource", .text)                 // sent | keyring | seen
                table.column("sentName", .text)                   // the name the user wrote it with
                table.column("sentCount", .integer).notNull().defaults(to: 0)
                table.column("seenCount", .integer).notNull().defaults(to: 0)
                table.column("lastSent", .double)
                table.column("lastSeen", .double)
                table.column("score", .double).notNull().defaults(to: 0)     // frecency at scoreAt
                table.column("scoreAt", .double).notNull().defaults(to: 0)
                table.column("keyState", .text).notNull().defaults(to: "unknown")  // usable | missing | unusable | unknown
                table.column("fingerprint", .text)                // the usable key chosen
                table.column("keyReason", .text)                  // why none is usable
                table.column("keyFingerprints", .text)            // every key with a user ID for it, space-separated
                table.column("inKeyring", .boolean).notNull().defaults(to: false)
            }
            try db.create(table: "continuity") { table in
                table.column("address", .text).primaryKey()
                table.column("fingerprint", .text).notNull()
                table.column("recorded", .double).notNull()
            }
        }
    }
}
