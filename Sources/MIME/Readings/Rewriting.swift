internal import CGMime
internal import CMailsecShims

/// Changes that redaction makes where a reading showed a marker: parameter
/// values and the content of any leaf.
extension MIMEEntity {
    /// Calls `transform` with every Content-Type and Content-Disposition
    /// parameter: its name and its readings, first as GMime decoded it (RFC
    /// 2231 continuations put together, `filename*` and `filename` each on
    /// its own), then as ``FieldReadings`` reads the field (charsets GMime
    /// cannot convert, both byte orders …). A non-nil result replaces the
    /// value, and GMime writes the field anew.
    package func rewriteParameters(_ transform: (_ name: String, _ readings: [String]) throws -> String?) rethrows {
        var lists: [(field: String, list: UnsafeMutablePointer<GMimeParamList>)] = []
        if let type = g_mime_object_get_content_type(raw), let list = g_mime_content_type_get_parameters(type) {
            lists.append(("content-type", list))
        }
        if let disposition = g_mime_object_get_content_disposition(raw),
           let list = g_mime_content_disposition_get_parameters(disposition) { lists.append(("content-disposition", list)) }
        let fields = headers
        for (field, list) in lists {
            // Our own reading of the field's parameters, by name without the `*`.
            var ours: [String: [String]] = [:]
            for header in fields where header.name.lowercased() == field {
                for parameter in FieldReadings.parameters(FieldReadings.unfolded(header.rawValue)) {
                    ours[parameter.name.hasSuffix("*") ? String(parameter.name.dropLast()) : parameter.name, default: []] += parameter.texts
                }
            }
            for index in 0..<g_mime_param_list_length(list) {
                guard let param = g_mime_param_list_get_parameter_at(list, index), let name = g_mime_param_get_name(param) else { continue }
                let value = g_mime_param_get_value(param).map { String(cString: $0) } ?? ""
                let key = String(cString: name)
                if let replaced = try transform(key, [value] + (ours[key.lowercased()] ?? [])) {
                    g_mime_param_set_value(param, replaced)
                    g_mime_param_set_charset(param, "utf-8")
                }
            }
        }
    }

    /// Replaces the decoded content of a leaf, written with a 7-bit-safe
    /// transfer encoding; with `charset`, the Content-Type's charset is set too.
    package func replaceContent(_ bytes: [UInt8], charset: String?) throws {
        guard mailsec_gmime_is_part(raw) != 0 else { throw MIMEError(.invalidArgument, detail: "not a leaf part") }
        setContent(bytes)
        if let charset { g_mime_object_set_content_type_parameter(raw, "charset", charset) }
    }
}
