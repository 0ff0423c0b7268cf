import CSQLite
import Foundation

/// What many would pick instead of files: one SQLite table, one row per entry, in WAL mode with
/// `synchronous=NORMAL` (no fsync per commit), each store its own transaction, statements
/// prepared once. A load copies the blob out into a `Data`, as a caller would need.
final class SQLiteStore: BenchStore {
    private var db: OpaquePointer?
    private var insert: OpaquePointer?
    private var select: OpaquePointer?
    /// SQLite's SQLITE_TRANSIENT: copy the bound value (the key's C string is temporary).
    private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard
            sqlite3_open_v2(directory + "/cache.sqlite", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
                == SQLITE_OK
        else {
            throw BenchError("sqlite3_open: \(message)")
        }
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=NORMAL")
        try execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL)")
        insert = try prepare("INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)")
        select = try prepare("SELECT value FROM kv WHERE key = ?1")
    }

    private var message: String { String(cString: sqlite3_errmsg(db)) }

    private func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("\(sql): \(message)") }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { throw BenchError("\(sql): \(message)") }
        return statement
    }

    func store(_ data: Data, forKey key: String) throws {
        defer { sqlite3_reset(insert) }
        sqlite3_bind_text(insert, 1, key, -1, transient)
        let result = data.withUnsafeBytes { buffer in
            // SQLITE_STATIC (nil): the bytes outlive the step, which happens inside this closure.
            sqlite3_bind_blob(insert, 2, buffer.baseAddress, Int32(buffer.count), nil)
            return sqlite3_step(insert)
        }
        sqlite3_clear_bindings(insert)
        guard result == SQLITE_DONE else { throw BenchError("insert \(key): \(message)") }
    }

    func load(forKey key: String) throws -> Data? {
        defer { sqlite3_reset(select) }
        sqlite3_bind_text(select, 1, key, -1, transient)
        switch sqlite3_step(select) {
        case SQLITE_ROW:
            let count = Int(sqlite3_column_bytes(select, 0))
            guard count > 0, let bytes = sqlite3_column_blob(select, 0) else { return Data() }
            return Data(bytes: bytes, count: count)
        case SQLITE_DONE:
            return nil
        default:
            throw BenchError("select \(key): \(message)")
        }
    }

    func close() {
        sqlite3_finalize(insert)
        sqlite3_finalize(select)
        sqlite3_close_v2(db)
        insert = nil
        select = nil
        db = nil
    }

    deinit { if db != nil { close() } }
}
