import FuzzDriver
import MailsecFuzzChecks

// libFuzzer target; scripts/fuzz builds it with ASan and coverage instrumentation.
runLibFuzzer { data, size in
    FuzzChecks.userConfig(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}
