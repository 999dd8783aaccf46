import Foundation

/// Assembly of PGP/MIME structures (RFC 3156). The cryptography itself is the
/// caller's: this layer only shapes MIME, so it needs no OpenPGP library.
public enum PGPMIME {
    /// A detached signature as the signer returns it.
    public struct Signature: Sendable {
        /// The ASCII-armored detached signature.
        public var armored: [UInt8]
        /// The `micalg` parameter, e.g. `pgp-sha256` (RFC 3156 §5).
        public var micalg: String

        /// An armored detached signature made with the hash `micalg` names.
        public init(armored: [UInt8], micalg: String) {
            self.armored = armored
            self.micalg = micalg
        }
    }

    /// Signs `content` as `multipart/signed` (RFC 3156 §5).
    ///
    /// `sign` receives the canonical form of `content` (7-bit clean, CRLF
    /// line endings) and returns a detached signature over exactly those
    /// bytes. The signed part of the result is parsed back from the same bytes,
    /// so what is written out is what was signed. `content` itself is
    /// re-encoded in place (see ``MIMEEntity/canonicalBytes()``).
    public static func signed(_ content: MIMEEntity, sign: ([UInt8]) throws -> Signature) throws -> MIMEEntity {
        let canonical = content.canonicalBytes()
        let signature = try sign(canonical)
        let (signedPart, _) = try MIMEEntity.parse(canonical)
        let signaturePart = try MIMEEntity.part(signature.armored, type: "application", subtype: "pgp-signature", filename: "signature.asc")
        signaturePart.setHeader("Content-Description", "OpenPGP digital signature")
        let multipart = MIMEEntity.multipart("signed", [signedPart, signaturePart])
        multipart.setContentTypeParameter("protocol", "application/pgp-signature")
        multipart.setContentTypeParameter("micalg", signature.micalg)
        return multipart
    }

    /// Wraps armored OpenPGP data as `multipart/encrypted` (RFC 3156 §4): a
    /// version part `application/pgp-encrypted` and the data as
    /// `application/octet-stream`.
    public static func encrypted(armoredCiphertext: [UInt8]) throws -> MIMEEntity {
        let version = try MIMEEntity.part(Array("Version: 1\n".utf8), type: "application", subtype: "pgp-encrypted")
        version.setHeader("Content-Description", "PGP/MIME version identification")
        let data = try MIMEEntity.part(armoredCiphertext, type: "application", subtype: "octet-stream", filename: "encrypted.asc")
        data.setHeader("Content-Description", "OpenPGP encrypted message")
        data.setHeader("Content-Disposition", "inline; filename=\"encrypted.asc\"")
        let multipart = MIMEEntity.multipart("encrypted", [version, data])
        multipart.setContentTypeParameter("protocol", "application/pgp-encrypted")
        return multipart
    }

    /// The armored OpenPGP data of a `multipart/encrypted` entity, or nil if
    /// `entity` is not RFC 3156 encrypted.
    public static func ciphertext(of entity: MIMEEntity) -> [UInt8]? {
        let type = entity.contentType
        guard type.is("multipart", "encrypted"),
              type.parameters["protocol"]?.lowercased() == "application/pgp-encrypted" else { return nil }
        let children = entity.children
        guard children.count == 2,
              children[0].contentType.is("application", "pgp-encrypted"),
              children[1].contentType.is("application", "octet-stream") else { return nil }
        return children[1].content
    }
}
