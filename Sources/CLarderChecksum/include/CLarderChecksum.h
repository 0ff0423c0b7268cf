#ifndef CLARDER_CHECKSUM_H
#define CLARDER_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/// The CRC-32 of zlib (ISO 3309, reflected polynomial 0xEDB88320) of `length` bytes, continuing
/// from `crc` (0 to start): the same value as zlib's `crc32(crc, buffer, length)`.
///
/// On x86-64 processors with carry-less multiplication (PCLMULQDQ) the bulk of the buffer is
/// folded 64 bytes at a time with it (BENCHMARKS.md shows what that saves a verified load); the
/// tail and short buffers (a record's 64-byte header) go through eight tables a word ("slicing
/// by 8", where zlib takes a short buffer a byte at a time), and so do other processors' buffers
/// below 4 KiB; longer ones there go to zlib.
uint32_t larder_crc32(uint32_t crc, const void *buffer, size_t length);

#endif
