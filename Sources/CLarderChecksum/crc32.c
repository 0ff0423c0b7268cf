// CRC-32 by carry-less multiplication: the folding method of Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), for zlib's
// reflected polynomial. Each constant is x^n mod P for the distance the fold covers, bit-reflected
// and shifted as the method requires. Short buffers and the tail: table lookups, 8 bytes at a
// time. docs/FORMAT.md's vectors and the comparison with a bit-by-bit CRC at every length to 700
// and every alignment in Tests/LarderTests/Support/ChecksumTests.swift check both paths.
#include "CLarderChecksum.h"
#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define LARDER_FOLD(x, k, data) \
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data)

/// The raw CRC register (no inversions) after `length` bytes; `length` is at least 64 and a
/// multiple of 16.
__attribute__((target("pclmul,sse4.1")))
static uint32_t fold_pclmul(uint32_t crc, const uint8_t *p, size_t length) {
    const __m128i fold512 = _mm_set_epi64x(0x00000001c6e41596ULL, 0x0000000154442bd4ULL);
    const __m128i fold128 = _mm_set_epi64x(0x00000000ccaa009eULL, 0x00000001751997d0ULL);
    const __m128i fold64 = _mm_set_epi64x(0, 0x0000000163cd6124ULL);
    const __m128i barrett = _mm_set_epi64x(0x00000001f7011641ULL, 0x00000001db710641ULL);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);

    // Four lanes of 128 bits, folded forward 512 bits at a time.
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    length -= 64;
    while (length >= 64) {
        x0 = LARDER_FOLD(x0, fold512, _mm_loadu_si128((const __m128i *)p));
        x1 = LARDER_FOLD(x1, fold512, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = LARDER_FOLD(x2, fold512, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = LARDER_FOLD(x3, fold512, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        length -= 64;
    }
    // The four lanes into one, then the remaining 16-byte blocks.
    x0 = LARDER_FOLD(x0, fold128, x1);
    x0 = LARDER_FOLD(x0, fold128, x2);
    x0 = LARDER_FOLD(x0, fold128, x3);
    while (length >= 16) {
        x0 = LARDER_FOLD(x0, fold128, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        length -= 16;
    }
    // 128 bits to 96, 96 to 64, then Barrett reduction to the 32-bit remainder.
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(x0, fold128, 0x10), _mm_srli_si128(x0, 8));
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, low32), fold64, 0x00), _mm_srli_si128(x0, 4));
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(t, x0), 1);
}
#undef LARDER_FOLD
#endif

/// Eight tables of 256 entries for the byte-wise rest: `tables[0]` is the classic table of the
/// reflected polynomial 0xEDB88320, `tables[k][b]` the register after byte `b` and `k` zero bytes.
/// Filled once at load time, before any thread can call in.
static uint32_t tables[8][256];

__attribute__((constructor)) static void fill_tables(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r = b;
        for (int i = 0; i < 8; i++) r = (r >> 1) ^ (0xEDB88320u & (0u - (r & 1)));
        tables[0][b] = r;
    }
    for (uint32_t b = 0; b < 256; b++) {
        for (int k = 1; k < 8; k++) tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xFF];
    }
}

/// The raw register (no inversions) after `length` bytes, eight at a time ("slicing by 8": eight
/// independent table lookups per word instead of a chain of eight), then one at a time. Headers and
/// the ends of payloads are short, and zlib's own loop takes them a byte at a time.
static uint32_t sliced(uint32_t crc, const uint8_t *p, size_t length) {
    while (length >= 8) {
        uint32_t low = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t high = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = tables[7][low & 0xFF] ^ tables[6][(low >> 8) & 0xFF] ^ tables[5][(low >> 16) & 0xFF] ^ tables[4][low >> 24] ^
              tables[3][high & 0xFF] ^ tables[2][(high >> 8) & 0xFF] ^ tables[1][(high >> 16) & 0xFF] ^ tables[0][high >> 24];
        p += 8;
        length -= 8;
    }
    while (length > 0) {
        crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xFF];
        length--;
    }
    return crc;
}

uint32_t larder_crc32(uint32_t crc, const void *buffer, size_t length) {
    const uint8_t *p = (const uint8_t *)buffer;
#if defined(__x86_64__)
    // __builtin_cpu_supports reads flags the runtime set at start-up: no lazy state to race on.
    if (length >= 64 && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
        size_t bulk = length & ~(size_t)15;
        // zlib's CRC inverts the register before and after; the fold works on the raw register.
        crc = ~fold_pclmul(~crc, p, bulk);
        p += bulk;
        length -= bulk;
    }
#endif
    // Without carry-less multiplication, long inputs take zlib's braided loop, faster than eight
    // table lookups a word; short ones and the rest take the sliced loop.
    while (length >= 4096) {
        uInt chunk = length > 0x40000000 ? 0x40000000 : (uInt)length;
        crc = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        length -= chunk;
    }
    return ~sliced(~crc, p, length);
}
