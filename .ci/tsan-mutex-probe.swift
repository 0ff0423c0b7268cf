// Why .ci/run builds its Thread Sanitizer run with -DLARDER_SANITIZE_THREADS: does this toolchain's
// sanitizer see Synchronization.Mutex? With Swift 6.3.1 on Linux it does not: this program, which
// only touches state inside Mutex.withLock, is reported as a "Swift access race" (Mutex's futex
// atomics live in the uninstrumented libswiftSynchronization). Check a new toolchain with
//   swiftc -sanitize=thread .ci/tsan-mutex-probe.swift -o /tmp/probe && TSAN_OPTIONS=halt_on_error=1 /tmp/probe
// and, once it runs clean, drop the flag and Sources/Larder/Support/Concurrency/LarderMutex.swift's pthread variant.
import Synchronization
import Foundation
final class Box: Sendable { let m = Mutex<[String: Int]>([:]) }
let box = Box()
let g = DispatchGroup()
for t in 0 ..< 4 {
    g.enter()
    Thread {
        for i in 0 ..< 20000 { box.m.withLock { $0["k\(i % 50)", default: 0] += t } }
        g.leave()
    }.start()
}
g.wait()
print(box.m.withLock { $0.count })
