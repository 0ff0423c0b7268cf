#ifndef CLARDER_CHECKSUM_H
#define CLARDER_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/// The CRC-32 of zlib (ISO 3309, reflected polynomial 0xEDB88320) of `length` bytes, continuing
/// from `crc` (0 to start): the same value as zlib's `crc32(crc, buffer, length)`.
///
/// On x86-64 processors with carry-less multiplication (PCLMULQDQ) buffers of 16 bytes or more
/// are folded with it, 64 bytes at a time (BENCHMARKS.md shows what that saves a verified load),
/// or 256 bytes at a time with 512-bit registers where the processor has VPCLMULQDQ and AVX-512
/// and the buffer has 256 bytes or more; the last 15 bytes or fewer, and shorter buffers, go
/// through eight tables a word ("slicing by 8", where zlib takes a short buffer a byte at a
/// time), and so do other processors' buffers below 4 KiB; longer ones there go to zlib.
uint32_t larder_crc32(uint32_t crc, const void *buffer, size_t length);

/// `larder_crc32` without the 512-bit registers, whatever the processor has: for tests, so that
/// the 128-bit folding is checked on long buffers on a machine that would take the wide path.
uint32_t larder_crc32_narrow(uint32_t crc, const void *buffer, size_t length);

#endif
