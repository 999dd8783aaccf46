internal import CGumbo
internal import CGumboShims

/// An HTML document as a browser's parser builds it (the HTML5 tree
/// construction of Gumbo, `gumbo_parse_with_options`), copied out of Gumbo's
/// tree into Swift values and flattened into document order.
///
/// Flat, not a tree of values: a sender can nest elements hundreds of
/// thousands deep, and both building and destroying nested Swift values
/// recurses once per level. Every `start` is followed, after its content, by
/// exactly one `end`; the doctype is left out.
package struct HTMLDocument: Sendable {
    /// The namespace an element was put in by the parser.
    package enum Namespace: Sendable, Hashable {
        /// Ordinary HTML.
        case html
        /// Inside `<svg>`.
        case svg
        /// Inside `<math>`.
        case mathML
    }

    /// An attribute, its name lower-cased and its value decoded as the parser did.
    package struct Attribute: Sendable, Hashable {
        /// The name, lower-cased by the parser (SVG's mixed-case names kept as Gumbo gives them).
        package let name: String
        /// The value, character references resolved.
        package let value: String

        /// An attribute named `name` with `value`.
        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// An element as the parser made it.
    package struct Element: Sendable, Hashable {
        /// The tag name as Gumbo normalised it (`gumbo_normalized_tagname`),
        /// lower-cased; for a tag Gumbo does not know, the name as written, ASCII lower-cased.
        package let name: String
        /// False for a tag Gumbo does not know (`GUMBO_TAG_UNKNOWN`): its name is the sender's text.
        package let known: Bool
        /// The namespace.
        package let namespace: Namespace
        /// The attributes, in the order written.
        package let attributes: [Attribute]
        /// True for a `<template>`, whose content is not part of the document shown.
        package let isTemplate: Bool
        /// True for an element the parser made again, not one the sender wrote there: a
        /// formatting element reopened in a later block, or cloned by the adoption agency
        /// (`<b title=…>` left open inside a span is reopened, title and all, after it).
        package var reopened = false
    }

    /// One step of the walk through the document.
    package enum Node: Sendable, Hashable {
        /// An element starts; its content follows up to the matching ``end``.
        case start(Element)
        /// The most recently started element that is still open ends.
        case end
        /// Character data (CDATA sections in foreign content included), references resolved.
        case text(String)
        /// A comment's text, without its delimiters (no reader shows it).
        case comment(String)
    }

    /// The document, in order: the `html` element first.
    package let nodes: [Node]

    /// The most elements open at once in the tree Gumbo built (the `html` element counts one).
    package let depth: Int

    /// True when the parser moved text or an element out of the place it was written:
    /// foster-parented out of a table (text written between `<table>` and its rows is
    /// shown before the table), found as text or an element the sender wrote that stands
    /// in the tree before what was written ahead of it. Where written and where shown then
    /// differ in order.
    package let movedByParser: Bool

    /// How many bytes Gumbo may allocate in all for each byte of input, and
    /// for any input: about three times what the densest ordinary markup
    /// takes (`a<b>` repeated, 82 bytes a byte). Markup that makes the HTML5
    /// tree quadratic in its size (formatting elements reopened in every block:
    /// 14 KB made 128 MB) is given up at that, in time linear in its size.
    package static let budgetPerByte = 256
    /// See ``budgetPerByte``.
    package static let budgetBase = 16 << 20

    /// Parses `html` as a browser does (no scripting, no fragment context).
    /// Throws ``HTMLError`` when the document may nest deeper than
    /// ``HTMLNesting/limit`` (checked before the parse, whose work grows with
    /// the square of the depth), when the parse needs more than its budget
    /// (``budgetPerByte``), or Gumbo returns no tree.
    package init(parsing html: String) throws(HTMLError) {
        var bytes = Array(html.utf8)
        if HTMLNesting(bytes).depth > HTMLNesting.limit { throw HTMLError(.tooDeep) }
        if bytes.isEmpty { bytes = [0x20] }   // Gumbo needs a buffer; a space parses as the empty document does
        let budget = bytes.count.multipliedReportingOverflow(by: Self.budgetPerByte)
        let result: Result<([Node], Int, Bool), HTMLError> = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                var exceeded: Int32 = 0
                var arena: UnsafeMutableRawPointer?
                guard let output = mailsec_gumbo_parse(chars.baseAddress, chars.count,
                                                       budget.overflow ? Int.max : budget.partialValue + Self.budgetBase,
                                                       &exceeded, &arena)
                else { return .failure(HTMLError(exceeded != 0 ? .tooComplex : .unreadable)) }
                defer { mailsec_gumbo_destroy(output, arena) }
                guard let root = output.pointee.root else { return .failure(HTMLError(.unreadable)) }
                return .success(Self.flatten(root))
            }
        }
        (nodes, depth, movedByParser) = try result.get()
    }

    /// The tree under `root` in document order, walked with a stack of our
    /// own rather than by recursion.
    private static func flatten(_ root: UnsafeMutablePointer<GumboNode>) -> ([Node], Int, Bool) {
        var nodes: [Node] = []
        var depth = 0
        var moved = false
        var lastOffset = 0   // the furthest source offset of text or a written element so far
        let fostered = GUMBO_INSERTION_FOSTER_PARENTED.rawValue
        let madeByParser = GUMBO_INSERTION_BY_PARSER.rawValue | GUMBO_INSERTION_IMPLIED.rawValue
            | GUMBO_INSERTION_RECONSTRUCTED_FORMATTING_ELEMENT.rawValue | GUMBO_INSERTION_ADOPTION_AGENCY_CLONED.rawValue
        // Each open element and the index of its next child.
        var stack: [(node: UnsafeMutablePointer<GumboNode>, next: Int)] = []
        func visit(_ node: UnsafeMutablePointer<GumboNode>) {
            switch node.pointee.type {
            case GUMBO_NODE_ELEMENT, GUMBO_NODE_TEMPLATE:
                let flags = node.pointee.parse_flags.rawValue
                if flags & fostered != 0 { moved = true }
                // An element the sender wrote (not one the parser made or reopened) stands after what was written before it.
                if flags & madeByParser == 0 {
                    let offset = Int(node.pointee.v.element.start_pos.offset)
                    if offset < lastOffset { moved = true }
                    lastOffset = max(lastOffset, offset)
                }
                nodes.append(.start(element(node)))
                stack.append((node, 0))
                depth = max(depth, stack.count)
            case GUMBO_NODE_TEXT, GUMBO_NODE_WHITESPACE, GUMBO_NODE_CDATA:
                // White space between a table's rows stays where it is; other text is moved before the
                // table. Gumbo 0.10 does not flag such text, so it counts as moved when it stands
                // in the tree before text or an element that was written ahead of it.
                if node.pointee.type != GUMBO_NODE_WHITESPACE {
                    let offset = Int(node.pointee.v.text.start_pos.offset)
                    if node.pointee.parse_flags.rawValue & fostered != 0 || offset < lastOffset { moved = true }
                    lastOffset = max(lastOffset, offset)
                }
                if let text = node.pointee.v.text.text { nodes.append(.text(String(cString: text))) }
            case GUMBO_NODE_COMMENT:
                if let text = node.pointee.v.text.text { nodes.append(.comment(String(cString: text))) }
            default:
                break   // the document node is never a child
            }
        }
        visit(root)
        while let top = stack.last {
            let children = top.node.pointee.v.element.children
            if top.next < Int(children.length) {
                stack[stack.count - 1].next += 1
                if let child = children.data[top.next] {
                    visit(child.assumingMemoryBound(to: GumboNode.self))
                }
            } else {
                stack.removeLast()
                nodes.append(.end)
            }
        }
        return (nodes, depth, moved)
    }

    private static func element(_ node: UnsafeMutablePointer<GumboNode>) -> Element {
        let element = node.pointee.v.element
        let namespace: Namespace = switch element.tag_namespace {
        case GUMBO_NAMESPACE_SVG: .svg
        case GUMBO_NAMESPACE_MATHML: .mathML
        default: .html
        }
        var attributes: [Attribute] = []
        attributes.reserveCapacity(Int(element.attributes.length))
        for index in 0..<Int(element.attributes.length) {
            guard let raw = element.attributes.data[index] else { continue }
            let attribute = raw.assumingMemoryBound(to: GumboAttribute.self).pointee
            attributes.append(Attribute(name: attribute.name.map { String(cString: $0) } ?? "",
                                        value: attribute.value.map { String(cString: $0) } ?? ""))
        }
        let known = element.tag != GUMBO_TAG_UNKNOWN
        let name: String
        if known, let normalised = gumbo_normalized_tagname(element.tag) {
            name = String(cString: normalised)
        } else {
            name = writtenName(element.original_tag)
        }
        var made = Element(name: name, known: known, namespace: namespace, attributes: attributes,
                           isTemplate: node.pointee.type == GUMBO_NODE_TEMPLATE)
        let again = GUMBO_INSERTION_RECONSTRUCTED_FORMATTING_ELEMENT.rawValue | GUMBO_INSERTION_ADOPTION_AGENCY_CLONED.rawValue
        made.reopened = node.pointee.parse_flags.rawValue & again != 0
        return made
    }

    /// The name in a start tag as written (`<x-Foo a=b>` gives `x-foo`): what
    /// follows `<` up to white space, `/` or `>`, ASCII lower-cased.
    private static func writtenName(_ tag: GumboStringPiece) -> String {
        guard let data = tag.data, tag.length > 1 else { return "" }
        var bytes: [UInt8] = []
        let raw = UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self)
        for index in 1..<tag.length {
            let byte = raw[index]
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D || byte == 0x2F || byte == 0x3E { break }
            bytes.append(byte >= 0x41 && byte <= 0x5A ? byte + 32 : byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The HTML could not be read: Gumbo gave no tree, or building it took more
/// than its budget (``HTMLDocument/budgetPerByte``).
package struct HTMLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why.
    package enum Reason: Sendable, Equatable {
        /// Gumbo returned no tree (no memory).
        case unreadable
        /// The tree HTML5 builds from it would be far larger than the document (``HTMLDocument/budgetPerByte``).
        case tooComplex
        /// Its elements may nest deeper than ``HTMLNesting/limit``.
        case tooDeep
    }

    /// Why.
    package let reason: Reason

    /// An error for `reason`.
    package init(_ reason: Reason) { self.reason = reason }

    /// One line, without content.
    package var description: String {
        switch reason {
        case .unreadable: "the HTML could not be parsed"
        case .tooComplex: "the HTML is too complex to read (its HTML5 tree would be far larger than the document)"
        case .tooDeep: "the HTML nests its elements too deep to read"
        }
    }
}
