#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import Synchronization

/// A TCP server on 127.0.0.1 that reads each command a client sends (RESP arrays of bulk
/// strings) and answers it as `answer` says, whatever the order and number of commands: the
/// reply in RESP, or `nil` to drop the connection without one. Records every command.
final class AnsweringServer: Sendable {
    typealias Answer = @Sendable (_ command: [String]) -> String?

    let port: Int
    private let listener: Int32
    private let answer: Answer
    private let state = Mutex<(commands: [[String]], clients: [Int32])>(([], []))

    init(_ answer: @escaping Answer) throws {
        guard let (listener, port) = listenOnLoopback(backlog: 16) else {
            throw CacheError(.ioFailure, "the answering server could not listen")
        }
        self.listener = listener
        self.port = port
        self.answer = answer
        Thread { [self] in acceptLoop() }.start()
    }

    deinit {
        _ = shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for client in state.withLock({ $0.clients }) { _ = shutdown(client, Int32(SHUT_RDWR)) }
    }

    /// Every command received so far, on any connection, in order of arrival.
    var commands: [[String]] { state.withLock { $0.commands } }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            state.withLock { $0.clients.append(client) }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { _ = shutdown(client, Int32(SHUT_RDWR)) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            pending += buffer[..<count]
            while let (command, used) = Self.command(in: pending) {
                pending.removeFirst(used)
                state.withLock { $0.commands.append(command) }
                guard let reply = answer(command) else { return }
                _ = Array(reply.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
    }

    /// The first whole command in `bytes` and how many bytes it takes, or `nil` when it has not
    /// all arrived.
    private static func command(in bytes: [UInt8]) -> ([String], Int)? {
        var at = 0
        func line() -> String? {
            var end = at
            while end + 1 < bytes.count {
                if bytes[end] == 13 && bytes[end + 1] == 10 {
                    defer { at = end + 2 }
                    return String(decoding: bytes[at ..< end], as: UTF8.self)
                }
                end += 1
            }
            return nil
        }
        guard let header = line(), header.hasPrefix("*"), let count = Int(header.dropFirst()) else { return nil }
        var arguments: [String] = []
        for _ in 0 ..< count {
            guard let length = line(), length.hasPrefix("$"), let size = Int(length.dropFirst()), at + size + 2 <= bytes.count else {
                return nil
            }
            arguments.append(String(decoding: bytes[at ..< at + size], as: UTF8.self))
            at += size + 2
        }
        return (arguments, at)
    }
}
