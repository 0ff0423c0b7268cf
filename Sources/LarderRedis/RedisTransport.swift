import Larder

/// The byte stream a ``RedisConnection`` speaks RESP over: a plain ``Socket``, or TLS over one
/// (``TLSStream``). Used by one thread at a time, except ``shutdown()``.
protocol RedisTransport: AnyObject, Sendable {
    /// How long one write or read may wait, in seconds; 0 waits for ever.
    var timeout: Double { get }
    /// Sets how long one write or read may wait; 0 waits for ever.
    func setTimeout(_ seconds: Double) throws(CacheError)
    /// Sets when every write and read from now on must be over (in ``Socket/monotonicSeconds()``),
    /// or `nil` to go back to one ``timeout`` per wait: the commands of one call share one budget.
    func setDeadline(_ deadline: Double?)
    /// Writes every byte of `bytes`.
    func send(_ bytes: UnsafeRawBufferPointer) throws(CacheError)
    /// Reads what has arrived into `buffer`, waiting until something has (or the timeout): the
    /// number of bytes read, 0 when the peer closed the connection.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(CacheError) -> Int
    /// Shuts the connection down, so that a thread blocked in ``receive(into:)`` wakes and reads
    /// 0. Safe from any thread.
    func shutdown()
}

extension Socket: RedisTransport {}

/// A transport as the reply reader's byte source.
struct RedisTransportBytes: RedisByteSource {
    let transport: any RedisTransport

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(CacheError) -> Int {
        try transport.receive(into: buffer)
    }
}
