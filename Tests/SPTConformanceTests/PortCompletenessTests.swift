import Foundation
import LarderTestSupport
import Testing

/// The port is complete and the guide says so: every test method of SPT's seven behavioural test
/// files has a Swift test of its name that cites it, every test that asserts Larder's choice
/// over SPT's is named in the guide's table of differences, every Objective-C plumbing test is listed
/// in the guide with its Swift meaning, and every SPT option and call is mapped.
@Suite("SPT port completeness") struct PortCompletenessTests {
    /// Every test method of the seven files, with the line it starts on (upstream 1.2.0).
    static let sptTests: [String: [(name: String, line: Int)]] = [
        "SPTPersistentCacheTests.m": [
            ("testCorrectWriteAndRead", 250), ("testLoadWithPrefixesSuccess", 326), ("testLoadWithPrefixesFail", 379),
            ("testLockUnlock", 426), ("testRemoveItems", 524), ("testPureCache", 576), ("testWipeLocked", 629),
            ("testWipeUnlocked", 705), ("testUsedSize", 781), ("testLockedSize", 798), ("testScheduleGarbageCollection", 822),
            ("testUnscheduleGarbageCollection", 838), ("testExpirationWithDefaultTimeout", 861), ("testExpirationWithTTL", 925),
            ("testTouchOnlyRecordsWithDefaultExpiration", 991), ("testRegularGCWithTTL", 1079), ("testPruneWithSizeRestriction", 1119),
            ("testSerialStoreWithLockDoesntIncrementRefCount", 1195), ("testInitNilWhenCannotCreateCacheDirectory", 1245),
            ("testFailToLoadDataWhenCallbackAbsent", 1263), ("testFailToLoadDataForKeysWithPrefixWhenCallbackAbsent", 1269),
            ("testFailToRetrieveDirectoryContents", 1275), ("testNotFoundIfCacheDirectoryIsDeleted", 1294), ("testNoValidKeys", 1307),
            ("DISABLED_testTouchDataWithExpiredHeader", 1319), ("testLockDataWithExpiredHeader", 1340),
            ("testUnlockDataMoreTimesThanLocked", 1361), ("testCurrentDataTimeInterval", 1379), ("testUnlockDataWithNoKeys", 1390),
            ("testLockedItemSizeInBytesWithInvalidDirectoryAttributes", 1396), ("testErrorWhenCannotReadFile", 1409),
            ("testLockDataWithNoKeys", 1427), ("testWriteToHeaderFailed", 1433), ("testWriteFailedOnStoreData", 1451),
            ("testOpenFailure", 1469), ("testCloseFailure", 1486), ("testReadFailure", 1499), ("testlseekFailure", 1513),
            ("testWriteFailure", 1529), ("testFsyncFailure", 1545), ("testStoreLargeTTL", 1562), ("testWipeAllFiles", 1586),
            ("testURLAttributeFailure", 1596), ("testPruneBySizeOnUnconstrainedCache", 1613), ("testPruneBySizeRemoveFileFailure", 1619),
            ("testStatFailure", 1640), ("testResourceInfoURLFailure", 1661), ("testStoreDataWithCallbackAndNoQueue", 1679),
            ("testDispatchEmptyResponseWithNilCallbackDoesNothing", 1691), ("testDispatchEmptyResponse", 1704),
            ("testDispatchErrorWithNilCallbackDoesNothing", 1726), ("testDispatchError", 1740), ("testDispatchBlockSync", 1770),
            ("testDispatchBlockAsync", 1785),
        ],
        "SPTPersistentCacheFileManagerTests.m": [
            ("testCreateCacheDirectory", 68), ("testExistingCacheDirectory", 81), ("testSubdirectoryPathForKeyWithShortKey", 93),
            ("testSubdirectoryPathForKeyWithLongKey", 105), ("testPathForKey", 117), ("testRemoveFileForKey", 131),
            ("testOptimizedDiskSizeForCacheSizeInsanelyBig", 144), ("testOptimizedDiskSizeForCacheSizeSmall", 153),
            ("testRemoveAllDataButKeysWithoutKeys", 162), ("testFileManagerFailsToGetAttributesOfFile", 182),
            ("DISABLED_testTotalUsedSizeInBytesFailWithNSURLGetResourceValue", 197),
            ("testOptimizedDiskSizeForCacheSizeFileManagerFail", 214),
        ],
        "SPTPersistentCacheRecordTests.m": [
            ("testDesignatedInitializer", 33), ("testDescriptionAdheresToStyle", 43), ("testDescriptionContainsClassName", 52),
            ("testDebugDescriptionAdheresToStyle", 60), ("testDebugDescriptionContainsClassName", 69),
        ],
        "SPTPersistentCacheResponseTests.m": [
            ("testDesignatedInitializer", 37), ("testDescriptionAdheresToStyle", 46), ("testDescriptionContainsClassName", 55),
            ("testDebugDescriptionContainsClassName", 63), ("testStringFromResponseCodeUniqueness", 71),
        ],
        "SPTPersistentCacheGarbageCollectorTests.m": [
            ("testDesignatedInitializer", 65), ("testGarbageCollectorEnqueue", 74), ("testIsGarbageCollectionScheduled", 91),
            ("testScheduleGarbageCollection", 100), ("testRepeatedScheduleGarbageCollection", 108),
            ("testUnscheduleGarbageCollection", 119), ("testSchedulingGarbageCollectionOnAnotherThread", 126),
        ],
        "SPTPersistentCacheHeaderTests.m": [
            ("testGetHeaderFromDataWithSmallSizeData", 17), ("testGetHeaderFromDataWithRightSize", 27),
            ("testValidateMisalignedHeader", 37),
            ("testValidateNULLHeader", 46), ("testCalculateNULLHeaderCRC", 53), ("testSPTPersistentCacheRecordHeaderMake", 60),
        ],
        "SPTPersistentCacheOptionsTests.m": [
            ("testDefaultInitializer", 24), ("testMinimumGarbageCollectorIntervalForDeprecatedInit", 34),
            ("testMinimumGarbageCollectorInterval", 49), ("testMinimumDefaultExpirationIntervalForDeprecatedInit", 68),
            ("testMinimumDefaultExpiration", 83), ("testCopying", 104), ("testFolderSeparationEnabled", 138), ("testGcIntervalSec", 154),
            ("testDefaultExpirationPeriodSec", 167), ("testDescriptionAdheresToStyle", 182), ("testDescriptionContainsClassName", 191),
            ("testDebugDescriptionAdheresToStyle", 199), ("testDebugDescriptionContainsClassName", 208),
        ],
    ]

    /// This target's sources, concatenated.
    static let sources: String = {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        var text = ""
        for file in sptFiles(atPath: folder.path) where file.hasSuffix(".swift") {
            text += (try? String(contentsOfFile: folder.path + "/" + file, encoding: .utf8)) ?? ""
        }
        return text
    }()

    static var allTests: [String] { sptTests.keys.sorted().flatMap { file in sptTests[file]!.map { "\(file):\($0.line) \($0.name)" } } }

    /// Each SPT test has a Swift test of its name (`DISABLED_` dropped) whose comment cites its file and line.
    @Test(arguments: allTests) func ported(_ test: String) {
        let parts = test.split(separator: " ")
        let citation = String(parts[0])
        let name = parts[1].replacingOccurrences(of: "DISABLED_", with: "")
        #expect(Self.sources.contains("func \(name)("), "no Swift test named \(name)")
        #expect(Self.sources.contains(citation), "no comment cites \(citation)")
    }

    /// The list above is SPT's: the same methods at the same lines, when SPT's sources are
    /// beside the fixtures (`shared/reference/SPTPersistentCache`).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: referenceTests)))
    func theListIsSPTs() throws {
        for (file, tests) in Self.sptTests {
            let text = try String(contentsOfFile: Self.referenceTests + "/" + file, encoding: .utf8)
            var found: [String] = []
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.hasPrefix("- (void)test") || line.hasPrefix("- (void)DISABLED_test") {
                found.append("\(number + 1) \(line.dropFirst("- (void)".count).trimmingCharacters(in: .whitespaces))")
            }
            #expect(found == tests.map { "\($0.line) \($0.name)" }, "\(file)")
        }
    }

    static var referenceTests: String {
        Fixtures.root.deletingLastPathComponent().appendingPathComponent("reference/SPTPersistentCache/Tests").path
    }

    /// The plumbing tests the guide's table lists with their Swift meaning.
    static let plumbing = [
        "testFailToLoadDataWhenCallbackAbsent", "testFailToLoadDataForKeysWithPrefixWhenCallbackAbsent",
        "testStoreDataWithCallbackAndNoQueue", "testDispatchEmptyResponseWithNilCallbackDoesNothing",
        "testDispatchErrorWithNilCallbackDoesNothing", "testDispatchBlockSync", "testDispatchBlockAsync", "testValidateNULLHeader",
        "testCalculateNULLHeaderCRC", "testValidateMisalignedHeader", "testCopying", "testDescriptionAdheresToStyle",
        "testDescriptionContainsClassName", "testDebugDescriptionAdheresToStyle", "testDebugDescriptionContainsClassName",
        "testFolderSeparationEnabled", "testGcIntervalSec", "testDefaultExpirationPeriodSec",
        "testMinimumGarbageCollectorIntervalForDeprecatedInit", "testMinimumDefaultExpirationIntervalForDeprecatedInit",
        "testCurrentDataTimeInterval", "testInitNilWhenCannotCreateCacheDirectory", "testFailToRetrieveDirectoryContents",
        "testLockedItemSizeInBytesWithInvalidDirectoryAttributes", "testErrorWhenCannotReadFile", "testWriteToHeaderFailed",
        "testWriteFailedOnStoreData", "testOpenFailure", "testCloseFailure", "testReadFailure", "testlseekFailure", "testWriteFailure",
        "testFsyncFailure", "testURLAttributeFailure", "testPruneBySizeRemoveFileFailure", "testStatFailure",
        "testResourceInfoURLFailure", "testGarbageCollectorEnqueue", "testDesignatedInitializer",
        "DISABLED_testTouchDataWithExpiredHeader",
    ]

    @Test(arguments: plumbing) func plumbingIsListed(_ test: String) {
        let section = MigrationGuide.text.components(separatedBy: "### Tests of Objective-C plumbing").last ?? ""
        #expect(section.contains("`\(test)`"))
    }

    /// The ported tests that assert Larder's behaviour where it differs from SPT's on purpose:
    /// each is named in the last column of a row of the guide's "What behaves differently"
    /// table, which gives SPT's behaviour, Larder's and the reason.
    static let differing = [
        "testUsedSize", "testLockedSize", "testPruneWithSizeRestriction", "testFailToRetrieveDirectoryContents", "testCloseFailure",
        "testlseekFailure", "testWriteFailure", "testFsyncFailure", "testWriteToHeaderFailed", "testResourceInfoURLFailure",
        "testStoreLargeTTL", "testDispatchBlockSync", "testValidateMisalignedHeader", "testMinimumGarbageCollectorInterval",
        "testMinimumDefaultExpiration", "testScheduleGarbageCollection", "testWriteFailedOnStoreData", "testCorrectWriteAndRead",
        "testLockDataWithNoKeys", "testUnlockDataWithNoKeys", "testUnlockDataMoreTimesThanLocked", "testRemoveFileForKey",
        "testFileManagerFailsToGetAttributesOfFile", "testOptimizedDiskSizeForCacheSizeFileManagerFail",
        "lockingALockedRecordWhoseTimeRanOut", "aRecordWithUnknownFlagsIsAMissAndStays",
    ]

    @Test(arguments: differing) func differenceIsListed(_ test: String) {
        let table =
            MigrationGuide.text.components(separatedBy: "### What behaves differently").last?
            .components(separatedBy: "### Tests of Objective-C plumbing").first ?? ""
        let rows = table.split(separator: "\n").filter { $0.hasPrefix("|") }
        #expect(
            rows.contains { row in
                let cells = row.split(separator: "|", omittingEmptySubsequences: false)
                return cells.count > 4 && cells[cells.count - 2].contains("`\(test)`")
            }, "\(test) is in no row of the differences table")
    }

    /// Every option, constant and call of SPT's public headers, mapped in the guide.
    static let mapped = [
        "cachePath", "cacheIdentifier", "identifierForQueue", "useDirectorySeparation", "folderSeparationEnabled",
        "garbageCollectionInterval", "gcIntervalSec", "defaultExpirationPeriod", "defaultExpirationPeriodSec", "sizeConstraintBytes",
        "maxConcurrentOperations", "readQualityOfService", "writeQualityOfService", "deleteQualityOfService",
        "garbageCollectionQualityOfService", "readPriority", "writePriority", "deletePriority", "garbageCollectionPriority", "debugOutput",
        "timingCallback", "SPTPersistentCacheDefaultExpirationTimeSec", "SPTPersistentCacheDefaultGCIntervalSec",
        "SPTPersistentCacheMinimumExpirationLimit", "SPTPersistentCacheMinimumGCIntervalLimit",
        "initWithCachePath:identifier:defaultExpirationInterval:garbageCollectorInterval:debug:",
        "initWithOptions:", "loadDataForKey:withCallback:onQueue:", "loadDataForKeysWithPrefix:chooseKeyCallback:withCallback:onQueue:",
        "storeData:forKey:locked:withCallback:onQueue:", "storeData:forKey:ttl:locked:withCallback:onQueue:",
        "touchDataForKey:callback:onQueue:", "removeDataForKeys:callback:onQueue:", "lockDataForKeys:callback:onQueue:",
        "unlockDataForKeys:callback:onQueue:", "scheduleGarbageCollector", "unscheduleGarbageCollector", "pruneWithCallback:onQueue:",
        "wipeLockedFilesWithCallback:onQueue:", "wipeNonLockedFilesWithCallback:onQueue:", "totalUsedSizeInBytes", "lockedItemsSizeInBytes",
        "SPTPersistentCacheRecordHeaderMake", "SPTPersistentCacheGetHeaderFromData", "SPTPersistentCacheValidateHeader",
        "SPTPersistentCacheCalculateHeaderCRC", "SPTPersistentCacheCheckValidHeader", "record.refCount", "record.ttl",
    ]

    @Test(arguments: mapped) func mappedInTheGuide(_ name: String) {
        #expect(
            MigrationGuide.rows.contains { row in
                let cells = row.split(separator: "|", omittingEmptySubsequences: false)
                return cells.count > 2 && cells[1].contains("`\(name)`")
            })
    }
}
