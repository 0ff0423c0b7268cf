// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Larder",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Larder", targets: ["Larder"]),
        .executable(name: "larder", targets: ["larder"]),
        .executable(name: "larder-bench", targets: ["larder-bench"]),
        // The Redis remote tier: its own product, so that plain `Larder` users never link it.
        .library(name: "LarderRedis", targets: ["LarderRedis"]),
    ],
    targets: [
        // C libraries that Debian ships; Apple platforms use the SDK's zlib and CryptoKit.
        // CRC-32: zlib's, with the bulk folded by carry-less multiplication where the CPU has it;
        // and atomics on memory shared between processes (the change log's counter).
        .target(name: "CLarderChecksum", linkerSettings: [.linkedLibrary("z")]),
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // TLS for the Redis remote tier (Linux; Apple platforms report TLS as unavailable).
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        .target(
            name: "Larder",
            dependencies: [
                "CLarderChecksum",
                .target(name: "CCrypto", condition: .when(platforms: [.linux, .android])),
            ],
            // The privacy manifest Xcode merges into an app's report: the required-reason APIs
            // Larder calls, and why (the file's comment and the README say which call needs which).
            resources: [.copy("Resources/PrivacyInfo.xcprivacy")]
        ),
        .target(name: "LarderCLI", dependencies: ["Larder"]),
        .executableTarget(name: "larder", dependencies: ["LarderCLI"]),
        .target(name: "LarderRedis", dependencies: ["Larder", .target(name: "COpenSSL", condition: .when(platforms: [.linux]))]),
        .executableTarget(
            name: "larder-bench", dependencies: ["Larder", "LarderRedis", "LarderTestSupport", "LarderBenchReport", "CSQLite"]),
        // BENCHMARKS.md and its SVG charts, rendered from larder-bench's JSON lines. Not a product.
        .target(name: "LarderBenchReport"),
        // A second process for the Redis tests' cross-process invalidation.
        .executableTarget(name: "larder-redis-peer", dependencies: ["Larder", "LarderRedis"]),
        .executableTarget(name: "larder-stress", dependencies: ["Larder", "LarderTestSupport"]),
        // Seeded randomness, self-verifying payloads, temporary folders, fixtures and the fault
        // injector, shared by the tests, the stress helper and the benchmarks. Not a product.
        .target(name: "LarderTestSupport", dependencies: ["Larder"]),

        .testTarget(name: "LarderTests", dependencies: ["Larder", "LarderTestSupport", "larder-stress"]),
        .testTarget(name: "LarderRedisTests", dependencies: ["Larder", "LarderRedis", "LarderTestSupport", "larder-redis-peer"]),
        .testTarget(name: "LarderCLITests", dependencies: ["LarderCLI", "Larder", "LarderTestSupport", "larder"]),
        // SPTPersistentCache's own test suite, ported to Swift Testing against the SPT preset.
        .testTarget(name: "LarderBenchReportTests", dependencies: ["LarderBenchReport"], resources: [.copy("Fixtures")]),
        .testTarget(name: "SPTConformanceTests", dependencies: ["Larder", "LarderTestSupport"]),
    ]
)

for target in package.targets where target.type != .system && target.name != "CLarderChecksum" {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    target.swiftSettings = settings
}
