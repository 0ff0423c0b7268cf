/// Every suite the tool knows, in the order it runs them. A new suite is one file plus one line here.
let suites: [(name: String, run: @Sendable (BenchContext) throws -> Void)] = [
    ("memory", runMemorySuite),
    ("disk", runDiskSuite),
    ("concurrency", runConcurrencySuite),
    ("gc", runGCSuite),
    ("open", runOpenSuite),
    ("hybrid", runHybridSuite),
    ("loadthrough", runLoadThroughSuite),
    ("remote", runRemoteSuite),
    ("hitratio", runHitRatioSuite),
]
