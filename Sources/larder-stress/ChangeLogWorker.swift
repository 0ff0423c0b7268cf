import Foundation
import Larder

/// `larder-stress changes --dir D --worker W --count N [--hold 1]`: opens D's change log and
/// appends N records (kind 1, payload "W\tI" for I from 0), each under its own change lock, then
/// prints "done <pid>" and exits 0. With `--hold 1` it takes the change lock instead, prints
/// "ready <pid>" and sleeps holding it until killed: a writer killed mid-change.
func appendChanges(_ args: Arguments) -> Never {
    let dir = args.string("dir")
    let worker = args.int("worker", default: 0)
    let log: FolderChangeLog
    do {
        let io = try FileIO().rooted(at: dir)
        log = try FolderChangeLog(path: dir + "/" + FolderChangeLog.fileName, io: io)
    } catch {
        fail("cannot open the change log: \(error)")
    }
    if args.int("hold", default: 0) != 0 {
        do {
            try log.withChangeLock { appender in
                appender.append(kind: 1, payload: Array("\(worker)\thold".utf8))
                announceReady()
                while true { _ = sleep(60) }
            }
        } catch {
            fail("cannot take the change lock: \(error)")
        }
    }
    for i in 0 ..< args.int("count") {
        do {
            try log.withChangeLock { appender in appender.append(kind: 1, payload: Array("\(worker)\t\(i)".utf8)) }
        } catch {
            fail("cannot append: \(error)", status: 4)
        }
    }
    FileHandle.standardOutput.write(Data("done \(getpid())\n".utf8))
    exit(0)
}
