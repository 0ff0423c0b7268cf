#if !os(Linux)
import Larder
import LarderRedis
import Testing

/// Where LarderRedis links no OpenSSL (Apple platforms), TLS settings are refused up front.
@Suite struct RedisTLSUnavailableTests {
    @Test func tlsSettingsAreRefusedAsUnavailable() {
        do {
            _ = try RedisRemoteStore(host: "127.0.0.1", port: 6379, tls: RedisTLSOptions())
            Issue.record("TLS settings were accepted on a platform without TLS")
        } catch {
            #expect(error.code == .invalidOptions)
            #expect(error.message.contains("TLS is not available on this platform"))
        }
    }
}
#endif
