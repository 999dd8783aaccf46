import Glibc

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(_ argc: UnsafeMutablePointer<Int32>,
                       _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                       _ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// Hands the process to libFuzzer's driver with `body` as the target.
/// SwiftPM gives every executable a main of its own, so the fuzz targets link
/// libFuzzer without its main (fuzzer_no_main) and start its driver here.
public func runLibFuzzer(_ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(runDriver(&argc, &argv, body))
}
