import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Overwrites `bytes` with zeros through libc's `explicit_bzero`, a call the
/// optimiser must keep (a plain loop over memory that is freed next may be
/// dropped as a dead store).
package func zeroize(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
    }
}
