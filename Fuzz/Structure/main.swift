import Glibc
import MailsecFuzzChecks

// A libFuzzer target (scripts/fuzz builds it with -sanitize=fuzzer,address).
// SwiftPM gives every executable a main of its own, so this main hands over
// to libFuzzer's driver rather than relying on libFuzzer's main.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<Int32>,
               _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
               _ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(runDriver(&argc, &argv) { data, size in
    FuzzChecks.structure(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
})
