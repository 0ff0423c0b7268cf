import Foundation
import Larder

/// A reply from Redis (RESP2, and RESP3 on a connection that said `HELLO 3`): a bulk string's
/// bytes are copied once, from the read buffer or straight from the socket into the `Data` it
/// becomes.
enum RedisReply: Sendable, Hashable {
    /// A bulk string (`$`), empty included.
    case string(Data)
    /// An array (`*`), possibly nested.
    case array([RedisReply])
    /// An integer (`:`).
    case integer(Int64)
    /// A null bulk string or array (`$-1`, `*-1`), or RESP3's null (`_`).
    case null
    /// A simple string (`+`), as in `OK` or `PONG`.
    case status(String)
    /// An error (`-`, or RESP3's blob error `!`): the command failed, the connection is still usable.
    case error(String)
    /// A RESP3 boolean (`#t`, `#f`).
    case boolean(Bool)
    /// A RESP3 double (`,`), infinities and NaN included.
    case double(Double)
    /// A RESP3 big number (`(`): its decimal digits, with an optional minus sign.
    case bigNumber(String)
    /// A RESP3 verbatim string (`=`): its three-letter format (`txt`, `mkd`) and its text.
    case verbatim(format: String, text: Data)
    /// A RESP3 map (`%`): its keys and values in the order sent, each pair as key then value.
    case map([RedisReply])
    /// A RESP3 set (`~`).
    case set([RedisReply])
    /// A RESP3 push (`>`): data the server sends without a command asking for it (a
    /// `CLIENT TRACKING` invalidation, a pub/sub message), which may arrive between replies.
    case push([RedisReply])
}

/// How much a reply may make the reader allocate: a garbled or hostile server can announce any
/// length, and the reader must neither trust it nor recurse without end.
struct RedisReplyLimits: Sendable {
    /// The longest bulk string: 512 MiB, Redis's own limit (`proto-max-bulk-len`).
    var maxBulkLength = 512 * 1024 * 1024
    /// The most elements of one array.
    var maxArrayCount = 1 << 24
    /// The deepest nesting of arrays (a `SCAN` reply is 2 deep).
    var maxDepth = 16
    /// The longest line: a simple string, an error, or a length or integer.
    var maxLineLength = 64 * 1024
}

/// Where a ``RedisReplyReader`` gets its bytes: a socket, or a test's script.
protocol RedisByteSource {
    /// Reads what has arrived into `buffer` (blocking until something has): the number of
    /// bytes read, 0 when the stream ended.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(CacheError) -> Int
}
