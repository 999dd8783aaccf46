import Foundation
import MIME
import Policy

// In-process measurements for scripts/bench, one per run so that each has
// its own peak memory:
//   mailsec-bench parse MBOX      parse the mbox, walk every part, decode every leaf
//   mailsec-bench redact FILE     censor the marked spans of a text file (a library call)
// Prints one line: "<bytes> <seconds> <items>".

func seconds(_ body: () throws -> Int) rethrows -> (Double, Int) {
    let start = DispatchTime.now().uptimeNanoseconds
    let items = try body()
    return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, items)
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let size = try? FileManager.default.attributesOfItem(atPath: arguments[2])[.size] as? Int else {
    FileHandle.standardError.write(Data("usage: mailsec-bench parse|redact FILE\n".utf8))
    exit(64)
}
switch arguments[1] {
case "parse":
    // Read from disk as it is parsed, as the C program does.
    let (time, parts) = try seconds {
        var parts = 0
        try MIMEMessage.forEachInMbox(contentsOf: arguments[2], options: ParseOptions(maxSize: Int.max, maxDepth: 64,
                                                                                      maxParts: Int.max, maxHeaders: Int.max)) { message in
            for (_, part) in message.body?.walk() ?? [] {
                parts += 1
                if part.children.isEmpty {
                    _ = part.content
                    if part.contentType.type == "text" { _ = part.text }
                }
            }
        }
        return parts
    }
    print(size, time, parts)
case "redact":
    let bytes = Array(FileManager.default.contents(atPath: arguments[2]) ?? Data())
    let text = String(decoding: bytes, as: UTF8.self)
    let (time, length) = try seconds { try Redactor.standard.redact(text, mode: .censor).utf8.count }
    print(bytes.count, time, length)
default:
    exit(64)
}
