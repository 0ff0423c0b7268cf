#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP socket listening on 127.0.0.1 at a port the kernel picked, for the tests' stand-in
/// servers: its descriptor and port, or `nil` when it could not listen.
func listenOnLoopback(backlog: Int32) -> (descriptor: Int32, port: Int)? {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { return nil }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let listening = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(listener, pointer, length) == 0 && getsockname(listener, pointer, &length) == 0 && listen(listener, backlog) == 0
        }
    }
    guard listening else {
        close(listener)
        return nil
    }
    return (listener, Int(UInt16(bigEndian: address.sin_port)))
}

/// The address 127.0.0.1:`port` (0: any port, for a listener).
func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}
