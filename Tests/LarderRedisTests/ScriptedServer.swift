#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import Synchronization

/// A TCP server on 127.0.0.1 that answers each read on each connection with the next reply of a
/// script (the same script for every connection), then only reads, until the client closes. It
/// records what every connection received, and how many it accepted.
final class ScriptedServer: Sendable {
    let port: Int
    private let listener: Int32
    private let script: [[UInt8]]
    private let state = Mutex<(accepted: Int, received: [[UInt8]])>((0, []))

    init(_ script: [String]) throws {
        self.script = script.map { Array($0.utf8) }
        guard let (listener, port) = listenOnLoopback(backlog: 16) else {
            throw CacheError(.ioFailure, "the scripted server could not listen")
        }
        self.listener = listener
        self.port = port
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// How many connections the server accepted.
    var accepted: Int { state.withLock { $0.accepted } }

    /// What connection `index` (from 0) received so far.
    func received(_ index: Int) -> [UInt8] { state.withLock { index < $0.received.count ? $0.received[index] : [] } }

    /// Stops accepting; connections end when their clients close them.
    func stop() {
        _ = shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { close(listener) }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let index = state.withLock { state in
                state.accepted += 1
                state.received.append([])
                return state.received.count - 1
            }
            let thread = Thread { [self] in serve(client, index: index) }
            thread.start()
        }
    }

    private func serve(_ client: Int32, index: Int) {
        defer { close(client) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var next = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            state.withLock { $0.received[index] += buffer[..<count] }
            guard next < script.count else { continue }
            let reply = script[next]
            next += 1
            _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }
}
