import Foundation
@testable import SMTP
import Testing
import TestSupport

/// A private Postfix on loopback (its own configuration, queue and log under
/// a temporary folder; the system's Postfix is not touched): `smtpd` with
/// STARTTLS on one port and implicit TLS on another, using throwaway
/// certificates, which hands every transaction as it happens to `smtp-sink`
/// (smtpd_proxy_filter) that writes each message to a file. Needs root.
final class PrivatePostfix {
    static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/postfix")
            && FileManager.default.isExecutableFile(atPath: "/usr/sbin/smtp-sink")
    }

    let folder: String
    let certificates: Certificates
    let startTLSPort: Int, implicitTLSPort: Int, sinkPort: Int
    private let sink: Process
    private var conf: String { folder + "/conf" }

    init() throws {
        folder = try makePrivateDirectory(prefix: "ms-pf")
        chmod(folder, 0o755)
        certificates = try Certificates()
        startTLSPort = try freePort(); implicitTLSPort = try freePort(); sinkPort = try freePort()
        for sub in ["conf", "queue", "data", "sink"] { try FileManager.default.createDirectory(atPath: folder + "/" + sub, withIntermediateDirectories: true) }
        chmod(folder + "/sink", 0o777)
        sink = Process()
        sink.executableURL = URL(fileURLWithPath: "/usr/sbin/smtp-sink")
        sink.arguments = ["-u", "nobody", "-d", folder + "/sink/%M.", "127.0.0.1:\(sinkPort)", "100"]
        sink.standardOutput = FileHandle.nullDevice
        sink.standardError = FileHandle.nullDevice
        try sink.run()
        var master = try String(contentsOfFile: "/etc/postfix/master.cf", encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("smtp      inet") }
            .joined(separator: "\n")
        master += """

        127.0.0.1:\(startTLSPort) inet n - n - - smtpd
        127.0.0.1:\(implicitTLSPort) inet n - n - - smtpd
          -o smtpd_tls_wrappermode=yes

        """
        try master.write(toFile: conf + "/master.cf", atomically: true, encoding: .utf8)
        try """
        compatibility_level = 3.6
        queue_directory = \(folder)/queue
        data_directory = \(folder)/data
        mail_owner = postfix
        setgid_group = postdrop
        inet_interfaces = 127.0.0.1
        inet_protocols = ipv4
        myhostname = localhost
        mydestination =
        mynetworks = 127.0.0.0/8
        smtpd_relay_restrictions = permit_mynetworks, reject
        smtpd_proxy_filter = 127.0.0.1:\(sinkPort)
        smtpd_tls_security_level = may
        smtpd_tls_cert_file = \(certificates.path("server.pem"))
        smtpd_tls_key_file = \(certificates.path("server.key"))
        debug_peer_list = 127.0.0.1
        maillog_file = \(folder)/maillog
        maillog_file_prefixes = \(folder)

        """.write(toFile: conf + "/main.cf", atomically: true, encoding: .utf8)
        chmod(certificates.folder, 0o755)
        chmod(certificates.path("server.key"), 0o644)  // smtpd reads it after dropping privileges
        _ = try run("/usr/sbin/postconf", ["-c", conf, "-F", "*/*/chroot = n"])
        _ = try run("/bin/chown", ["postfix", folder + "/data"])
        let started = try run("/usr/sbin/postfix", ["-c", conf, "start"])
        guard started.status == 0 else { stop(); throw PostfixStartError(description: "postfix start: \(started.output) \(started.errors)") }
        for port in [startTLSPort, implicitTLSPort, sinkPort] { try waitForListener(port) }
    }

    func stop() {
        _ = try? run("/usr/sbin/postfix", ["-c", conf, "abort"])
        if sink.isRunning { kill(sink.processIdentifier, SIGKILL); sink.waitUntilExit() }
        certificates.remove()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The messages smtp-sink received (its dump files: the envelope as
    /// X- fields, then the message as smtpd passed it on).
    func received() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/sink")) ?? []
        return files.sorted().compactMap { try? String(contentsOfFile: folder + "/sink/" + $0, encoding: .utf8) }
    }

    /// Postfix's log of the conversation (debug_peer_list shows each command).
    var log: String { (try? String(contentsOfFile: folder + "/maillog", encoding: .utf8)) ?? "" }
}

@Suite(.promptly, .serialized, .enabled(if: PrivatePostfix.available, "needs root, Postfix and smtp-sink (scripts/bootstrap --postfix)"))
struct PostfixTests {
    static let message = "From: a@example.org\r\nTo: b@example.org\r\nSubject: through Postfix\r\n\r\nline\r\n.leading dot\r\n.\r\n..\r\nend\r\n"

    @Test func startTLSAndImplicitTLSWithPostfix() async throws {
        let postfix = try PrivatePostfix()
        defer { postfix.stop() }
        for (security, port) in [(SMTPServer.Security.startTLS, postfix.startTLSPort), (.tls, postfix.implicitTLSPort)] {
            let server = SMTPServer(host: "localhost", port: port, security: security, caFile: postfix.certificates.ca,
                                    heloName: "client.test", timeouts: .uniform(step: 20, finalReply: 30))
            let connection = try await SMTPConnection.open(server)
            #expect(await connection.isEncrypted)
            #expect(await connection.extensions.has("PIPELINING"))
            let delivery = try await connection.send(from: "a@example.org", to: ["b@example.org", "c@example.org"],
                                                     message: Array(Self.message.utf8))
            #expect(delivery.allAccepted, "\(delivery)")
            await connection.quit()
        }
        let received = postfix.received()
        #expect(received.count == 2)
        // smtpd passes the message on under its own Received: field (ESMTPS: it came under
        // TLS); the rest is byte-exact (smtp-sink's dump ends with one empty line of its own).
        let sent = Self.message.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(received.allSatisfy { $0.contains("(Postfix) with ESMTPS;") && $0.hasSuffix(")\n" + sent + "\n") },
                "\(received)")
        // The log shows each command (so the next test's "no MAIL FROM" can fail).
        #expect(postfix.log.contains("MAIL FROM:<a@example.org>"))
    }

    @Test func postfixWithACertificateWeDoNotTrustGetsNoMail() async throws {
        let postfix = try PrivatePostfix()
        defer { postfix.stop() }
        for (security, port) in [(SMTPServer.Security.startTLS, postfix.startTLSPort), (.tls, postfix.implicitTLSPort)] {
            // Another CA's file, and the system store: neither knows the throwaway CA.
            // (Wrong names and expired certificates: SMTPTLSTests, against the scripted peer.)
            for ca in [postfix.certificates.path("otherca.pem"), nil] {
                let server = SMTPServer(host: "localhost", port: port, security: security, caFile: ca,
                                        heloName: "client.test", timeouts: .uniform(step: 20, finalReply: 30))
                await #expect {
                    let connection = try await SMTPConnection.open(server)
                    _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Array(Self.message.utf8))
                } throws: { ($0 as? SMTPError)?.code == .tlsFailed }
            }
        }
        #expect(postfix.received().isEmpty)
        #expect(!postfix.log.contains("MAIL FROM"))
    }
}

/// Postfix did not start; what it said, for the test's failure.
struct PostfixStartError: Error, CustomStringConvertible {
    let description: String
}
