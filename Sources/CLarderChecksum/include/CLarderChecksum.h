#ifndef CLARDER_CHECKSUM_H
#define CLARDER_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

// Atomics on shared memory, for the change counter of a folder's change log.
#include "larder_atomic.h"

/// The CRC-32 of zlib (ISO 3309, reflected polynomial 0xEDB88320) of `length` bytes, continuing
/// from `crc` (0 to start): the same value as zlib's `crc32(crc, buffer, length)`.
///
/// On x86-64 processors with carry-less multiplication (PCLMULQDQ) buffers of 16 bytes or more
/// are folded with it, 64 bytes at a time (BENCHMARKS.md shows what that saves a verified load),
/// or in wider registers where the processor has VPCLMULQDQ: 256 bytes at a time in 512-bit
/// registers with AVX-512 (buffers of 256 bytes or more), else 128 bytes at a time in 256-bit
/// registers with AVX2 (buffers of 128 bytes or more); the last 15 bytes or fewer, and shorter
/// buffers, go through eight tables a word ("slicing by 8", where zlib takes a short buffer a
/// byte at a time), and so do other processors' buffers below 4 KiB; longer ones there go to zlib.
uint32_t larder_crc32(uint32_t crc, const void *buffer, size_t length);

/// `larder_crc32` folding in registers of at most `widest` bits (128, 256 or 512), whatever the
/// processor has: for tests, so that each narrower folding is checked on long buffers on a
/// machine that would take a wider one.
uint32_t larder_crc32_folding(uint32_t crc, const void *buffer, size_t length, int widest);

/// The widest registers `larder_crc32` folds in on this processor, in bits: 512, 256, 128, or 0
/// when it has no carry-less multiplication (or is not x86-64).
int larder_crc32_widest_fold(void);

#endif
