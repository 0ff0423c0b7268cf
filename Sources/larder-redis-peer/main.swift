// A second process for the Redis tests (Tests/LarderRedisTests): opens a hybrid cache on a shared
// Redis, reads one key (a remote hit, promoted to its own memory and disk), says "ready <bytes>",
// then waits until another process's invalidation has dropped its local copies and says
// "invalidated" (exit 0), or "timeout" after 120 s (exit 1).
//
//     larder-redis-peer HOST:PORT DIRECTORY NAMESPACE KEY
import Foundation
import Larder
import LarderRedis
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 5, let store = try? RedisRemoteStore(address: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: larder-redis-peer HOST:PORT DIRECTORY NAMESPACE KEY\n".utf8))
    exit(2)
}
let subscribed = Atomic<Bool>(false)
var options = HybridCacheOptions(directory: URL(fileURLWithPath: arguments[2]))
var remote = RemoteTierOptions(store: store, namespace: arguments[3])
remote.commandTimeout = 5
remote.eventHandler = { event in
    if case .subscribed = event { subscribed.store(true, ordering: .releasing) }
}
options.remote = remote
let key = arguments[4]

func waitFor(_ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(120)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return false
}

do {
    let cache = try HybridCache(options: options)
    guard waitFor({ subscribed.load(ordering: .acquiring) }) else {
        print("timeout")
        exit(1)
    }
    guard let value = try cache.value(forKey: key) else {
        print("miss")
        exit(1)
    }
    print("ready \(value.count)")
    fflush(nil)
    let gone = waitFor { (try? cache.value(forKey: key, from: [.memory, .disk])) == nil }
    print(gone ? "invalidated" : "timeout")
    fflush(nil)
    cache.close()
    exit(gone ? 0 : 1)
} catch {
    print("error \(error)")
    exit(1)
}
