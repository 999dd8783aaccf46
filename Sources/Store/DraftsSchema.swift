import GRDB

extension Schema {
    /// Drafts (target ComposeStore): each row one draft sealed to the
    /// sender's own key (encrypted and signed). No column holds anything
    /// readable: no subject, recipient, text or file name, and no count of
    /// recipients or attachments.
    static func registerDrafts(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("drafts-1") { db in
            try db.create(table: "draft") { table in
                table.column("id", .text).primaryKey()          // a random UUID
                table.column("sealed", .blob).notNull()
                table.column("updated", .double).notNull()
            }
        }
    }
}
