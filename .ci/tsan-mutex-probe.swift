// Probe run by .ci/run: does this toolchain's Thread Sanitizer see Synchronization.Mutex on this
// platform? With Swift 6.3.1 on Linux it does not: this program, which only touches state inside
// Mutex.withLock, is reported as a "Swift access race" (Mutex's futex atomics live in the
// uninstrumented libswiftSynchronization). While that holds, every Mutex-based suite reports races.
import Synchronization
import Foundation
final class Box: Sendable { let m = Mutex<[String: Int]>([:]) }
let box = Box()
let g = DispatchGroup()
for t in 0..<4 {
    g.enter()
    Thread { for i in 0..<20000 { box.m.withLock { $0["k\(i % 50)", default: 0] += t } }; g.leave() }.start()
}
g.wait()
print(box.m.withLock { $0.count })
