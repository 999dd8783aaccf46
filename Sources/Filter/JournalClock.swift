import Foundation
import Platform

/// The clock the journal's records age by: seconds the machine has been up
/// (`CLOCK_BOOTTIME`, which no setting of the wall clock moves), summed over
/// boots in the journal folder's `clock` file.
///
/// The wall clock is no measure here: a machine without a real-time clock
/// boots with an old time and NTP moves it days ahead, and by the wall clock
/// every record of a mail still being retried would have expired, the retry
/// then sending every copy again. Time while the machine is down is not
/// counted (nothing can measure it), nor time between the last save and a
/// crash: the journal's clock can only run slow, so a record lives at least
/// `expire_days` of uptime, never less. Postfix's retries (and its
/// `maximal_queue_lifetime`, 5 days by default) run on uptime too.
package struct JournalClock: Sendable {
    /// This boot's identity (`/proc/sys/kernel/random/boot_id`).
    package var bootID: @Sendable () -> String
    /// Seconds since this boot, suspended time included (`CLOCK_BOOTTIME`).
    package var sinceBoot: @Sendable () -> Int64

    /// A clock from the two readings (tests pass their own).
    package init(bootID: @escaping @Sendable () -> String, sinceBoot: @escaping @Sendable () -> Int64) {
        self.bootID = bootID
        self.sinceBoot = sinceBoot
    }

    /// The machine's.
    package static let system = JournalClock(
        bootID: {
            let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        },
        sinceBoot: {
            var now = timespec()
            clock_gettime(CLOCK_BOOTTIME, &now)
            return Int64(now.tv_sec)
        })

    /// What the clock says now, and what it was read from.
    struct Reading {
        /// Seconds of the journal's clock now.
        var now: Int64
        var boot: String
        var sinceBoot: Int64
        /// False when the file holds this reading already (or near enough to it).
        var changed: Bool
    }

    static let header = "mailsec-journal-clock 1"
    /// Far beyond any uptime, far below overflow.
    static let limit: Int64 = 1 << 50

    /// Reads the folder's clock file and advances it by this boot's uptime
    /// since it was saved. A missing or damaged file starts the clock at 0:
    /// records stamped later then look younger, never older.
    func read(folder: String) -> Reading {
        let boot = bootID(), since = max(0, min(sinceBoot(), Self.limit))
        let fields = ((try? String(contentsOfFile: folder + "/clock", encoding: .utf8)) ?? "").split(separator: "\n")
        let saved = fields.count == 2 && fields[0] == Self.header ? fields[1].split(separator: " ") : []
        guard saved.count == 3, let savedSince = Int64(saved[1]), let savedNow = Int64(saved[2]),
              (0...Self.limit).contains(savedSince), (0...Self.limit).contains(savedNow), !boot.isEmpty
        else { return Reading(now: 0, boot: boot, sinceBoot: since, changed: true) }
        guard saved[0] == boot else {
            // Rebooted: the time down is not known, and not counted.
            return Reading(now: savedNow, boot: boot, sinceBoot: since, changed: true)
        }
        let elapsed = max(0, since - savedSince)
        return Reading(now: min(savedNow + elapsed, Self.limit), boot: boot, sinceBoot: since, changed: elapsed >= 60)
    }

    /// Saves `reading` when it moved on (written whole and renamed into
    /// place; not synced: a save lost in a crash only makes the clock slow).
    /// False when it could not be saved.
    func save(_ reading: Reading, folder: String) -> Bool {
        guard reading.changed else { return true }
        guard !reading.boot.isEmpty else { return false }
        let bytes = Array("\(Self.header)\n\(reading.boot) \(reading.sinceBoot) \(reading.now)\n".utf8)
        do throws(DurableFile.Failure) { try DurableFile.replace(folder + "/clock", with: bytes, sync: false) } catch { return false }
        return true
    }
}
