import Foundation
@testable import Larder
import Synchronization
import Testing

/// `RemotePayload.decode` hands out the payload without copying it: the payload shares the
/// frame's bytes and keeps them alive, however the frame is changed or dropped afterwards.
@Suite struct RemotePayloadTests {
    /// Counts how often a frame's buffer was freed.
    final class FreeCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// `payload` framed in a buffer of its own that `count` records the freeing of.
    func ownedFrame(_ payload: Data, freed count: FreeCount, damaged: Bool = false) -> Data {
        var framed = RemotePayload.encode(payload, expiryMilliseconds: 1_700_000_000_000, isLocked: false)
        if damaged { framed[framed.count - 1] ^= 0x01 }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: framed.count, alignment: 16)
        _ = buffer.initializeMemory(as: UInt8.self, from: framed)
        return Data(
            bytesNoCopy: buffer.baseAddress!, count: buffer.count,
            deallocator: .custom { pointer, _ in
                pointer.deallocate()
                count.value.add(1, ordering: .relaxed)
            })
    }

    func randomPayload(_ size: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0 ..< size).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
    }

    @Test func thePayloadSharesTheFramesBytes() throws {
        let payload = randomPayload(4096)
        let frame = RemotePayload.encode(payload, expiryMilliseconds: nil, isLocked: false)
        let decoded = try #require(RemotePayload.decode(frame)).data
        #expect(decoded == payload)
        #expect(decoded.startIndex == 0 && decoded.count == 4096)
        let frameAddress = frame.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let payloadAddress = decoded.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        #expect(payloadAddress == frameAddress + UInt(RemotePayload.headerSize), "the payload was copied")
    }

    @Test func thePayloadKeepsItsBytesWhenTheFrameChangesOrGoes() throws {
        let payload = randomPayload(4096)
        let freed = FreeCount()
        var frame: Data? = ownedFrame(payload, freed: freed)
        var decoded = try #require(RemotePayload.decode(frame!)).data
        // Changing the frame gives it a buffer of its own; the payload keeps the old one.
        frame![RemotePayload.headerSize] ^= 0xFF
        frame![frame!.count - 1] ^= 0xFF
        #expect(decoded == payload)
        #expect(freed.value.load(ordering: .relaxed) == 0)
        frame = nil
        #expect(decoded == payload, "the payload outlives its frame")
        #expect(freed.value.load(ordering: .relaxed) == 0, "the buffer went while the payload used it")
        // The payload is an ordinary Data: changing it copies, and the shared buffer still goes once.
        decoded[0] ^= 0xFF
        #expect(decoded.dropFirst() == payload.dropFirst() && decoded[0] == payload[0] ^ 0xFF)
        decoded = Data()
        #expect(freed.value.load(ordering: .relaxed) == 1)
    }

    @Test func aDamagedFrameIsRejectedAndItsBufferFreed() {
        let freed = FreeCount()
        var frame: Data? = ownedFrame(randomPayload(4096), freed: freed, damaged: true)
        #expect(RemotePayload.decode(frame!) == nil)
        frame = nil
        #expect(freed.value.load(ordering: .relaxed) == 1)
    }

    @Test func aFrameThatIsASliceDecodes() throws {
        let payload = randomPayload(300)
        let padded = Data([9, 9, 9]) + RemotePayload.encode(payload, expiryMilliseconds: 42, isLocked: true) + Data([7])
        let frame = padded[3 ..< padded.count - 1]
        #expect(frame.startIndex == 3)
        let decoded = try #require(RemotePayload.decode(frame))
        #expect(decoded.data == payload && decoded.data.startIndex == 0)
        #expect(decoded.expiryMilliseconds == 42 && decoded.isLocked)
        // A payload short enough to be stored inline is copied; it decodes all the same.
        let small = Data("tiny".utf8)
        #expect(RemotePayload.decode(RemotePayload.encode(small, expiryMilliseconds: nil, isLocked: false))?.data == small)
    }
}
