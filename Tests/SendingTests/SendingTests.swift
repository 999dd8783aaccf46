import Foundation
import Outbox
import Sending
import Settings
import SMTP
import Store
import Testing
import TestSupport

@Suite("Password command")
struct PasswordTests {
    func password(_ command: String, timeout: TimeInterval = 10) throws -> [UInt8] {
        try Password.run(command, timeout: timeout).withUnsafeBytes { Array($0) }
    }

    @Test("the output less one final line break is the password, whatever bytes it holds")
    func output() throws {
        #expect(try password("printf 'secret\\n'") == Array("secret".utf8))
        #expect(try password("printf 'two\\nlines\\r\\n'") == Array("two\nlines".utf8))
        for _ in 0..<5 {
            let bytes = (0..<Int.random(in: 1...200)).map { _ in UInt8.random(in: 1...255) }.filter { $0 != 10 && $0 != 13 }
            guard !bytes.isEmpty else { continue }
            let octal = bytes.map { String(format: "\\%03o", $0) }.joined()
            #expect(try password("printf '\(octal)'") == bytes)
        }
    }

    @Test("a command that leaves a child holding its output open: the password as soon as the shell is done, not the time-out")
    func backgroundChild() throws {
        let folder = try makePrivateDirectory(prefix: "ms-pw")
        defer {
            // The test stops what it started: the children left in the background.
            for name in ["one", "two"] {
                if let pid = (try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                    kill(pid, SIGKILL)
                }
            }
            try? FileManager.default.removeItem(atPath: folder)
        }
        // Waiting for the end of file ran into the time-out: no password at all.
        #expect(try password("printf 'secret\\n'; sleep 60 & echo $! > \(folder)/one", timeout: 20) == Array("secret".utf8))
        #expect(throws: PasswordError.self) { try password("sleep 60 & echo $! > \(folder)/two; exit 2", timeout: 20) }
    }

    @Test("a failing, silent, endless or talkative command is an error that shows none of its output")
    func failures() {
        let cases = ["echo leaked-word; exit 3", "true", "sleep 30", "yes leaked-word | head -c 10000"]
        for command in cases {
            do {
                _ = try password(command, timeout: 1)
                Issue.record("\(command) gave a password")
            } catch {
                #expect(!"\(error)".contains("leaked-word"))
            }
        }
    }

    @Test("a hanging command with children: a time-out (not a refusal), its whole group ended, none of our standard error lent to it")
    func hangingGroup() throws {
        let folder = try makePrivateDirectory(prefix: "ms-pw")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A child and a grandchild that would sleep for five minutes, each
        // saying where its standard error goes and which group it is in.
        let command = "echo leaked-word >&2; readlink /proc/self/fd/2 > \(folder)/stderr; "
            + "(sleep 300 & echo $! > \(folder)/grandchild; sleep 300) & echo $! > \(folder)/child; "
            + "cut -d' ' -f5 /proc/self/stat > \(folder)/group; sleep 300"
        do {
            _ = try password(command, timeout: 1)
            Issue.record("a hanging command gave a password")
        } catch let error as PasswordError {
            #expect(error.timedOut, "\(error)")
            #expect(error.description.contains("within 1 s"), "\(error)")
        }
        func number(_ name: String) -> Int32? {
            (try? String(contentsOfFile: folder + "/" + name, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        let child = try #require(number("child")), grandchild = try #require(number("grandchild"))
        #expect(isGone(child) && isGone(grandchild), "the command's children outlived it")
        let stderr = try String(contentsOfFile: folder + "/stderr", encoding: .utf8)
        #expect(stderr.trimmingCharacters(in: .whitespacesAndNewlines) == "/dev/null", "its standard error: \(stderr)")
        let group = try #require(number("group"))
        #expect(group != getpgrp(), "the command ran in our process group")
        // A command that answers, but whose shell lingers with its output closed, is ended at the time-out too.
        #expect(throws: PasswordError.self) { try password("printf secret; exec >&-; sleep 300", timeout: 1) }
    }

    @Test("the command does not read our standard input and is not in our argv")
    func isolation() throws {
        #expect(try password("cat; printf x") == Array("x".utf8))
    }
}

@Suite("Sent folder")
struct SentFolderTests {
    @Test("a copy lands in new/ whole, private, with nothing left in tmp/")
    func filing() throws {
        let folder = try makePrivateDirectory(prefix: "ms-sent")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sent = SentFolder(path: folder + "/Sent")
        var paths: Set<String> = []
        for size in [0, 1, 4096, 300_000] {
            let bytes = (0..<size).map { _ in UInt8.random(in: 0...255) }
            let path = try sent.file(bytes)
            paths.insert(path)
            #expect(path.hasPrefix(folder + "/Sent/new/"))
            #expect(Array(FileManager.default.contents(atPath: path) ?? Data()) == bytes)
            var info = stat()
            stat(path, &info)
            #expect(info.st_mode & 0o777 == 0o600)
        }
        #expect(paths.count == 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/Sent/tmp").isEmpty)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder + "/Sent")) == ["tmp", "new", "cur"])
    }

    @Test("a folder that cannot be made is an error naming it")
    func unwritable() {
        #expect(throws: SentFolderError.self) { try SentFolder(path: "/proc/nope/Sent").file([1]) }
    }
}
