import Foundation
import Platform
import SMTP
import Testing
import TestSupport

/// TLS and AUTH against a peer with throwaway certificates: nothing of a
/// transaction (no MAIL FROM) and no password ever leaves unless TLS with a
/// verified certificate for the right name is up.
@Suite(.promptly, .serialized) struct SMTPTLSTests {
    static let message = Array("From: a@example.org\nSubject: hi\n\nbody\n".utf8)

    static func server(_ peer: Peer, _ security: SMTPServer.Security, ca: String?, host: String = "localhost") -> SMTPServer {
        SMTPServer(host: host, port: peer.port, security: security, caFile: ca, heloName: "client.test",
                   timeouts: .uniform(step: 10, finalReply: 20))
    }

    @Test(arguments: [SMTPServer.Security.startTLS, .tls])
    func verifiedTLSCarriesEverything(_ security: SMTPServer.Security) async throws {
        let certificates = try Certificates()
        defer { certificates.remove() }
        let peer = try Peer(certificates.serving("server") + (security == .tls ? ["--implicit-tls"] : []) + ["--auth", "me:pa ss"])
        defer { peer.stop() }
        for host in ["localhost", "127.0.0.1"] {
            let credentials = SMTPCredentials(username: "me", secret: SecretBytes("pa ss"))
            let connection = try await SMTPConnection.open(Self.server(peer, security, ca: certificates.ca, host: host),
                                                           credentials: credentials)
            #expect(await connection.isEncrypted)
            #expect(try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message).allAccepted)
            await connection.quit()
        }
        let log = peer.log()
        // Everything after STARTTLS went under TLS; EHLO was said again there.
        let lines = log.filter { $0["line"] != nil }
        let afterTLS = lines.drop { ($0["tls"] as? Bool) != true }
        #expect(lines.filter { ($0["tls"] as? Bool) != true }.allSatisfy {
            let line = ($0["line"] as? String ?? "").uppercased()
            return line.hasPrefix("EHLO") || line == "STARTTLS"
        })
        #expect(afterTLS.contains { ($0["line"] as? String)?.hasPrefix("EHLO") == true })
        #expect(peer.messages().count == 2)
    }

    /// Wrong CA, wrong name, expired: tlsFailed, and no MAIL FROM (and no AUTH) reached the server.
    @Test(arguments: ["other", "wrongname", "expired"], [SMTPServer.Security.startTLS, .tls])
    func unverifiableCertificateSendsNothing(_ certificate: String, _ security: SMTPServer.Security) async throws {
        let certificates = try Certificates()
        defer { certificates.remove() }
        let peer = try Peer(certificates.serving(certificate) + (security == .tls ? ["--implicit-tls"] : []) + ["--auth", "me:secret"])
        defer { peer.stop() }
        await #expect {
            let connection = try await SMTPConnection.open(Self.server(peer, security, ca: certificates.ca),
                                                           credentials: SMTPCredentials(username: "me", secret: SecretBytes("secret")))
            _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message)
        } throws: { ($0 as? SMTPError).map { $0.code == .tlsFailed && !$0.isTemporary } ?? false }
        #expect(!peer.sawMail)
        #expect(!peer.lines().contains { $0.uppercased().hasPrefix("AUTH") })
    }

    /// The system store does not know the throwaway CA: refused too.
    @Test func systemStoreDoesNotTrustAStranger() async throws {
        let certificates = try Certificates()
        defer { certificates.remove() }
        let peer = try Peer(certificates.serving("server"))
        defer { peer.stop() }
        await #expect {
            _ = try await SMTPConnection.open(Self.server(peer, .startTLS, ca: nil))
        } throws: { ($0 as? SMTPError)?.code == .tlsFailed }
        #expect(!peer.sawMail)
    }

    @Test func missingSTARTTLSSendsNothing() async throws {
        let certificates = try Certificates()
        defer { certificates.remove() }
        let peer = try Peer(certificates.serving("server") + ["--no-starttls", "--auth", "me:secret"])
        defer { peer.stop() }
        await #expect {
            _ = try await SMTPConnection.open(Self.server(peer, .startTLS, ca: certificates.ca),
                                              credentials: SMTPCredentials(username: "me", secret: SecretBytes("secret")))
        } throws: { ($0 as? SMTPError).map { $0.code == .tlsUnavailable && !$0.isTemporary } ?? false }
        #expect(peer.lines().allSatisfy { $0.uppercased().hasPrefix("EHLO") })
    }

    /// CVE-2011-0411 turned around: a reply slipped in after "220 ready",
    /// before the handshake, is refused, never read as if under TLS.
    @Test func textInjectedBeforeTheHandshakeIsRefused() async throws {
        let certificates = try Certificates()
        defer { certificates.remove() }
        let peer = try Peer(certificates.serving("server") + ["--inject-after-starttls"])
        defer { peer.stop() }
        await #expect {
            let connection = try await SMTPConnection.open(Self.server(peer, .startTLS, ca: certificates.ca))
            _ = try await connection.send(from: "a@example.org", to: ["b@example.org"], message: Self.message)
        } throws: { ($0 as? SMTPError)?.code == .protocolError }
        #expect(!peer.sawMail)
    }

    @Test(arguments: [SMTPCredentials.Mechanism.plain, .login])
    func wrongPasswordIsAuthenticationFailed(_ mechanism: SMTPCredentials.Mechanism) async throws {
        let certificates = try Certificates()
        defer { certificates.remove() }
        let peer = try Peer(certificates.serving("server") + ["--auth", "me:right"])
        defer { peer.stop() }
        let wrong = SMTPCredentials(username: "me", secret: SecretBytes("wrong-password-9f3"), mechanisms: [mechanism])
        await #expect {
            _ = try await SMTPConnection.open(Self.server(peer, .startTLS, ca: certificates.ca), credentials: wrong)
        } throws: { error in
            guard let error = error as? SMTPError else { return false }
            return error.code == .authenticationFailed && !error.isTemporary && !error.description.contains("wrong-password")
        }
        let right = SMTPCredentials(username: "me", secret: SecretBytes("right"), mechanisms: [mechanism])
        let connection = try await SMTPConnection.open(Self.server(peer, .startTLS, ca: certificates.ca), credentials: right)
        await connection.quit()
        #expect(!peer.sawMail)
    }

    /// No password over plain text, unless to loopback and explicitly allowed.
    @Test func noPasswordOverPlainText() async throws {
        let peer = try Peer(["--auth", "me:secret"])
        defer { peer.stop() }
        var server = SMTPServer(host: "127.0.0.1", port: peer.port, security: .none, heloName: "client.test")
        let credentials = SMTPCredentials(username: "me", secret: SecretBytes("secret"))
        await #expect { _ = try await SMTPConnection.open(server, credentials: credentials) } throws: {
            ($0 as? SMTPError)?.code == .authenticationFailed
        }
        #expect(!peer.lines().contains { $0.uppercased().hasPrefix("AUTH") })
        server.allowPlaintextAuthOnLoopback = true
        let connection = try await SMTPConnection.open(server, credentials: credentials)
        await connection.quit()
        #expect(peer.lines().contains { $0.uppercased().hasPrefix("AUTH PLAIN") })
    }

    @Test func secretBytesAreNotPrinted() {
        let secret = SecretBytes("hunter2")
        #expect(!"\(secret)".contains("hunter2") && secret.count == 7)
        var source = Array("hunter2".utf8)
        _ = SecretBytes(consuming: &source)
        #expect(source.allSatisfy { $0 == 0 })
    }
}
