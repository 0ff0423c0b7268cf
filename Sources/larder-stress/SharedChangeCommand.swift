import Foundation
import Larder

/// `larder-stress shared-change --dir D --key K --change store|store-locked|remove|lock|unlock
/// [--text T]`: one change to the record of `K` by a writer process that shares the folder
/// (`sharesFolderWithWriters`): a store of the UTF-8 bytes of `T` (locked for `store-locked`), a
/// removal, a lock or an unlock. Exits 0 once it returned (and the cache is closed), 2 when the
/// open is refused, 4 when the change fails.
func sharedChange(_ args: Arguments) -> Never {
    let key = args.string("key")
    var options = DiskCacheOptions(directory: URL(fileURLWithPath: args.string("dir"), isDirectory: true))
    options.sharesFolderWithWriters = true
    let cache: DiskCache
    do { cache = try DiskCache(options: options) } catch { fail("cannot open: \(error)") }
    do {
        switch args.string("change") {
        case "store": try cache.store(Data(args.string("text").utf8), forKey: key)
        case "store-locked": try cache.store(Data(args.string("text").utf8), forKey: key, locked: true)
        case "remove": try cache.remove(forKey: key)
        case "lock": try cache.lock(forKeys: [key])
        case "unlock": try cache.unlock(forKeys: [key])
        case let other: fail("unknown change \(other)")
        }
    } catch {
        fail("change failed: \(error)", status: 4)
    }
    cache.close()
    exit(0)
}
