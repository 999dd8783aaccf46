import Foundation

extension GnuPG {
    /// The key data Autocrypt Level 1 asks for, for each key and address:
    /// the primary key, the one user ID with that address, the encryption
    /// subkey GnuPG would encrypt to (the newest usable one), and their
    /// self-signatures; nothing else, whatever else the key holds (other
    /// names and addresses, older subkeys, signing subkeys, photos).
    ///
    /// All keys come from one export (`gpgme_op_export_keys` with
    /// `GPGME_EXPORT_MODE_MINIMAL`, which keeps only the latest self-signature
    /// of each user ID); the packets are then chosen here, since GPGME 1.18
    /// cannot pass gpg an export filter. Binary, in the order given.
    package func autocryptKeydata(_ wanted: [(key: Key, address: String)]) throws -> [[UInt8]] {
        guard !wanted.isEmpty else { return [] }
        var unique: [Key] = []
        for (key, _) in wanted where !unique.contains(key) { unique.append(key) }
        let exported = try exportKeys(unique, armored: false, minimal: true)
        // One key block per primary key packet.
        var blocks: [String: [Packet]] = [:]
        var current: [Packet] = []
        var currentFingerprint: String?
        func close() { if let currentFingerprint { blocks[currentFingerprint] = current } }
        for packet in Packets.list(exported) {
            if packet.tag == 6 {
                close()
                current = []
                currentFingerprint = Packets.fingerprint(of: packet)
            }
            current.append(packet)
        }
        close()
        return try wanted.map { key, address in
            guard let block = blocks[key.fingerprint] else {
                // A key whose packets cannot be told apart (not version 4): exported whole, as before.
                return try exportKeys([key], armored: false, minimal: true)
            }
            return Self.minimal(block, key: key, address: address)
        }
    }

    /// What ``autocryptKeydata(_:)`` keeps of `key` for `address`, as the
    /// listing that made `key` judged it: the user ID and the encryption
    /// subkey (its fingerprint). The choice can change with time alone (a
    /// subkey expires) while the keyring stays as it was, so a cache of
    /// exports files each under it too.
    package static func autocryptChoice(_ key: Key, address: String) -> (userID: String?, subkey: String?) {
        let valid = key.userIDs.filter { !$0.isRevoked && !$0.isInvalid }
        let userID = (valid.first { $0.address.lowercased() == address.lowercased() } ?? valid.first)?.uid
        let subkey = key.subkeys.dropFirst().filter(\.isUsableForEncryption)
            .max { ($0.created ?? .distantPast) < ($1.created ?? .distantPast) }?.fingerprint
        return (userID, subkey)
    }

    /// The packets of one key block that Autocrypt keeps.
    static func minimal(_ block: [Packet], key: Key, address: String) -> [UInt8] {
        let (userID, subkey) = autocryptChoice(key, address: address)
        var kept: [UInt8] = []
        // What the signatures that follow a packet belong to, and which of them are kept.
        var keepSignatures: Set<UInt8> = []
        var keptUserID = false
        for packet in block {
            switch packet.tag {
            case 6:
                kept += packet.bytes
                keepSignatures = [0x1F]  // direct-key self-signature
            case 13 where !keptUserID && String(decoding: packet.body, as: UTF8.self) == userID:
                kept += packet.bytes
                keptUserID = true
                keepSignatures = [0x10, 0x11, 0x12, 0x13]
            case 14 where Packets.fingerprint(of: packet) == subkey:
                kept += packet.bytes
                keepSignatures = [0x18]  // subkey binding
            case 2:
                if let type = packet.signatureType, keepSignatures.contains(type) { kept += packet.bytes }
            default:
                keepSignatures = []
            }
        }
        return kept
    }
}
