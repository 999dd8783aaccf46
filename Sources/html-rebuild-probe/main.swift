import Policy
import Redaction

// Rebuilds the HTML read from standard input as a postcard's (censored), and
// prints the length written, or the error. For the tests that count the
// instructions of a rebuild under callgrind: a small program, where the test
// bundle is too large for valgrind to read.
var bytes: [UInt8] = []
while let line = readLine(strippingNewline: false) { bytes += line.utf8 }
do {
    let rebuilt = try HTMLRebuild.rebuild(String(decoding: bytes, as: UTF8.self), redactor: .standard, mode: .censor, part: "input")
    print(rebuilt.html.utf8.count)
} catch {
    print(error)
}
