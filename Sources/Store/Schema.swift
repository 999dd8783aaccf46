import GRDB

/// Every table of the store, as migrations applied in order. A feature that
/// needs tables adds a migration at the end under a new name ("drafts-1",
/// "contacts-1" …); a migration once released is never changed, only
/// followed by another. Each runs in its own transaction.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()

        // The outbox (target Outbox): a mail, its written copies, and each copy's recipients.
        migrator.registerMigration("outbox-1") { db in
            try db.create(table: "outboxMail") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("created", .double).notNull()
                table.column("envelopeSender", .text).notNull()
                table.column("messageID", .text)
                table.column("origin", .text).notNull()          // send | sendmail | library
            }
            try db.create(table: "outboxCopy") { table in
                table.autoIncrementedPrimaryKey("id")
                table.belongsTo("outboxMail", onDelete: .cascade).notNull()
                table.column("position", .integer).notNull()
                table.column("kind", .text).notNull()            // letter | postcard | unchanged
                table.column("message", .blob)                   // nil once every recipient is done
                table.column("isOwnCopy", .boolean).notNull().defaults(to: false)
                table.column("filed", .boolean).notNull().defaults(to: false)
                table.column("attempts", .integer).notNull().defaults(to: 0)
                table.column("lastError", .text)
                table.column("nextTry", .double).notNull()
                table.column("sentAt", .double)
            }
            try db.create(table: "outboxRecipient") { table in
                table.autoIncrementedPrimaryKey("id")
                table.belongsTo("outboxCopy", onDelete: .cascade).notNull()
                table.column("address", .text).notNull()
                table.column("state", .text).notNull()           // pending | sending | sent | failed
                table.column("reason", .text)
            }
            try db.create(index: "outboxRecipient_state", on: "outboxRecipient", columns: ["state"])
        }
        registerDrafts(&migrator)
        registerContacts(&migrator)
        // What a compose session's mail was made from, sealed to the sender's
        // own key like a draft (opaque here): `outbox edit` takes a failed mail
        // back into a draft from it. Dropped once every recipient has the mail.
        migrator.registerMigration("outbox-2") { db in
            try db.alter(table: "outboxMail") { table in table.add(column: "source", .blob) }
        }
        registerLearnedKeys(&migrator)
        return migrator
    }
}
