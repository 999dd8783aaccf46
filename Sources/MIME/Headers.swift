internal import CGMime
import Foundation

/// One header field, copied out of GMime.
public struct Header: Sendable, Hashable {
    /// The field name as written.
    public let name: String
    /// The value with encoded-words decoded and the charset converted to
    /// UTF-8 (`g_mime_header_get_value`, unfolded).
    public let value: String
    /// The value exactly as it stands in the message, folding included
    /// (`g_mime_header_get_raw_value`).
    public let rawValue: String
}

/// A mailbox: display name and address.
public struct MailAddress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The display name, decoded; empty when there is none.
    public let name: String
    /// The address, `local@domain`.
    public let address: String

    /// An address with an optional display name.
    public init(name: String = "", address: String) {
        self.name = name
        self.address = address
    }

    /// `Name <address>`, or the bare address without a name.
    public var description: String { name.isEmpty ? address : "\(name) <\(address)>" }
}

/// The address header fields of a message (`GMimeAddressType`).
public enum AddressField: Sendable, CaseIterable {
    case sender, from, replyTo, to, cc, bcc

    var raw: GMimeAddressType {
        switch self {
        case .sender: GMIME_ADDRESS_TYPE_SENDER
        case .from: GMIME_ADDRESS_TYPE_FROM
        case .replyTo: GMIME_ADDRESS_TYPE_REPLY_TO
        case .to: GMIME_ADDRESS_TYPE_TO
        case .cc: GMIME_ADDRESS_TYPE_CC
        case .bcc: GMIME_ADDRESS_TYPE_BCC
        }
    }
}

/// A media type with its parameters (`GMimeContentType`), copied out.
public struct ContentType: Sendable, Hashable, CustomStringConvertible {
    /// The type, lower-cased, e.g. `text`.
    public let type: String
    /// The subtype, lower-cased, e.g. `plain`.
    public let subtype: String
    /// Parameters by lower-cased name, values decoded (RFC 2231).
    public let parameters: [String: String]

    /// True when the type is `type/subtype` (case-insensitive).
    public func `is`(_ type: String, _ subtype: String) -> Bool {
        self.type == type.lowercased() && self.subtype == subtype.lowercased()
    }

    /// `type/subtype`, without parameters.
    public var description: String { "\(type)/\(subtype)" }

    init(_ raw: UnsafeMutablePointer<GMimeContentType>?) {
        guard let raw else {
            self.type = "text"; self.subtype = "plain"; self.parameters = [:]
            return
        }
        type = g_mime_content_type_get_media_type(raw).map { String(cString: $0).lowercased() } ?? "application"
        subtype = g_mime_content_type_get_media_subtype(raw).map { String(cString: $0).lowercased() } ?? "octet-stream"
        var parameters: [String: String] = [:]
        if let list = g_mime_content_type_get_parameters(raw) {
            for index in 0..<g_mime_param_list_length(list) {
                guard let param = g_mime_param_list_get_parameter_at(list, index),
                      let name = g_mime_param_get_name(param) else { continue }
                parameters[String(cString: name).lowercased()] = g_mime_param_get_value(param).map { String(cString: $0) } ?? ""
            }
        }
        self.parameters = parameters
    }
}

/// Reads the header list of any GMime object.
/// How many header fields `object` has, without decoding any.
func headerCount(of object: UnsafeMutablePointer<GMimeObject>) -> Int {
    g_mime_object_get_header_list(object).map { Int(g_mime_header_list_get_count($0)) } ?? 0
}

func headers(of object: UnsafeMutablePointer<GMimeObject>) -> [Header] {
    guard let list = g_mime_object_get_header_list(object) else { return [] }
    return (0..<g_mime_header_list_get_count(list)).compactMap { index in
        guard let header = g_mime_header_list_get_header_at(list, index),
              let name = g_mime_header_get_name(header) else { return nil }
        return Header(
            name: String(cString: name),
            value: g_mime_header_get_value(header).map { String(cString: $0) } ?? "",
            rawValue: g_mime_header_get_raw_value(header).map { String(cString: $0) } ?? "")
    }
}

/// Appends a header field to `object` with `value` as its raw value (a space
/// in front, a newline after): written out exactly so, never encoded again.
func appendRawHeader(to object: UnsafeMutablePointer<GMimeObject>, _ name: String, _ value: String) throws {
    guard value.utf8.allSatisfy({ $0 < 0x80 && $0 != 13 }) else {
        throw MIMEError(.invalidArgument, detail: "raw header value must be 7-bit")
    }
    g_mime_object_append_header(object, name, "", nil)
    guard let list = g_mime_object_get_header_list(object),
          let header = g_mime_header_list_get_header_at(list, g_mime_header_list_get_count(list) - 1)
    else { throw MIMEError(.invalidArgument, detail: "header list") }
    g_mime_header_set_raw_value(header, " " + value + "\n")
}
